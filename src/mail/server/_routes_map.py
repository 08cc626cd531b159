"""``POST /map`` (JSON-RPC 2.0: ``map/connect``, ``map/subscribe``, ``map/unsubscribe`` and
the ``mail/*`` methods of MAP Mail) and ``GET /map/events`` (their ``map/event``
notifications as server-sent events).

JSON-RPC errors are answered with HTTP 200 and ``{"jsonrpc", "id", "error": {code,
message, data}}``; what fails before a request is read (401, 413) keeps the server's
``{"detail"}``. The caller is the participant: its id is ``role:id``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from sse_starlette import EventSourceResponse, ServerSentEvent

from mail._limits import JSONRefusedError, loads
from mail._sse import CRLF, SSE_HEADERS, compact_json
from mail._text import text_problem
from mail.conversations import (
    METHODS,
    Actor,
    InvalidParamsError,
    MailProtocolError,
    MapConnect,
    MapSend,
    MapSubscribe,
    MapUnsubscribe,
    Subscription,
    check_params,
    describe,
    problems,
)
from mail.conversations.events import ALL_CALLERS
from mail.core.message import new_task_id
from mail.db.store import CallerKey
from mail.errors import MAILError, StorageError
from mail.server._deps import AdminOrUser, AppState
from mail.server._map_start import create_with_task
from mail.server._routes_message import send_message
from mail.server._state import ServerState
from mail.server._statuses import server_status
from mail.server.auth import Caller
from mail.server.models import (
    ERROR_RESPONSES,
    EVENT_STREAM,
    JsonRpcRequest,
    JsonRpcResponse,
    MessageRequest,
)
from mail.version import __version__

__all__ = ["router"]

logger = logging.getLogger("mail.server")
router = APIRouter(responses=ERROR_RESPONSES)

#: JSON-RPC's "server error" range: a map/send refused as POST /message would refuse it
SERVER_ERROR = -32000
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)


_REQUEST_SCHEMA = JsonRpcRequest.model_json_schema()


class _RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def actor_of(state: ServerState, caller: Caller) -> Actor:
    """The caller as a MAP Mail participant (its rows are its runtime's)."""
    role = "swarm" if caller.role == "agent" else caller.role
    key = CallerKey(swarm=state.template.name, role=role, id=caller.id)
    return Actor(key=key, participant_id=f"{caller.role}:{caller.id}", admin=caller.role == "admin")


def _error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _connect(state: ServerState, actor: Actor) -> dict[str, Any]:
    capabilities: dict[str, Any] = {}
    service = state.conversations
    if service is not None and service.enabled:
        capabilities["mail"] = {
            "enabled": True,
            "canCreate": True,
            "canJoin": True,
            "canInvite": True,
            "canViewHistory": True,
            "canCreateThreads": True,
        }
    return {
        "protocolVersion": "0.0.6",
        "participantId": actor.participant_id,
        "server": {"name": "mail", "version": __version__, "swarm": state.template.name},
        "capabilities": capabilities,
    }


async def _subscribe(state: ServerState, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
    checked = check_params(MapSubscribe, params)
    filter_ = checked.filter.wire() if checked.filter is not None else {}
    if filter_.get(ALL_CALLERS) and not actor.admin:
        raise _RpcError(10003, f"only an admin may subscribe with filter.{ALL_CALLERS}")
    sub = state.map_events.subscribe(actor.key, filter_)
    await state.map_events.register(sub)
    return {"subscriptionId": sub.id, "events": f"/map/events?subscription={sub.id}"}


async def _send(state: ServerState, caller: Caller, actor: Actor, params: dict[str, Any]) -> Any:
    """``map/send``: ``payload`` (a ``POST /message`` body; ``to.agent`` is its
    entrypoint) into the caller's swarm; ``meta.mail`` records the message as a turn."""
    checked = check_params(MapSend, params)
    request = _message(checked)
    task_id = str(request.task_id)
    mail = checked.meta.mail if checked.meta is not None else None
    interceptor = state.interceptor
    bound = interceptor.bound(actor.key, task_id) if interceptor is not None else []
    if interceptor is not None and mail is not None and mail.conversationId not in bound:
        # (bound: the binding records it)
        interceptor.expect(actor.key, task_id, mail.conversationId, params["meta"]["mail"])
    try:
        answer = await send_message(state, caller, request)
    finally:
        if interceptor is not None:
            interceptor.forget(actor.key, task_id)
    if mail is not None and interceptor is not None:
        with contextlib.suppress(TimeoutError):  # the turn is late: the answer is not
            await asyncio.wait_for(interceptor.drain(), timeout=5.0)
    if not isinstance(answer, dict):
        raise _RpcError(INTERNAL, "the server is shutting down")
    return {"taskId": task_id, "response": answer["response"], "status": answer["status"]}


def _message(checked: MapSend) -> MessageRequest:
    """The ``POST /message`` request of a ``map/send`` (its ``payload``, ``to.agent`` as
    the entrypoint unless it names one, a new task id unless it has one)."""
    payload: dict[str, Any] = {**(checked.payload or {}), "stream": False, "show_events": False}
    if checked.to is not None and checked.to.agent is not None:
        payload.setdefault("entrypoint", checked.to.agent)
    payload["task_id"] = payload.get("task_id") or new_task_id()
    try:
        return MessageRequest.model_validate(payload)
    except ValidationError as e:
        found = problems(e)
        field = f"payload.{found[0][0]}".rstrip(".")
        raise InvalidParamsError(describe(found, "params.payload"), field=field) from None


_MAP_METHODS = ("map/connect", "map/subscribe", "map/unsubscribe", "map/send")


async def _dispatch(
    state: ServerState, caller: Caller, actor: Actor, method: str, params: Any
) -> Any:
    if method not in _MAP_METHODS and method not in METHODS:
        raise _RpcError(METHOD_NOT_FOUND, f"method {method!r} not found")
    if method == "map/send":
        return await _send(state, caller, actor, params)
    if method == "map/connect":
        check_params(MapConnect, params)
        return _connect(state, actor)
    if method == "map/subscribe":
        return await _subscribe(state, actor, params)
    if method == "map/unsubscribe":
        sid = check_params(MapUnsubscribe, params).subscriptionId
        return {"unsubscribed": await state.map_events.forget(actor.key, sid)}
    service = state.conversations
    if service is None:
        raise _RpcError(10010, "MAP Mail is not enabled on this server")
    if method == "mail/create" and isinstance(params, dict) and params.get("startTask"):
        return await create_with_task(state, caller, actor, params)
    return await service.call(method, actor, params)  # which checks the params


async def _answer(
    state: ServerState, caller: Caller, actor: Actor, item: Any
) -> dict[str, Any] | None:
    """The response to one request object (``None`` for a notification): a failure of
    one request of a batch is that request's error, never the batch's."""
    if not isinstance(item, dict):
        return _error(None, INVALID_REQUEST, "a request must be an object")
    request_id = item.get("id")
    valid_id = request_id is None or (
        isinstance(request_id, int) and not isinstance(request_id, bool)
    )
    if isinstance(request_id, str):  # answered as sent: it must be storable text too
        valid_id = text_problem(request_id) is None
    method, params = item.get("method"), item.get("params", {})
    if item.get("jsonrpc") != "2.0" or not isinstance(method, str) or not valid_id:
        return _error(
            request_id if valid_id else None, INVALID_REQUEST, "not a JSON-RPC 2.0 request"
        )
    notification = "id" not in item
    try:
        result = await _dispatch(state, caller, actor, method, params)
    except (_RpcError, MailProtocolError) as e:
        answer = _error(request_id, e.code, e.message, e.data)
    except StorageError:
        logger.exception("%s failed", method)
        answer = _error(request_id, INTERNAL, "internal error")
    except MAILError as e:  # map/send: what POST /message answers with an HTTP status
        status = server_status(e)
        answer = _error(request_id, SERVER_ERROR, str(e), {"status": status})
    except Exception:  # a bug: this request's error; the batch and the connection go on
        logger.exception("%s failed unexpectedly", method)
        answer = _error(request_id, INTERNAL, "internal error")
    else:
        answer = {"jsonrpc": "2.0", "id": request_id, "result": result}
    return None if notification else answer


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
    actor = actor_of(state, caller)
    raw = await request.body()
    try:
        body = loads(raw, check_text=False)  # (params report it: -32602 naming them)
    except JSONRefusedError as e:
        return JSONResponse(_error(None, PARSE_ERROR, f"parse error: {_unread(raw, e)}"))
    if isinstance(body, list):
        if not body:
            return JSONResponse(_error(None, INVALID_REQUEST, "an empty batch"))
        answers = [a for a in [await _answer(state, caller, actor, item) for item in body] if a]
        return JSONResponse(answers) if answers else Response(status_code=204)
    answer = await _answer(state, caller, actor, body)
    return JSONResponse(answer) if answer is not None else Response(status_code=204)


def _unread(raw: bytes, error: JSONRefusedError) -> str:
    """Why a body is not read: not JSON at all, or JSON past the limits of
    :func:`mail._limits.loads` (``NaN``, a number out of range, nesting too deep)."""
    try:
        json.loads(raw)
    except RecursionError:
        pass  # JSON, too deep
    except ValueError:
        return "the body is not JSON"
    return error.msg


async def _notifications(state: ServerState, sub: Subscription) -> AsyncIterator[ServerSentEvent]:
    async with state.map_events.feeding(sub):
        async for event in _notified(state, sub):
            yield event


async def _notified(state: ServerState, sub: Subscription) -> AsyncIterator[ServerSentEvent]:
    stop = asyncio.ensure_future(sub.closed.wait())
    closing = asyncio.ensure_future(state.closing.wait())
    try:
        while True:
            getter = asyncio.ensure_future(sub.queue.get())
            done, _ = await asyncio.wait(
                {getter, stop, closing},
                timeout=state.ping_interval,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if getter not in done:
                getter.cancel()
                if done:
                    return
                yield ServerSentEvent(compact_json({}), event="ping", sep=CRLF)
                continue
            event = getter.result()
            note = {"jsonrpc": "2.0", "method": "map/event", "params": event.wire(sub.id)}
            yield ServerSentEvent(compact_json(note), event="map/event", id=str(event.id), sep=CRLF)
    finally:
        for future in (stop, closing):
            future.cancel()


@router.get(
    "/map/events",
    summary="The map/event notifications of a map/subscribe subscription (server-sent events)",
    responses={200: {"description": "map/event notifications", "content": EVENT_STREAM}},
    response_class=Response,
)
async def map_events(state: AppState, caller: AdminOrUser, subscription: str) -> Response:
    sub = await state.map_events.find(actor_of(state, caller).key, subscription)
    if sub is None:
        raise HTTPException(status_code=404, detail=f"no subscription {subscription!r}")
    return EventSourceResponse(_notifications(state, sub), headers=SSE_HEADERS, ping=0, sep=CRLF)
