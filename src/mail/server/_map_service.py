"""The MAP methods, whatever transport carries them: ``map/connect``, ``map/authenticate``,
``map/disconnect``, ``map/subscribe``, ``map/unsubscribe``, ``map/replay``, ``map/send``
and MAP Mail's ``mail/*``; and :func:`subscription_events`, how a reader (a socket's
push, a ``GET /map/events`` stream) follows a subscription.

A :class:`MapSession` is who calls and since when: a WebSocket's (one per socket) or one
``POST /map`` request's (a fresh one per request, authenticated by its header).
:class:`MapCalls` answers the methods of one JSON-RPC document of a session and notes what
its transport does once the answer is sent (push a new subscription's events, close).

Until a session is authenticated only ``map/connect``, ``map/authenticate`` and
``map/disconnect`` are answered (anything else: 1000). ``map/connect`` with
``params.auth`` and ``map/authenticate`` take one of our API keys as method ``api-key``
or ``bearer``. A key of role ``admin`` or ``user`` is the participant ``role:id``; a key
of role ``agent`` registers agents (``map/agents/register``, on a WebSocket:
:mod:`mail.server._map_agents`) and acts as the first of them, ``agent:<agent id>``
(before it has one, only ``map/agents/*`` and the handshake are answered: 1003).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Literal

from mail.conversations import (
    METHODS,
    Actor,
    AuthCredentials,
    EventsNotRetainedError,
    MailEvent,
    MapAuthenticate,
    MapConnect,
    MapDisconnect,
    MapReplay,
    MapSubscribe,
    MapUnsubscribe,
    Reader,
    Replay,
    Subscription,
    check_params,
)
from mail.conversations.events import ALL_CALLERS
from mail.db.store import CallerKey
from mail.errors import AuthenticationError
from mail.server._map_agents import AGENT_METHODS, agents_call
from mail.server._map_registry import Notify
from mail.server._map_rpc import (
    AUTH_FAILED,
    AUTH_METHOD_NOT_SUPPORTED,
    AUTH_PERMISSION_DENIED,
    AUTH_REQUIRED,
    EVENTS_NOT_RETAINED,
    METHOD_NOT_FOUND,
    RpcError,
)
from mail.server._map_send import send
from mail.server._map_start import create_with_task
from mail.server._state import ServerState
from mail.server.auth import Caller, Role
from mail.version import __version__

__all__ = [
    "AUTH_METHODS",
    "MAP_MAIL_VERSION",
    "PROTOCOL_VERSION",
    "ROLES",
    "MapCalls",
    "MapSession",
    "actor_of",
    "authenticate_key",
    "subscription_events",
]

#: ``protocolVersion`` of ``map/connect``: the official SDK's ``PROTOCOL_VERSION``
PROTOCOL_VERSION = 1
#: the version of the MAP Mail document (seed 003) the ``mail/*`` methods implement
MAP_MAIL_VERSION = "0.0.6"
#: the ``auth.method``s that take one of our API keys
AUTH_METHODS = ("api-key", "bearer")
#: the roles admitted to MAP
ROLES: tuple[Role, ...] = ("admin", "user", "agent")

_OPEN = ("map/connect", "map/authenticate", "map/disconnect")  # before authentication
_MAP_METHODS = (
    *_OPEN,
    *AGENT_METHODS,
    "map/subscribe",
    "map/unsubscribe",
    "map/replay",
    "map/send",
)
# map/authenticate's error.code (the SDK's AuthErrorCode) for a refusal's JSON-RPC code
_AUTH_ERROR = {
    AUTH_FAILED: "invalid_credentials",
    AUTH_METHOD_NOT_SUPPORTED: "method_not_supported",
    AUTH_PERMISSION_DENIED: "insufficient_scope",
}


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True, kw_only=True)
class MapSession:
    """Who calls and since when. ``authenticated`` is set once ``caller`` is known."""

    transport: Literal["http", "websocket"]
    id: str = field(default_factory=lambda: f"session-{secrets.token_hex(12)}")
    created_at: int = field(default_factory=_now_ms)
    caller: Caller | None = None
    authenticated: asyncio.Event = field(default_factory=asyncio.Event)
    #: pushes a notification on the session's socket (``None`` over HTTP)
    notify: Notify | None = None

    def admit(self, caller: Caller) -> None:
        """Authenticate the session as ``caller``; raises :class:`RpcError` (1003) when it
        is another caller's already (a session keeps its caller)."""
        known = self.caller
        if known is not None and (known.role, known.id) != (caller.role, caller.id):
            raise RpcError(
                AUTH_PERMISSION_DENIED,
                f"this session is authenticated as {known.role}:{known.id}; "
                "another key needs another connection",
            )
        self.caller = caller
        self.authenticated.set()


