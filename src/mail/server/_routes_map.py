"""MAP's routes: ``POST /map`` (JSON-RPC 2.0, batches too), the ``/map`` WebSocket (the
same methods, one JSON-RPC document per frame, ``map/event`` notifications pushed on it:
:mod:`mail.server._map_socket`) and ``GET /map/events`` (a subscription's ``map/event``
notifications as server-sent events). Both transports answer through
:class:`~mail.server._map_service.MapCalls`.

JSON-RPC errors are answered with HTTP 200 and ``{"jsonrpc", "id", "error": {code,
message, data}}``; what fails before a request is read (401, 413) keeps the server's
``{"detail"}``. The caller is the participant: its id is ``role:id``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import APIRouter, Header, HTTPException, Request, WebSocket
from fastapi.responses import JSONResponse, Response
from sse_starlette import EventSourceResponse, ServerSentEvent

from mail._sse import CRLF, SSE_HEADERS, compact_json
from mail.conversations import EventsNotRetainedError, Subscription
from mail.errors import InvalidMessageError
from mail.server._deps import AdminOrUser, AppState, state_of
from mail.server._map_rpc import RpcError, answer_document, error, read
from mail.server._map_service import MapCalls, MapSession, actor_of, subscription_events
from mail.server._map_socket import serve_socket
from mail.server._state import ServerState
from mail.server.models import ERROR_RESPONSES, EVENT_STREAM, JsonRpcRequest, JsonRpcResponse

__all__ = ["router"]

router = APIRouter(responses=ERROR_RESPONSES)

_REQUEST_SCHEMA = JsonRpcRequest.model_json_schema()


@router.post(
    "/map",
    response_model=JsonRpcResponse | list[JsonRpcResponse],
    summary="MAP JSON-RPC 2.0: map/connect, map/subscribe, map/unsubscribe, mail/* (batches too)",
    openapi_extra={
        "requestBody": {
            "required": True,
            # one request documented; a batch is a JSON list of them
            "description": "A JSON-RPC 2.0 request, or a batch: a list of them",
            "content": {"application/json": {"schema": _REQUEST_SCHEMA}},
        }
    },
)
async def post_map(state: AppState, caller: AdminOrUser, request: Request) -> Response:
    session = MapSession(transport="http")  # one per request: HTTP keeps no connection
    session.admit(caller)
    try:
        document = read(await request.body())
    except RpcError as e:
        return JSONResponse(error(None, e.code, e.message))
    answer = await answer_document(document, MapCalls(state, session))
    return JSONResponse(answer) if answer is not None else Response(status_code=204)


@router.websocket("/map")
async def map_socket(websocket: WebSocket) -> None:
    await serve_socket(state_of(websocket), websocket)


async def _notifications(
    state: ServerState, sub: Subscription, after: int
) -> AsyncIterator[ServerSentEvent]:
    events = subscription_events(state, sub, state.ping_interval, after)
    async with contextlib.aclosing(events):
        async for item in events:
            if item is None:
                yield ServerSentEvent(compact_json({}), event="ping", sep=CRLF)
                continue
            seq, event = item
            note = {"jsonrpc": "2.0", "method": "map/event", "params": event.wire(sub.id, seq)}
            yield ServerSentEvent(compact_json(note), event="map/event", id=str(event.id), sep=CRLF)


def _last_event_id(value: str | None) -> int:
    if not value:
        return 0
    if not (value.isascii() and value.isdigit()):
        raise InvalidMessageError(f"Last-Event-ID must be an event id (digits), got {value!r}")
    return int(value)


@router.get(
    "/map/events",
    summary="The map/event notifications of a map/subscribe subscription (server-sent events)",
    responses={
        200: {"description": "map/event notifications", "content": EVENT_STREAM},
        410: {"description": "events after Last-Event-ID are no longer kept"},
    },
    response_class=Response,
)
async def map_events(
    state: AppState,
    caller: AdminOrUser,
    subscription: str,
    last_event_id: str | None = Header(None),
) -> Response:
    after = _last_event_id(last_event_id)
    sub = await state.map_events.find(actor_of(state, caller).key, subscription)
    if sub is None:
        raise HTTPException(status_code=404, detail=f"no subscription {subscription!r}")
    try:
        sub.check_after(after)
    except EventsNotRetainedError as e:
        raise HTTPException(status_code=410, detail=str(e)) from None
    return EventSourceResponse(
        _notifications(state, sub, after), headers=SSE_HEADERS, ping=0, sep=CRLF
    )
