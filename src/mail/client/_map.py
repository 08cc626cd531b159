"""MAILClient's MAP Mail methods: ``POST /map`` JSON-RPC calls and ``GET /map/events``."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from mail.errors import MAILClientError

if TYPE_CHECKING:
    from collections.abc import Mapping

    import aiohttp

    from mail.client._stream import EventStream

__all__ = ["MapMailMethods", "MapRpcError"]

_ids = itertools.count(1)


# --- MAP Mail results (the objects inside are described in spec/map-mail.schema.json) ---


class MapConnectResult(TypedDict, total=False):
    """``map/connect`` (the official MAP SDK's ``ConnectResponseResult``, plus ``server``)."""

    protocolVersion: int
    sessionId: str
    participantId: str
    capabilities: dict[str, Any]
    systemInfo: dict[str, Any]
    principal: dict[str, Any]
    reconnected: bool
    ownedAgents: list[str]
    reclaimedAgents: list[Any]
    server: dict[str, Any]


class MapSendResult(TypedDict):
    """``map/send``."""

    taskId: str
    response: str
    status: str


class MailCreateResult(TypedDict, total=False):
    """``mail/create``."""

    conversation: dict[str, Any]
    participant: dict[str, Any]
    initialTurn: dict[str, Any]


class MailConversationResult(TypedDict, total=False):
    """``mail/get``, ``mail/close`` (``conversation`` and the included parts)."""

    conversation: dict[str, Any]
    participants: list[dict[str, Any]]
    threads: list[dict[str, Any]]
    recentTurns: list[dict[str, Any]]
    stats: dict[str, Any]


class MailListResult(TypedDict):
    """``mail/list``."""

    conversations: list[dict[str, Any]]
    hasMore: bool
    nextCursor: str | None


class MailParticipantResult(TypedDict, total=False):
    """``mail/join``, ``mail/leave`` (``success``), ``mail/invite`` (``invited``)."""

    success: bool
    invited: bool
    conversation: dict[str, Any]
    conversationId: str
    participant: dict[str, Any]
    participantId: str
    leftAt: int
    message: str | None
    history: list[dict[str, Any]]
    summary: str


class MailTurnResult(TypedDict):
    """``mail/turn``."""

    turn: dict[str, Any]


class MailTurnsResult(TypedDict):
    """``mail/turns/list``, ``mail/replay`` (with ``missedCount``: every turn after its
    starting point, on every page)."""

    turns: list[dict[str, Any]]
    hasMore: bool
    nextCursor: str | None
    missedCount: NotRequired[int]


class MailThreadResult(TypedDict):
    """``mail/thread/create``."""

    thread: dict[str, Any]


class MailThreadsResult(TypedDict):
    """``mail/thread/list``."""

    threads: list[dict[str, Any]]
    hasMore: bool
    nextCursor: str | None


class MailSummaryResult(TypedDict, total=False):
    """``mail/summary``: ``summary`` (the text), ``generated``, ``cachedAt``, the
    sections, and ``conversationId``, ``scope``, ``turnCount``, ``generatedAt``,
    ``generator``, ``model``, ``fallbackFrom`` (``Summary`` in
    spec/map-mail.schema.json)."""

    conversationId: str
    scope: dict[str, str]
    summary: str
    keyPoints: list[str]
    keyDecisions: list[str]
    openQuestions: list[str]
    generated: bool
    cachedAt: int
    turnCount: int
    generatedAt: int
    generator: str
    model: str
    fallbackFrom: str


class MapRpcError(MAILClientError):
    """``POST /map`` answered a JSON-RPC error: ``code`` (-32700..-32600, or MAP Mail's
    10000-10010), the server's message and ``data`` (``data["name"]``:
    ``CONVERSATION_NOT_FOUND``, ...)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"JSON-RPC error {code}: {message}", status=200)
        self.code = code
        self.rpc_message = message
        self.data = data


class MapMailMethods:
    """The MAP Mail methods of :class:`~mail.client.MAILClient` (mixed into it).

    Each ``mail_*`` method takes the seed's params as keyword arguments, in camelCase
    (``conversationId=...``), and returns the method's result object (see
    ``docs/map-mail.md``). Every method raises :class:`MapRpcError` for a JSON-RPC error
    and :class:`~mail.errors.MAILClientError` for a transport failure.
    """

    if TYPE_CHECKING:

        async def _object(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]: ...

        async def _send(
            self,
            method: str,
            path: str,
            *,
            params: Mapping[str, str] | None = None,
            stream: bool = False,
        ) -> aiohttp.ClientResponse: ...

        def _stream(
            self,
            response: aiohttp.ClientResponse,
            task_id: str | None,
            start: str | None,
            *,
            resume: bool,
            ignore_pings: bool,
        ) -> EventStream: ...

    async def map_call(self, method: str, params: Mapping[str, Any] | None = None) -> object:
        """Call one JSON-RPC ``method`` of ``POST /map`` and return its ``result`` (any JSON
        value: the typed methods below say which)."""
        request = {
            "jsonrpc": "2.0",
            "id": next(_ids),
            "method": method,
            "params": dict(params or {}),
        }
        answer = await self._object("POST", "/map", json=request)
        error = answer.get("error")
        if isinstance(error, dict):
            raise MapRpcError(
                int(error.get("code", 0)), str(error.get("message", "")), error.get("data")
            )
        return answer.get("result")

    async def map_connect(self, **params: Any) -> MapConnectResult:
        """``map/connect``: the server's capabilities (``capabilities.mail``)."""
        return cast("MapConnectResult", await self.map_call("map/connect", params))

    async def map_send(self, **params: Any) -> MapSendResult:
        """``map/send``: ``payload`` (a ``/message`` body), ``to``, ``meta.mail``."""
        return cast("MapSendResult", await self.map_call("map/send", params))

    async def map_subscribe(
        self, filter: Mapping[str, Any] | None = None
    ) -> str:  # the seed's name
        """``map/subscribe``: a subscription id for :meth:`map_events`."""
        result = await self.map_call("map/subscribe", {"filter": dict(filter or {})})
        return str(cast("dict[str, Any]", result)["subscriptionId"])

    async def map_unsubscribe(self, subscription_id: str) -> bool:
        """``map/unsubscribe``: True when the subscription existed."""
        result = await self.map_call("map/unsubscribe", {"subscriptionId": subscription_id})
        return bool(cast("dict[str, Any]", result)["unsubscribed"])

    async def map_events(self, subscription_id: str) -> EventStream:
        """``GET /map/events``: the subscription's ``map/event`` notifications (each
        event's ``data`` is the JSON-RPC notification), until it is unsubscribed."""
        response = await self._send(
            "GET", "/map/events", params={"subscription": subscription_id}, stream=True
        )
        return self._stream(response, None, None, resume=False, ignore_pings=True)

    async def mail_create(self, **params: Any) -> MailCreateResult:
        """``mail/create``: ``{conversation, participant, initialTurn?}``."""
        return cast("MailCreateResult", await self.map_call("mail/create", params))

    async def mail_get(self, **params: Any) -> MailConversationResult:
        """``mail/get``."""
        return cast("MailConversationResult", await self.map_call("mail/get", params))

    async def mail_list(self, **params: Any) -> MailListResult:
        """``mail/list``: ``{conversations, hasMore, nextCursor}``."""
        return cast("MailListResult", await self.map_call("mail/list", params))

    async def mail_close(self, **params: Any) -> MailConversationResult:
        """``mail/close``."""
        return cast("MailConversationResult", await self.map_call("mail/close", params))

    async def mail_join(self, **params: Any) -> MailParticipantResult:
        """``mail/join``."""
        return cast("MailParticipantResult", await self.map_call("mail/join", params))

    async def mail_leave(self, **params: Any) -> MailParticipantResult:
        """``mail/leave``."""
        return cast("MailParticipantResult", await self.map_call("mail/leave", params))

    async def mail_invite(self, **params: Any) -> MailParticipantResult:
        """``mail/invite``."""
        return cast("MailParticipantResult", await self.map_call("mail/invite", params))

    async def mail_turn(self, **params: Any) -> MailTurnResult:
        """``mail/turn``: ``{turn}``."""
        return cast("MailTurnResult", await self.map_call("mail/turn", params))

    async def mail_turns_list(self, **params: Any) -> MailTurnsResult:
        """``mail/turns/list``: ``{turns, hasMore, nextCursor}``."""
        return cast("MailTurnsResult", await self.map_call("mail/turns/list", params))

    async def mail_thread_create(self, **params: Any) -> MailThreadResult:
        """``mail/thread/create``: ``{thread}``."""
        return cast("MailThreadResult", await self.map_call("mail/thread/create", params))

    async def mail_thread_list(self, **params: Any) -> MailThreadsResult:
        """``mail/thread/list``: ``{threads, hasMore, nextCursor}``."""
        return cast("MailThreadsResult", await self.map_call("mail/thread/list", params))

    async def mail_summary(self, **params: Any) -> MailSummaryResult:
        """``mail/summary``: ``{summary, generated, cachedAt, ...}`` (``summary`` is the
        text)."""
        return cast("MailSummaryResult", await self.map_call("mail/summary", params))

    async def mail_replay(self, **params: Any) -> MailTurnsResult:
        """``mail/replay``: ``{turns, hasMore, nextCursor, missedCount}``."""
        return cast("MailTurnsResult", await self.map_call("mail/replay", params))

    async def mail_turn_redact(self, **params: Any) -> MailTurnResult:
        """``x-mail/turn/redact`` (this server's extension): ``{turn}``, its content
        ``null`` and status ``redacted``; params ``conversationId``, ``turnId``, ``reason``."""
        return cast("MailTurnResult", await self.map_call("x-mail/turn/redact", params))