def actor_of(state: ServerState, caller: Caller, agent_id: str | None = None) -> Actor:
    """The caller as a MAP Mail participant (its rows are its runtime's): ``role:id``,
    or, for an agent key, its registered agent ``agent:<agent_id>``."""
    role = "swarm" if caller.role == "agent" else caller.role
    key = CallerKey(swarm=state.template.name, role=role, id=caller.id)
    principal = f"{caller.role}:{caller.id}"
    if agent_id is None:
        return Actor(key=key, participant_id=principal, admin=caller.role == "admin")
    return Actor(key=key, participant_id=f"agent:{agent_id}", principal=principal)


async def authenticate_key(state: ServerState, credentials: AuthCredentials) -> Caller:
    """The caller owning the API key of ``credentials``. Raises :class:`RpcError`: 1005
    for a method other than :data:`AUTH_METHODS`, 1001 for no or an unknown key, 1003 for
    a role other than :data:`ROLES`; :class:`~mail.errors.AuthServiceError` as the
    authenticator does."""
    if credentials.method not in AUTH_METHODS:
        raise RpcError(
            AUTH_METHOD_NOT_SUPPORTED,
            f"auth method {credentials.method!r} is not supported: use 'api-key' or "
            "'bearer' with an API key of this server",
        )
    if not credentials.credential:
        raise RpcError(AUTH_FAILED, "no API key: auth.credential is empty")
    try:
        caller = await state.authenticator.authenticate(credentials.credential)
    except AuthenticationError as e:
        raise RpcError(AUTH_FAILED, str(e)) from None
    if caller.role not in ROLES:
        raise RpcError(
            AUTH_PERMISSION_DENIED,
            f"keys of role {caller.role!r} cannot use MAP here yet: it needs an admin or user key",
        )
    return caller


