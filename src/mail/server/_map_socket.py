"""The ``/map`` WebSocket: MAP's JSON-RPC 2.0 on one socket per session, the transport of
the official SDK (``ClientConnection.connect("ws://HOST:PORT/map", ...)``).

Each frame (text, or UTF-8 bytes) is one JSON-RPC document: a request, a notification or
a batch, answered with one text frame through the methods ``POST /map`` answers
(:class:`~mail.server._map_service.MapCalls`). Requests run concurrently, so a long
``map/send`` does not hold up a ``mail/turn``; answers carry their ids. A
``map/subscribe`` made on the socket pushes its events on it as ``map/event``
notifications (the params ``GET /map/events`` sends), from right after its answer;
``map/unsubscribe`` stops them, and closing the socket ends its subscriptions. One writer
task sends every frame, in order.

Authentication: the upgrade request's ``Authorization: Bearer <key>`` (a bad key is
refused with 401 before the upgrade), else ``map/connect`` with ``params.auth`` or
``map/authenticate`` within ``state.map_auth_deadline`` seconds. The agents a session
registers (:mod:`mail.server._map_agents`) get their ``map/message`` notifications on
its socket, and are unregistered when it closes.

Limits and close codes: a frame over ``[server] max_body_bytes`` closes the socket with
1009; a document whose requests would exceed ``state.map_max_pending`` pending requests
is refused with JSON-RPC 4001 (the others go on); 1008 when not authenticated in time;
1000 after ``map/disconnect`` has been answered; uvicorn closes open sockets with 1012
when the server stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from fastapi import WebSocket
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect, WebSocketState

from mail._sse import compact_json
from mail.conversations import Subscription
from mail.core import Spawner
from mail.errors import MAILError, PermissionDeniedError
from mail.server._auth_types import wrong_role
from mail.server._map_rpc import RATE_LIMITED, RpcError, answer_document, error, read, request_ids
from mail.server._map_service import ROLES, MapCalls, MapSession, actor_of, subscription_events
from mail.server._state import ServerState
from mail.server._statuses import server_status
from mail.server.auth import Caller, bearer_token

__all__ = ["NORMAL", "POLICY_VIOLATION", "TOO_BIG", "serve_socket"]

logger = logging.getLogger("mail.server")

#: WebSocket close codes (RFC 6455): map/disconnect, not authenticated in time, a frame
#: over the limit
NORMAL, POLICY_VIOLATION, TOO_BIG = 1000, 1008, 1009
#: frames waiting for the writer (answers, notifications); more wait for room
OUTBOX_LIMIT = 64


async def serve_socket(state: ServerState, websocket: WebSocket) -> None:
    """Serve one ``/map`` WebSocket until it closes (see the module docstring)."""
    session = MapSession(transport="websocket")
    if "authorization" in websocket.headers:
        try:
            session.admit(await _header_caller(state, websocket))
        except MAILError as e:
            await _deny(websocket, e)
            return
    await websocket.accept()
    logger.debug("MAP session %s opened", session.id)
    await _Connection(state, websocket, session).run()
    logger.debug("MAP session %s closed", session.id)


async def _header_caller(state: ServerState, websocket: WebSocket) -> Caller:
    caller = await state.authenticator.authenticate(
        bearer_token(websocket.headers.get("authorization"))
    )
    if caller.role not in ROLES:
        raise PermissionDeniedError(wrong_role(ROLES))
    return caller


async def _deny(websocket: WebSocket, e: MAILError) -> None:
    """Refuse the upgrade as ``POST /map`` refuses a request: its status and
    ``{"detail"}`` (a close, 403, where the server cannot answer with a response)."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        response = JSONResponse({"detail": str(e)}, status_code=server_status(e))
        await websocket.send_denial_response(response)
    else:
        await websocket.close(POLICY_VIOLATION, str(e)[:120])


@dataclass(frozen=True, slots=True)
class _Close:
    code: int
    reason: str


