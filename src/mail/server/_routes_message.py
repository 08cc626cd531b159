"""``POST /message`` (JSON or server-sent events), its alias ``/chat`` and ``/ui/message``."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from mail.core.message import MAIL_MESSAGE_TYPES, new_task_id
from mail.core.tasks import TaskState
from mail.errors import InvalidMessageError
from mail.server._deps import (
    BEARER_SECURITY,
    DirectRoute,
    as_bool,
    as_str,
    authorize,
    read_json,
    state_of,
)
from mail.server._sse import event_response, sse_object
from mail.server.auth import Caller
from mail.server.models import (
    ERROR_RESPONSES,
    EVENT_STREAM,
    MessageRequest,
    MessageResponse,
    body_schema,
)

__all__ = ["router"]

router = APIRouter(responses=ERROR_RESPONSES, route_class=DirectRoute)

_SENDABLE = ("request", "broadcast")
_RESUME = ("user_response", "breakpoint_tool_call")
# kwargs the route interprets itself or that would collide with named arguments
_RESERVED_KWARGS = frozenset(
    {
        "body",
        "subject",
        "msg_type",
        "entrypoint",
        "task_id",
        "resume_from",
        "show_events",
        "stream",
        "message",
        "ping_interval",
    }
)


class _Submission:
    """A ``/message`` body, checked field by field with the protocol's error texts."""

    def __init__(
        self, data: dict[str, Any], *, stream_default: bool, events_default: bool, timeout: float
    ) -> None:
        self.body = as_str(data, "body") or as_str(data, "message")
        self.subject = as_str(data, "subject") or "New Message"
        msg_type = data.get("msg_type") or "request"
        if not isinstance(msg_type, str):
            raise InvalidMessageError(f"msg_type must be a string, got {type(msg_type).__name__}")
        if msg_type not in MAIL_MESSAGE_TYPES:
            raise InvalidMessageError(f"invalid message type: {msg_type}")
        if msg_type not in _SENDABLE:
            raise InvalidMessageError(
                f"msg_type '{msg_type}' cannot be sent to /message; use request or broadcast"
            )
        self.msg_type = msg_type
        self.entrypoint = as_str(data, "entrypoint").strip() or None
        task_id = data.get("task_id")
        self.task_id = task_id if isinstance(task_id, str) and task_id.strip() else new_task_id()
        resume_from = data.get("resume_from")
        if resume_from is not None and resume_from not in _RESUME:
            raise InvalidMessageError(
                f"resume_from must be 'user_response', 'breakpoint_tool_call' or null, got {json.dumps(resume_from)}"
            )
        self.resume_from = resume_from
        if not self.body and resume_from != "breakpoint_tool_call":
            raise InvalidMessageError("no message provided")
        kwargs = data.get("kwargs") or {}
        if not isinstance(kwargs, dict):
            raise InvalidMessageError(f"kwargs must be an object, got {type(kwargs).__name__}")
        clash = sorted(_RESERVED_KWARGS.intersection(kwargs))
        if clash:
            raise InvalidMessageError(
                f"kwargs may not contain {', '.join(clash)}: send them as top-level fields"
            )
        self.timeout = _timeout(kwargs.pop("timeout", timeout))
        self.kwargs = kwargs
        self.show_events = as_bool(data, "show_events", events_default)
        self.stream = as_bool(data, "stream", stream_default)


def _timeout(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise InvalidMessageError(
            f"kwargs.timeout must be a positive number of seconds, got {json.dumps(value)}"
        )
    return float(value)


async def _handle(
    request: Request, caller: Caller, *, stream_default: bool = False, events_default: bool = False
) -> Response:
    state = state_of(request)
    data = await read_json(request)
    sub = _Submission(
        data,
        stream_default=stream_default,
        events_default=events_default,
        timeout=state.config.server.settings.task_timeout,
    )
    common: dict[str, Any] = {
        "subject": sub.subject,
        "msg_type": sub.msg_type,
        "entrypoint": sub.entrypoint,
        "timeout": sub.timeout,
        "task_id": sub.task_id,
        "resume_from": sub.resume_from,
        **sub.kwargs,
    }
    # held: an idle-runtime sweep cannot shut the swarm down under this request
    async with state.swarms.hold(caller) as swarm:
        if sub.stream:
            stream = await swarm.post_message_stream(
                sub.body, ping_interval=state.ping_interval, **common
            )
            # the first event is fetched before answering, so setup failures are HTTP errors
            first = await anext(stream)
            return event_response(stream, first)
        final, events = await swarm.post_message(sub.body, show_events=sub.show_events, **common)
    task = swarm.get_task_by_id(sub.task_id)
    task_state = task.state if task is not None else TaskState.COMPLETED
    return JSONResponse(
        {
            "response": final["message"]["body"],
            "events": [sse_object(e) for e in events] if events is not None else None,
            "task_id": sub.task_id,
            "status": str(task_state),
        }
    )


_DOCS: dict[str, Any] = {
    **body_schema(MessageRequest),
    "responses": {
        "200": {
            "description": "The task's answer as JSON or, with stream=true, its events",
            "content": EVENT_STREAM,
        }
    },
}


# These three call authorize() themselves rather than through Depends (see authorize).
_ADMIN_OR_USER = ("admin", "user")
_UI = ("ui",)


@router.post(
    "/message",
    response_model=MessageResponse,
    summary="Send a message to the swarm: JSON answer, or server-sent events with stream=true",
    openapi_extra={**_DOCS, **BEARER_SECURITY},
)
async def post_message(request: Request) -> Response:
    return await _handle(request, await authorize(request, _ADMIN_OR_USER))


@router.post(
    "/chat",
    response_model=MessageResponse,
    summary="Send a message (protocol 0.1 name; `message` is accepted for `body`)",
    openapi_extra={**_DOCS, **BEARER_SECURITY},
)
async def chat(request: Request) -> Response:
    return await _handle(request, await authorize(request, _ADMIN_OR_USER))


@router.post(
    "/ui/message",
    response_model=MessageResponse,
    summary="Send a message from the UI (streams by default)",
    openapi_extra={**_DOCS, **BEARER_SECURITY},
)
async def ui_message(request: Request) -> Response:
    # the UI's non-streamed answers always carry the task's events
    caller = await authorize(request, _UI)
    return await _handle(request, caller, stream_default=True, events_default=True)