class MapCalls:
    """Answers the methods of one JSON-RPC document of ``session`` (``await calls(method,
    params)``, a :data:`~mail.server._map_rpc.Call`); afterwards ``subscribed`` holds the
    subscriptions it made and ``disconnect`` says whether ``map/disconnect`` was called."""

    def __init__(self, state: ServerState, session: MapSession) -> None:
        self.state = state
        self.session = session
        self.subscribed: list[Subscription] = []
        self.disconnect = False

    async def __call__(self, method: str, params: Any) -> Any:
        if method not in _MAP_METHODS and method not in METHODS:
            raise RpcError(METHOD_NOT_FOUND, f"method {method!r} not found")
        if method == "map/connect":
            return await self._connect(params)
        if method == "map/authenticate":
            return await self._authenticate(params)
        if method == "map/disconnect":
            check_params(MapDisconnect, params)
            self.disconnect = True
            session = self.session
            return {
                "session": {
                    "id": session.id,
                    "createdAt": session.created_at,
                    "closedAt": _now_ms(),
                }
            }
        caller = self.session.caller
        if caller is None:
            raise RpcError(
                AUTH_REQUIRED,
                f"authentication required: call map/connect with params.auth or "
                f"map/authenticate first ({{method: 'api-key' or 'bearer', credential}}), "
                f"not {method}",
            )
        return await self._call(caller, method, params)

    def _actor(self, caller: Caller, method: str) -> Actor:
        """Who acts in ``method``: the caller, or an agent key's first registered agent."""
        if caller.role != "agent":
            return actor_of(self.state, caller)
        agents = self.state.map_agents.of_session(self.session.id)
        if not agents:
            raise RpcError(
                AUTH_PERMISSION_DENIED,
                f"an agent key acts as a registered agent: call map/agents/register on this "
                f"connection before {method}",
            )
        return actor_of(self.state, caller, agents[0])

    async def _call(self, caller: Caller, method: str, params: Any) -> Any:
        state = self.state
        if method in AGENT_METHODS:
            who = (actor_of(state, caller).participant_id, self.session.id, caller.role == "admin")
            return await agents_call(
                state.map_agents, state.template, who, method, params, self.session.notify
            )
        actor = self._actor(caller, method)
        if method == "map/send":
            return await send(state, caller, actor, params)
        if method == "map/subscribe":
            return await self._subscribe(actor, params)
        if method == "map/unsubscribe":
            sid = check_params(MapUnsubscribe, params).subscriptionId
            return {"unsubscribed": await state.map_events.forget(actor.key, sid)}
        if method == "map/replay":
            return await _replay(state, actor, params)
        service = state.conversations
        if service is None:
            raise RpcError(10010, "MAP Mail is not enabled on this server")
        if method == "mail/create" and isinstance(params, dict) and params.get("startTask"):
            if caller.role == "agent":  # as POST /message refuses it
                raise RpcError(
                    AUTH_PERMISSION_DENIED,
                    "an agent key does not start tasks of the swarm (startTask): a user or "
                    "admin key does",
                )
            return await create_with_task(state, caller, actor, params)
        return await service.call(method, actor, params)  # which checks the params

    async def _connect(self, params: Any) -> dict[str, Any]:
        checked = check_params(MapConnect, params)
        if checked.auth is not None:
            self.session.admit(await authenticate_key(self.state, checked.auth))
        caller, session = self.session.caller, self.session
        answer: dict[str, Any] = {
            "protocolVersion": PROTOCOL_VERSION,
            "sessionId": session.id,
            "systemInfo": {"name": "mail", "version": __version__},
            "reconnected": False,
            "server": {
                "name": "mail",
                "version": __version__,
                "swarm": self.state.template.name,
                "mapMail": MAP_MAIL_VERSION,
            },
        }
        if caller is None:  # the SDK's flow: map/authenticate next
            required = {"methods": list(AUTH_METHODS), "required": True}
            return {**answer, "capabilities": {}, "authRequired": required}
        participant = actor_of(self.state, caller).participant_id
        return {
            **answer,
            "participantId": participant,
            "capabilities": self._capabilities(),
            "principal": {"id": participant, "claims": {"role": caller.role}},
            "ownedAgents": [],
            "reclaimedAgents": [],
        }

    def _capabilities(self) -> dict[str, Any]:
        """The SDK's ``ParticipantCapabilities``: the roles a caller plays here, the
        optional features, and ``mail`` when MAP Mail is on."""
        answer: dict[str, Any] = {"roles": ["client"], "features": []}
        service = self.state.conversations
        if service is None or not service.enabled:
            return answer
        mail = ("canCreate", "canJoin", "canInvite", "canViewHistory", "canCreateThreads")
        return answer | {"mail": {"enabled": True} | dict.fromkeys(mail, True)}

    async def _authenticate(self, params: Any) -> dict[str, Any]:
        """``map/authenticate``: the SDK's ``AuthenticateResponseResult`` (a refused key is
        ``success: false`` with ``error{code, message}``, not a JSON-RPC error)."""
        credentials = check_params(MapAuthenticate, params)
        try:
            caller = await authenticate_key(self.state, credentials)
            self.session.admit(caller)
        except RpcError as e:
            return {"success": False, "error": {"code": _AUTH_ERROR[e.code], "message": e.message}}
        participant = actor_of(self.state, caller).participant_id
        return {
            "success": True,
            "sessionId": self.session.id,
            "participantId": participant,
            "principal": {"id": participant, "claims": {"role": caller.role}},
        }

    async def _subscribe(self, actor: Actor, params: Any) -> dict[str, Any]:
        checked = check_params(MapSubscribe, params)
        filter_ = _filter_of(actor, checked.filter, "subscribe")
        service = self.state.conversations
        hosts = await service.hosts_of(actor) if service is not None else set()
        sub = self.state.map_events.subscribe(actor.key, filter_, _reader(actor), hosts)
        await self.state.map_events.register(sub)
        self.subscribed.append(sub)
        if self.session.transport == "websocket":  # its events come on the socket
            return {"subscriptionId": sub.id}
        return {"subscriptionId": sub.id, "events": f"/map/events?subscription={sub.id}"}