class _Connection:
    """An accepted socket: its reader, its writer, the requests and pushes under way."""

    def __init__(self, state: ServerState, websocket: WebSocket, session: MapSession) -> None:
        self.state, self.websocket, self.session = state, websocket, session
        self.name = f"map-socket:{session.id}"
        self.outbox: asyncio.Queue[str | _Close] = asyncio.Queue(OUTBOX_LIMIT)
        self.tasks = Spawner(logger)
        self.pending = 0  # requests being answered
        self.subscriptions: dict[str, Subscription] = {}  # made here: ended with the socket
        self.closed = asyncio.Event()  # a close frame went out, or the peer is gone
        self.closing = False  # _close_now under way
        self.writer: asyncio.Task[None] | None = None
        session.notify = self._notify  # map/message to the agents it registers

    async def run(self) -> None:
        self.writer = self.tasks.spawn(self._write(), f"{self.name}:writer")
        reader = self.tasks.spawn(self._read(), f"{self.name}:reader")
        if self.session.caller is None:
            self.tasks.spawn(self._deadline(), f"{self.name}:deadline")
        closed = asyncio.ensure_future(self.closed.wait())
        try:
            await asyncio.wait({reader, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
            self.closed.set()  # (notifications still coming are dropped)
            await self.tasks.cancel_all()
            await asyncio.shield(self._forget())

    async def _read(self) -> None:
        limit = self.state.config.server.max_body_bytes
        while True:
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            raw: str | bytes = message.get("text") or message.get("bytes") or b""
            size = len(raw.encode()) if isinstance(raw, str) else len(raw)
            if size > limit:
                await self._close_now(TOO_BIG, f"a frame of {size} bytes; the limit is {limit}")
                return
            await self._take(raw)

    async def _take(self, raw: str | bytes) -> None:
        """Start answering one frame's document, or refuse it."""
        try:
            document = read(raw)
        except RpcError as e:
            await self._send(error(None, e.code, e.message))
            return
        count = len(document) if isinstance(document, list) else 1
        limit = self.state.map_max_pending
        if self.pending + count > limit:
            message = (
                f"too many requests pending on this connection (at most {limit}): wait for answers"
            )
            data = {"limit": limit, "retryable": True}
            refused = [error(i, RATE_LIMITED, message, data) for i in request_ids(document)]
            if refused:
                await self._send(refused if isinstance(document, list) else refused[0])
            return
        self.pending += count
        self.tasks.spawn(self._answer(document, count), f"{self.name}:request")

    async def _answer(self, document: Any, count: int) -> None:
        calls = MapCalls(self.state, self.session)
        try:
            answer = await answer_document(document, calls)
        finally:
            self.pending -= count
            self.subscriptions.update((sub.id, sub) for sub in calls.subscribed)
        if answer is not None:
            await self._send(answer)
        for sub in calls.subscribed:  # after their answer: its id is known to the client
            self.tasks.spawn(self._push(sub), f"{self.name}:{sub.id}")
        if calls.disconnect:
            await self.outbox.put(_Close(NORMAL, "map/disconnect"))

    async def _push(self, sub: Subscription) -> None:
        async with contextlib.aclosing(subscription_events(self.state, sub)) as events:
            async for item in events:
                if item is not None:
                    params = item[1].wire(sub.id, item[0])
                    await self._send({"jsonrpc": "2.0", "method": "map/event", "params": params})

    async def _send(self, message: Any) -> None:
        await self.outbox.put(compact_json(message))

    async def _notify(self, message: dict[str, Any]) -> None:
        """Push a notification from another session (``map/send`` to an agent of this
        one), unless this socket is closing: then it is lost, as its agents are."""
        put = asyncio.ensure_future(self._send(message))
        closed = asyncio.ensure_future(self.closed.wait())
        try:
            await asyncio.wait({put, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            put.cancel()
            closed.cancel()

    async def _write(self) -> None:
        try:
            while True:
                item = await self.outbox.get()
                if isinstance(item, _Close):
                    await self.websocket.close(item.code, item.reason)
                    break
                await self.websocket.send_text(item)
        except WebSocketDisconnect:
            pass  # the peer is gone: the reader sees it too
        self.closed.set()

    async def _deadline(self) -> None:
        seconds = self.state.map_auth_deadline
        try:
            await asyncio.wait_for(self.session.authenticated.wait(), seconds)
        except TimeoutError:
            reason = (
                f"not authenticated within {seconds:g} s (map/connect auth or map/authenticate)"
            )
            await self._close_now(POLICY_VIOLATION, reason)

    async def _close_now(self, code: int, reason: str) -> None:
        """Close at once, ahead of the frames still queued (the writer stops first)."""
        if self.closing:
            return
        self.closing = True
        writer = self.writer
        if writer is not None and not writer.done():
            writer.cancel()
            await asyncio.wait({writer})
        if self.websocket.application_state == WebSocketState.CONNECTED:
            with contextlib.suppress(WebSocketDisconnect):
                await self.websocket.close(code, reason)
        self.closed.set()

    async def _forget(self) -> None:
        caller = self.session.caller
        if caller is None:
            return
        gone = self.state.map_agents.drop_session(self.session.id)
        if gone:
            logger.debug("MAP session %s: agents %s unregistered", self.session.id, gone)
        key = actor_of(self.state, caller).key
        for sid in self.subscriptions:
            try:
                await self.state.map_events.forget(key, sid)
            except Exception:
                logger.exception("MAP session %s: subscription %s not ended", self.session.id, sid)
