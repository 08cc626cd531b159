"""The 13 ``mail/*`` methods over a :class:`~mail.conversations.store.ConversationStore`.

Each method takes the acting participant (:class:`Actor`: the caller's store key and its
participant id) and the request's ``params`` (the seed's camelCase object), checks them,
and returns the result object (shapes in ``docs/map-mail.md``). Failures raise the
:mod:`mail.conversations.errors` family (10000-10010, or
:class:`~mail.conversations._access.InvalidParamsError`, -32602). Every change emits its
``mail.*`` event on the :class:`~mail.conversations.events.EventBus`.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from mail.conversations import _access as access
from mail.conversations._access import InvalidParamsError, opt_int, opt_str, req_str
from mail.conversations._summary import extractive_summary
from mail.conversations.errors import (
    ConversationClosedError,
    ConversationNotFoundError,
    InvalidContentTypeError,
    MailNotEnabledError,
    MailPermissionDeniedError,
    NotAParticipantError,
    ParticipantAlreadyJoinedError,
    ParticipantNotFoundError,
    ThreadNestingLimitError,
    ThreadNotFoundError,
    TurnNotFoundError,
)
from mail.conversations.events import EventBus
from mail.conversations.models import (
    CLOSED_STATUSES,
    CONVERSATION_TYPES,
    ROLES,
    Conversation,
    Participant,
    Summary,
    Thread,
    Turn,
    default_permissions,
    is_valid_content_type,
    now_ms,
)
from mail.conversations.store import ConversationStore, Record, RecordKind
from mail.db.store import CallerKey

__all__ = ["METHODS", "Actor", "ConversationService"]

#: the ``mail/*`` methods, by JSON-RPC name: the :class:`ConversationService` method
METHODS: dict[str, str] = {
    "mail/create": "create",
    "mail/get": "get",
    "mail/list": "list_conversations",
    "mail/close": "close",
    "mail/join": "join",
    "mail/leave": "leave",
    "mail/invite": "invite",
    "mail/turn": "turn",
    "mail/turns/list": "turns_list",
    "mail/thread/create": "thread_create",
    "mail/thread/list": "thread_list",
    "mail/summary": "summary",
    "mail/replay": "replay",
}
_DEFAULT_LIMIT = 50
_MAX_LIMIT = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class Actor:
    """Who acts: the caller's rows (``key``) and its participant id."""

    key: CallerKey
    participant_id: str


def _new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(8)}"