def _reader(actor: Actor) -> Reader:
    """Who reads events: the caller, as its participant (the conversations shared with
    it: see :mod:`mail.conversations.events`)."""
    return Reader(key=actor.key, participant_id=actor.participant_id, principal=actor.holder)


def _filter_of(actor: Actor, checked: Any, doing: str) -> dict[str, Any]:
    """The bus's filter of a checked ``filter`` param (admins only: ``x-allCallers``)."""
    filter_: dict[str, Any] = checked.wire() if checked is not None else {}
    if filter_.get(ALL_CALLERS) and not actor.admin:
        raise RpcError(10003, f"only an admin may {doing} with filter.{ALL_CALLERS}")
    return filter_


async def _replay(state: ServerState, actor: Actor, params: Any) -> dict[str, Any]:
    """``map/replay``: ``{events: [{eventId, timestamp, event}], hasMore}`` (the SDK's
    ``ReplayResponseResult``); :data:`EVENTS_NOT_RETAINED` when events after the asked
    position are no longer kept."""
    checked = check_params(MapReplay, params)
    after = checked.afterEventId
    replay = Replay(
        reader=_reader(actor),
        filter=_filter_of(actor, checked.filter, "replay"),
        after=int(after) if after is not None else None,
        since=checked.fromTimestamp,
        until=checked.toTimestamp,
        limit=checked.limit or 100,
    )
    try:
        events, more = await state.map_events.replay(replay)
    except EventsNotRetainedError as e:
        oldest = str(e.oldest) if e.oldest is not None else None
        data = {"name": "EVENTS_NOT_RETAINED", "oldestEventId": oldest}
        raise RpcError(EVENTS_NOT_RETAINED, str(e), data) from None
    return {"events": [event.replayed() for event in events], "hasMore": more}


async def subscription_events(
    state: ServerState, sub: Subscription, ping_interval: float | None = None, after: int = 0
) -> AsyncGenerator[tuple[int, MailEvent] | None, None]:
    """The events of ``sub`` whose id is past ``after`` (a ``Last-Event-ID``; 0: from its
    oldest retained event), each with its sequence number, then the ones that come (fed
    while this runs), ``None`` after each ``ping_interval`` seconds of silence (never
    without one); ends when ``sub`` is unsubscribed or the server stops. Each call
    follows the subscription's log with its own cursor: every reader gets every event."""
    async with state.map_events.feeding(sub):
        stop = asyncio.ensure_future(sub.closed.wait())
        closing = asyncio.ensure_future(state.closing.wait())
        cursor = 0
        waiter: asyncio.Future[Any] | None = None
        try:
            while True:
                arrival = sub.arrival  # before reading: the next event appended sets it
                batch = sub.since(cursor, after)
                if batch:
                    for seq, event in batch:
                        cursor = seq
                        yield seq, event
                    continue  # more may have come meanwhile
                cursor = max(cursor, sub.last)  # (events up to ``after`` skipped)
                waiter = asyncio.ensure_future(arrival.wait())
                done, _ = await asyncio.wait(
                    {waiter, stop, closing},
                    timeout=ping_interval,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                waiter.cancel()
                if waiter in done:
                    continue
                if done:
                    return
                yield None
        finally:
            for future in (stop, closing, waiter):
                if future is not None:
                    future.cancel()
