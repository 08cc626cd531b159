"""``POST /message`` (JSON or server-sent events), its alias ``/chat`` and ``/ui/message``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header
from fastapi.responses import Response

from mail._limits import TASK_ID_MAX
from mail.core.message import new_task_id
from mail.server._deps import AdminOrUser, AppState, UICaller
from mail.server._repeats import IDEMPOTENCY_HEADER, turn_request
from mail.server._routing import StrictJSONRoute
from mail.server._sse import stream_response
from mail.server._state import ServerState
from mail.server._task_service import Stream, Turn
from mail.server.auth import Caller
from mail.server.models import (
    ERROR_RESPONSES,
    EVENT_STREAM,
    JSONBody,
    MessageRequest,
    MessageResponse,
)

__all__ = ["new_turn", "router", "send_message"]

router = APIRouter(responses=ERROR_RESPONSES, route_class=StrictJSONRoute)

#: The client's own key of a request: a repeat with it is answered as the first one was.
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias=IDEMPOTENCY_HEADER,
        max_length=TASK_ID_MAX,
        description="Your key for this request (1-256 characters): a request repeated with "
        "the same key is answered as the first one was, never run twice (see Retries)",
    ),
]


def new_turn(
    state: ServerState,
    request: MessageRequest,
    *,
    stream_default: bool = False,
    events_default: bool = False,
    idempotency_key: str | None = None,
) -> Turn:
    """The turn ``request`` asks for (``InvalidMessageError`` for a bad ``idempotency_key``)."""
    kwargs = dict(request.kwargs)
    if request.budget is not None:
        kwargs["budget"] = request.budget.model_dump(exclude_none=True)
    subject = request.subject or "New Message"
    return Turn(
        task_id=request.task_id or new_task_id(),
        named=request.task_id is not None,
        body=request.text,
        subject=subject,
        msg_type=request.msg_type,
        entrypoint=request.entrypoint,
        resume_from=request.resume_from,
        timeout=float(kwargs.pop("timeout", state.config.server.settings.task_timeout)),
        kwargs=kwargs,
        stream=request.stream if request.stream is not None else stream_default,
        show_events=request.show_events if request.show_events is not None else events_default,
        asked=turn_request(request, subject, kwargs, idempotency_key),
    )


async def send_message(
    state: ServerState,
    caller: Caller,
    request: MessageRequest,
    *,
    stream_default: bool = False,
    events_default: bool = False,
    idempotency_key: str | None = None,
) -> dict[str, Any] | Response:
    """Run ``request`` in the caller's swarm (:meth:`TaskService.send
    <mail.server._tasks.TaskService.send>`): the answer, or a stream of the task's events
    (whose first event is fetched before answering, so setup failures are HTTP errors)."""
    turn = new_turn(
        state,
        request,
        stream_default=stream_default,
        events_default=events_default,
        idempotency_key=idempotency_key,
    )
    answer = await state.tasks.send(caller, turn)
    if isinstance(answer, Stream):
        return stream_response(answer, state.closing)
    return answer


_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The task's answer as JSON or, with stream=true, its events",
        "content": EVENT_STREAM,
    }
}


@router.post(
    "/message",
    response_model=MessageResponse,
    summary="Send a message to the swarm: JSON answer, or server-sent events with stream=true",
    responses=_ANSWERS,
)
async def post_message(
    state: AppState, caller: AdminOrUser, body: JSONBody[MessageRequest], key: IdempotencyKey = None
) -> dict[str, Any] | Response:
    return await send_message(state, caller, body, idempotency_key=key)


@router.post(
    "/chat",
    response_model=MessageResponse,
    summary="Send a message (protocol 0.1 name; `message` is accepted for `body`)",
    responses=_ANSWERS,
)
async def chat(
    state: AppState, caller: AdminOrUser, body: JSONBody[MessageRequest], key: IdempotencyKey = None
) -> dict[str, Any] | Response:
    return await send_message(state, caller, body, idempotency_key=key)


@router.post(
    "/ui/message",
    response_model=MessageResponse,
    summary="Send a message from the UI (streams by default)",
    responses=_ANSWERS,
)
async def ui_message(
    state: AppState, caller: UICaller, body: JSONBody[MessageRequest], key: IdempotencyKey = None
) -> dict[str, Any] | Response:
    # the UI's non-streamed answers always carry the task's events
    return await send_message(
        state, caller, body, stream_default=True, events_default=True, idempotency_key=key
    )