class ConversationService:
    """MAP Mail over a conversation store.

    ``enabled=False`` makes every method raise :class:`MailNotEnabledError` (10010);
    ``max_thread_depth`` bounds thread nesting (10009 beyond it).
    """

    def __init__(
        self,
        store: ConversationStore,
        *,
        bus: EventBus | None = None,
        enabled: bool = True,
        max_thread_depth: int = 8,
    ) -> None:
        self.store = store
        self.bus = bus or EventBus()
        self.enabled = enabled
        self.max_thread_depth = max_thread_depth
        self._locks: dict[tuple[CallerKey, str], asyncio.Lock] = {}

    async def call(self, method: str, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """Run the ``mail/*`` ``method``; raises ``KeyError`` for an unknown one."""
        handler: Callable[[Actor, dict[str, Any]], Awaitable[dict[str, Any]]] = getattr(
            self, METHODS[method]
        )
        if not self.enabled:
            raise MailNotEnabledError("MAP Mail is not enabled on this server")
        return await handler(actor, params)

    # --- loading and checks ---------------------------------------------------------------

    def _emit(self, actor: Actor, event_type: str, data: dict[str, Any]) -> None:
        self.bus.publish(actor.key, event_type, data, now_ms())

    async def _conversation(self, actor: Actor, params: dict[str, Any]) -> Record:
        cid = req_str(params, "conversationId")
        record = await self.store.get(actor.key, cid, "conversation", cid)
        if record is None:
            raise ConversationNotFoundError(f"no conversation {cid!r}", conversationId=cid)
        return record

    @staticmethod
    def _open(conv: Record) -> None:
        if conv.data["status"] in CLOSED_STATUSES:
            raise ConversationClosedError(
                f"conversation {conv.conversation_id!r} is {conv.data['status']}",
                conversationId=conv.conversation_id,
            )

    async def _member(self, actor: Actor, conv: Record, pid: str | None = None) -> Record:
        pid = pid or actor.participant_id
        record = await self.store.get(actor.key, conv.conversation_id, "participant", pid)
        if record is None or record.data["leftAt"] is not None:
            raise NotAParticipantError(
                f"{pid!r} is not a participant of {conv.conversation_id!r}",
                conversationId=conv.conversation_id,
                participantId=pid,
            )
        return record

    @staticmethod
    def _allowed(member: Record, permission: str) -> None:
        if not member.data["permissions"].get(permission):
            raise MailPermissionDeniedError(
                f"participant {member.record_id!r} lacks {permission}", permission=permission
            )

    async def _lookup(self, actor: Actor, conv: Record, kind: RecordKind, rid: str) -> Record:
        record = await self.store.get(actor.key, conv.conversation_id, kind, rid)
        if record is not None:
            return record
        if kind == "turn":
            raise TurnNotFoundError(f"no turn {rid!r}", turnId=rid)
        raise ThreadNotFoundError(f"no thread {rid!r}", threadId=rid)

    async def _put(
        self, actor: Actor, conv: Record, kind: RecordKind, rid: str, data: Any, seq: int
    ) -> Record:
        record = Record(
            conversation_id=conv.conversation_id,
            kind=kind,
            record_id=rid,
            seq=seq,
            task_id=conv.task_id,
            data=dict(data),
        )
        await self.store.put(actor.key, record)
        return record

    async def _touch(self, actor: Actor, conv: Record) -> None:
        conv.data["updatedAt"] = now_ms()
        await self.store.put(actor.key, conv)

    def _lock(self, actor: Actor, conv: Record) -> asyncio.Lock:
        return self._locks.setdefault((actor.key, conv.conversation_id), asyncio.Lock())

    async def _next_seq(self, actor: Actor, conv: Record, kind: RecordKind) -> int:
        return await self.store.max_seq(actor.key, conv.conversation_id, kind) + 1

    # --- conversations --------------------------------------------------------------------

    async def create(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/create``: a new active conversation; the caller joins as initiator."""
        kind = params.get("type", "mixed")
        if kind not in CONVERSATION_TYPES:
            raise InvalidParamsError(f"type must be one of {CONVERSATION_TYPES}", field="type")
        metadata = params.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise InvalidParamsError("metadata must be an object", field="metadata")
        now = now_ms()
        cid = _new_id("conv")
        data = Conversation(
            id=cid,
            type=kind,
            status="active",
            subject=opt_str(params, "subject"),
            parentConversationId=opt_str(params, "parentConversationId"),
            parentTurnId=opt_str(params, "parentTurnId"),
            taskId=opt_str(params, "taskId"),
            metadata=metadata,
            createdBy=actor.participant_id,
            createdAt=now,
            updatedAt=now,
        )
        await self._check_parents(actor, data)
        initial = params.get("initialTurn")
        if initial is not None:
            self._check_turn_params(initial)
        conv = Record(
            conversation_id=cid,
            kind="conversation",
            record_id=cid,
            seq=now,
            task_id=data["taskId"],
            data=dict(data),
        )
        await self.store.put(actor.key, conv)
        self._emit(
            actor,
            "mail.created",
            {
                "conversationId": cid,
                "type": kind,
                "subject": data["subject"],
                "createdBy": actor.participant_id,
            },
        )
        me = await self._add_participant(actor, conv, actor.participant_id, "initiator", None)
        for other in params.get("initialParticipants") or []:
            if isinstance(other, dict) and other.get("id") != actor.participant_id:
                await self._add_participant(
                    actor,
                    conv,
                    str(other.get("id")),
                    other.get("role", "worker"),
                    other.get("permissions"),
                )
        result: dict[str, Any] = {"conversation": conv.data, "participant": me}
        if initial is not None:
            result["initialTurn"] = await self.record_turn(actor, conv, initial)
        return result

    async def _check_parents(self, actor: Actor, data: Conversation) -> None:
        parent = data["parentConversationId"]
        if parent is None:
            return
        found = await self.store.get(actor.key, parent, "conversation", parent)
        if found is None:
            raise ConversationNotFoundError(f"no conversation {parent!r}", conversationId=parent)
        turn = data["parentTurnId"]
        if turn is not None:
            await self._lookup(actor, found, "turn", turn)

    async def _add_participant(
        self, actor: Actor, conv: Record, pid: str, role: Any, permissions: Any
    ) -> Participant:
        if role not in ROLES:
            raise InvalidParamsError(f"role must be one of {ROLES}", field="role")
        if permissions is not None and not isinstance(permissions, dict):
            raise InvalidParamsError("permissions must be an object", field="permissions")
        participant = Participant(
            id=pid,
            role=role,
            permissions=default_permissions(role, permissions),
            joinedAt=now_ms(),
            leftAt=None,
        )
        stored = {
            **participant,
            "joinedAfterTurn": await self.store.max_seq(actor.key, conv.conversation_id, "turn"),
        }
        seq = await self._next_seq(actor, conv, "participant")
        await self._put(actor, conv, "participant", pid, stored, seq)
        self._emit(
            actor,
            "mail.participant.joined",
            {"conversationId": conv.conversation_id, "participant": participant},
        )
        return participant

    async def get(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/get``: the conversation, with the ``include``d parts."""
        conv = await self._conversation(actor, params)
        member = await self._member(actor, conv)
        include = params.get("include") or {}
        result: dict[str, Any] = {"conversation": conv.data}
        if include.get("participants"):
            result["participants"] = await self._participants(actor, conv)
        if include.get("threads"):
            threads = await self.store.list_records(actor.key, "thread", conv.conversation_id)
            result["threads"] = [t.data for t in threads]
        turns = await self._visible_turns(actor, conv, member)
        recent = opt_int(include, "recentTurns")
        if recent:
            result["recentTurns"] = [t.data for t in turns[-recent:]]
        if include.get("stats"):
            result["stats"] = {
                "turnCount": len(turns),
                "participantCount": len(await self._participants(actor, conv)),
                "lastTurnAt": turns[-1].data["timestamp"] if turns else None,
            }
        return result

    async def _participants(self, actor: Actor, conv: Record) -> list[Participant]:
        rows = await self.store.list_records(actor.key, "participant", conv.conversation_id)
        return [_participant(r) for r in rows if r.data["leftAt"] is None]

    async def list_conversations(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/list``: the caller's conversations, oldest first, ``limit`` per page."""
        filter_ = params.get("filter") or {}
        limit = min(opt_int(params, "limit", minimum=1) or _DEFAULT_LIMIT, _MAX_LIMIT)
        after = access.decode_cursor(params.get("cursor"))
        rows = await self.store.list_records(actor.key, "conversation")
        if after is not None:
            rows = [r for r in rows if [r.seq, r.record_id] > after]
        picked: list[Record] = []
        for row in rows:
            if len(picked) > limit:
                break
            if await self._listed(actor, row, filter_):
                picked.append(row)
        page, more = picked[:limit], len(picked) > limit
        cursor = access.encode_cursor([page[-1].seq, page[-1].record_id]) if more else None
        return {"conversations": [r.data for r in page], "nextCursor": cursor}

    async def _listed(self, actor: Actor, row: Record, filter_: dict[str, Any]) -> bool:
        if filter_.get("type") and row.data["type"] not in filter_["type"]:
            return False
        if filter_.get("status") and row.data["status"] not in filter_["status"]:
            return False
        pid = filter_.get("participantId")
        if pid is None:
            return True
        member = await self.store.get(actor.key, row.conversation_id, "participant", str(pid))
        return member is not None and member.data["leftAt"] is None

    async def close(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/close``: status ``completed``; only the initiator or a moderator."""
        conv = await self._conversation(actor, params)
        self._open(conv)
        member = await self._member(actor, conv)
        if member.data["role"] not in ("initiator", "moderator"):
            raise MailPermissionDeniedError(
                "only the initiator or a moderator may close", permission="close"
            )
        reason = opt_str(params, "reason")
        conv.data.update(status="completed", closedBy=actor.participant_id)
        if reason is not None:
            conv.data["closeReason"] = reason
        await self._touch(actor, conv)
        self._emit(
            actor,
            "mail.closed",
            {
                "conversationId": conv.conversation_id,
                "closedBy": actor.participant_id,
                "reason": reason,
            },
        )
        return {"conversation": conv.data}

    # --- participants ---------------------------------------------------------------------

    async def join(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/join``: the caller joins (again); ``catchUp`` returns recent history."""
        conv = await self._conversation(actor, params)
        self._open(conv)
        found = await self.store.get(
            actor.key, conv.conversation_id, "participant", actor.participant_id
        )
        if found is not None and found.data["leftAt"] is None:
            raise ParticipantAlreadyJoinedError(
                f"{actor.participant_id!r} already joined", participantId=actor.participant_id
            )
        role = params.get("role", "worker")
        participant = await self._add_participant(actor, conv, actor.participant_id, role, None)
        result: dict[str, Any] = {"conversation": conv.data, "participant": participant}
        catch_up = params.get("catchUp")
        if isinstance(catch_up, dict):
            member = await self._member(actor, conv)
            turns = [t.data for t in await self._visible_turns(actor, conv, member)]
            since = opt_int(catch_up, "from")
            if since is not None:
                turns = [t for t in turns if t["timestamp"] >= since]
            limit = opt_int(catch_up, "limit", minimum=1) or _DEFAULT_LIMIT
            result["history"] = turns[-limit:]
            if catch_up.get("includeSummary"):
                result["summary"] = (await self.summary(actor, params))["summary"]
        return result

    async def leave(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/leave``: the caller leaves (or removes ``participantId``: ``canRemove``)."""
        conv = await self._conversation(actor, params)
        member = await self._member(actor, conv)
        pid = opt_str(params, "participantId") or actor.participant_id
        if pid != actor.participant_id:
            self._allowed(member, "canRemove")
            gone = await self.store.get(actor.key, conv.conversation_id, "participant", pid)
            if gone is None or gone.data["leftAt"] is not None:
                raise ParticipantNotFoundError(f"no participant {pid!r}", participantId=pid)
            member = gone
        reason = opt_str(params, "reason")
        member.data["leftAt"] = now_ms()
        await self.store.put(actor.key, member)
        self._emit(
            actor,
            "mail.participant.left",
            {"conversationId": conv.conversation_id, "participantId": pid, "reason": reason},
        )
        return {
            "conversationId": conv.conversation_id,
            "participantId": pid,
            "leftAt": member.data["leftAt"],
        }

    async def invite(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/invite``: add a participant (``canInvite``)."""
        conv = await self._conversation(actor, params)
        self._open(conv)
        self._allowed(await self._member(actor, conv), "canInvite")
        invited = params.get("participant")
        if not isinstance(invited, dict):
            raise InvalidParamsError("participant must be an object", field="participant")
        pid = req_str(invited, "id")
        found = await self.store.get(actor.key, conv.conversation_id, "participant", pid)
        if found is not None and found.data["leftAt"] is None:
            raise ParticipantAlreadyJoinedError(f"{pid!r} already joined", participantId=pid)
        participant = await self._add_participant(
            actor, conv, pid, invited.get("role", "worker"), invited.get("permissions")
        )
        return {
            "conversationId": conv.conversation_id,
            "participant": participant,
            "message": opt_str(params, "message"),
        }

    # --- turns ----------------------------------------------------------------------------

    @staticmethod
    def _check_turn_params(params: Any) -> None:
        if not isinstance(params, dict):
            raise InvalidParamsError("a turn must be an object")
        content_type = req_str(params, "contentType")
        if not is_valid_content_type(content_type):
            raise InvalidContentTypeError(
                f"content type {content_type!r} is neither well-known nor x-*",
                contentType=content_type,
            )
        if "content" not in params:
            raise InvalidParamsError("content is required", field="content")
        visibility = params.get("visibility") or {"type": "all"}
        if visibility.get("type") not in ("all", "participants", "role", "private"):
            raise InvalidParamsError("visibility.type is unknown", field="visibility")

    async def turn(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/turn``: record an explicit turn (a participant with ``canSend``)."""
        conv = await self._conversation(actor, params)
        self._open(conv)
        self._allowed(await self._member(actor, conv), "canSend")
        self._check_turn_params(params)
        return {"turn": await self.record_turn(actor, conv, params)}

    async def record_turn(
        self,
        actor: Actor,
        conv: Record,
        params: dict[str, Any],
        source: dict[str, Any] | None = None,
    ) -> Turn:
        """Store a turn of ``actor`` (params as ``mail/turn``'s, checked) and emit
        ``mail.turn.added``. Raises 10006/10007 for an unknown ``inReplyTo``/``threadId``."""
        for name, kind in (("inReplyTo", "turn"), ("threadId", "thread")):
            ref = opt_str(params, name)
            if ref is not None:
                await self._lookup(actor, conv, cast(RecordKind, kind), ref)
        async with self._lock(actor, conv):
            seq = await self._next_seq(actor, conv, "turn")
            turn = Turn(
                id=_new_id("turn"),
                conversationId=conv.conversation_id,
                participantId=actor.participant_id,
                timestamp=now_ms(),
                contentType=params["contentType"],
                content=params["content"],
                threadId=params.get("threadId"),
                inReplyTo=params.get("inReplyTo"),
                visibility=cast(Any, params.get("visibility") or {"type": "all"}),
                source=cast(Any, source or {"type": "explicit"}),
                metadata=params.get("metadata") or {},
                status="recorded",
            )
            await self._put(actor, conv, "turn", turn["id"], turn, seq)
        self._emit(actor, "mail.turn.added", {"conversationId": conv.conversation_id, "turn": turn})
        return turn

    async def _visible_turns(self, actor: Actor, conv: Record, member: Record) -> list[Record]:
        self._allowed(member, "canObserve")
        viewer = _participant(member)
        joined = int(member.data.get("joinedAfterTurn", 0))
        rows = await self.store.list_records(actor.key, "turn", conv.conversation_id)
        return [r for r in rows if access.visible(cast(Turn, r.data), r.seq, viewer, joined)]

    async def turns_list(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/turns/list``: the turns the caller sees, filtered, paged by cursor."""
        conv = await self._conversation(actor, params)
        member = await self._member(actor, conv)
        filter_ = params.get("filter") or {}
        thread = opt_str(filter_, "threadId")
        if thread is not None:
            await self._lookup(actor, conv, "thread", thread)
        rows = [
            r
            for r in await self._visible_turns(actor, conv, member)
            if _turn_matches(r.data, filter_)
        ]
        descending = params.get("order", "asc") == "desc"
        if descending:
            rows.reverse()
        after = access.decode_cursor(params.get("cursor"))
        if after is not None:
            rows = [r for r in rows if (r.seq < after[0] if descending else r.seq > after[0])]
        return _page(rows, opt_int(params, "limit", minimum=1), "turns")

    async def replay(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/replay``: the visible turns after ``fromTurnId``, in order."""
        conv = await self._conversation(actor, params)
        member = await self._member(actor, conv)
        start = 0
        from_turn = opt_str(params, "fromTurnId")
        if from_turn is not None:
            start = (await self._lookup(actor, conv, "turn", from_turn)).seq
        thread = opt_str(params, "threadId")
        if thread is not None:
            await self._lookup(actor, conv, "thread", thread)
        filter_ = {"threadId": thread, "contentTypes": params.get("contentTypes")}
        after = access.decode_cursor(params.get("cursor"))
        start = max(start, after[0]) if after else start
        rows = [
            r
            for r in await self._visible_turns(actor, conv, member)
            if r.seq > start and _turn_matches(r.data, filter_)
        ]
        return _page(rows, opt_int(params, "limit", minimum=1), "turns")

    # --- threads and summaries --------------------------------------------------------------

    async def thread_create(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/thread/create``: a thread rooted at a turn (``canCreateThreads``)."""
        conv = await self._conversation(actor, params)
        self._open(conv)
        self._allowed(await self._member(actor, conv), "canCreateThreads")
        root = await self._lookup(actor, conv, "turn", req_str(params, "rootTurnId"))
        depth, parent_id = 1, opt_str(params, "parentThreadId")
        if parent_id is not None:
            depth = (await self._lookup(actor, conv, "thread", parent_id)).data["depth"] + 1
        if depth > self.max_thread_depth:
            raise ThreadNestingLimitError(
                f"threads nest at most {self.max_thread_depth} deep", maxDepth=self.max_thread_depth
            )
        thread = Thread(
            id=_new_id("thread"),
            conversationId=conv.conversation_id,
            rootTurnId=root.record_id,
            parentThreadId=parent_id,
            subject=opt_str(params, "subject"),
            depth=depth,
            createdBy=actor.participant_id,
            createdAt=now_ms(),
        )
        seq = await self._next_seq(actor, conv, "thread")
        await self._put(actor, conv, "thread", thread["id"], thread, seq)
        self._emit(
            actor, "mail.thread.created", {"conversationId": conv.conversation_id, "thread": thread}
        )
        return {"thread": thread}

    async def thread_list(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/thread/list``: the threads (children of ``parentThreadId`` if given)."""
        conv = await self._conversation(actor, params)
        await self._member(actor, conv)
        parent = opt_str(params, "parentThreadId")
        if parent is not None:
            await self._lookup(actor, conv, "thread", parent)
        rows = await self.store.list_records(actor.key, "thread", conv.conversation_id)
        if "parentThreadId" in params:
            rows = [r for r in rows if r.data["parentThreadId"] == parent]
        return {"threads": [r.data for r in rows]}

    async def summary(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/summary``: the cached summary of the conversation (or ``scope.threadId``),
        generated when there is none or ``regenerate`` is set."""
        conv = await self._conversation(actor, params)
        await self._member(actor, conv)
        thread = opt_str(params.get("scope") or {}, "threadId")
        if thread is not None:
            await self._lookup(actor, conv, "thread", thread)
        rid = thread or "*"
        cached = await self.store.get(actor.key, conv.conversation_id, "summary", rid)
        if cached is None or params.get("regenerate"):
            cached = await self._summarize(actor, conv, thread)
        include = params.get("include") or {}
        data = {k: v for k, v in cached.data.items() if include.get(k, True) is not False}
        return {"summary": data}

    async def _summarize(self, actor: Actor, conv: Record, thread: str | None) -> Record:
        rows = await self.store.list_records(actor.key, "turn", conv.conversation_id)
        public = [
            cast(Turn, r.data)
            for r in rows
            if r.data["visibility"]["type"] == "all"
            and not r.data["contentType"].startswith("x-")
            and (thread is None or r.data["threadId"] == thread)
        ]
        summary = cast(
            Summary,
            {
                "conversationId": conv.conversation_id,
                "scope": {"threadId": thread} if thread else {},
                **extractive_summary(public),
                "turnCount": len(public),
                "generatedAt": now_ms(),
                "generator": "extractive",
            },
        )
        record = await self._put(actor, conv, "summary", thread or "*", summary, 0)
        self._emit(
            actor,
            "mail.summary.generated",
            {"conversationId": conv.conversation_id, "summary": summary},
        )
        return record


def _participant(record: Record) -> Participant:
    data = {k: v for k, v in record.data.items() if k != "joinedAfterTurn"}
    return cast(Participant, data)


def _turn_matches(turn: dict[str, Any], filter_: dict[str, Any]) -> bool:
    if filter_.get("threadId") is not None and turn["threadId"] != filter_["threadId"]:
        return False
    types = filter_.get("contentTypes")
    if types and turn["contentType"] not in types:
        return False
    pid = filter_.get("participantId")
    if pid is not None and turn["participantId"] != pid:
        return False
    after = filter_.get("afterTimestamp")
    return after is None or turn["timestamp"] > after


def _page(rows: list[Record], limit: int | None, name: str) -> dict[str, Any]:
    limit = min(limit or _DEFAULT_LIMIT, _MAX_LIMIT)
    page = rows[:limit]
    cursor = access.encode_cursor([page[-1].seq]) if len(rows) > limit else None
    return {name: [r.data for r in page], "nextCursor": cursor}
