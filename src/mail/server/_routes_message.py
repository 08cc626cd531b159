"""``POST /message`` (JSON or server-sent events), its alias ``/chat`` and ``/ui/message``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Header
from fastapi.responses import Response

from mail._limits import TASK_ID_MAX
from mail.core.message import new_task_id
from mail.core.tasks import turn_status
from mail.errors import TaskStateError
from mail.server._deps import AdminOrUser, AppState, UICaller
from mail.server._follow import answer_from_elsewhere, stale, task_stream
from mail.server._repeats import IDEMPOTENCY_HEADER, repeated, replay, turn_request
from mail.server._routing import StrictJSONRoute
from mail.server._shutdown import handed_over, shutting_down, unless_closing
from mail.server._sse import sse_object
from mail.server._state import ServerState
from mail.server.auth import Caller
from mail.server.models import (
    ERROR_RESPONSES,
    EVENT_STREAM,
    JSONBody,
    MessageRequest,
    MessageResponse,
)

if TYPE_CHECKING:
    from mail.api import MAILSwarm
    from mail.core.message import MAILMessage

__all__ = ["router", "send_message"]

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


async def send_message(
    state: ServerState,
    caller: Caller,
    request: MessageRequest,
    *,
    stream_default: bool = False,
    events_default: bool = False,
    idempotency_key: str | None = None,
) -> dict[str, Any] | Response:
    """Run ``request`` in the caller's swarm: the answer, or a stream of the task's events
    (whose first event is fetched before answering, so setup failures are HTTP errors).
    Refused (503) while the store fails; the JSON answer is held back (503) when the task
    cannot be committed in time. A repeated request is answered as the first one was
    (:mod:`mail.server._repeats`), also while the store fails: it is no new work."""
    if not request.task_id:  # (with a task id: once it is known not to repeat one)
        state.check_store()
    task_id = request.task_id or new_task_id()
    kwargs = dict(request.kwargs)
    timeout = float(kwargs.pop("timeout", state.config.server.settings.task_timeout))
    subject = request.subject or "New Message"
    stream = request.stream if request.stream is not None else stream_default
    show_events = request.show_events if request.show_events is not None else events_default
    asked = turn_request(request, subject, kwargs, idempotency_key)
    # held: an idle-runtime sweep cannot shut the swarm down under this request
    async with state.swarms.hold(caller) as swarm:
        if request.task_id:
            found = await repeated(state, caller, swarm, task_id, request.resume_from, asked)
            if found is not None:
                return await replay(
                    state,
                    caller,
                    swarm,
                    found,
                    resume_from=request.resume_from,
                    stream=stream,
                    show_events=show_events,
                    timeout=timeout,
                )
            state.check_store()
        message = swarm._user_message(
            request.text, subject, request.msg_type, request.entrypoint, task_id
        )
        if state.cluster_tasks is not None:
            handed = await state.cluster_tasks.start_turn(
                caller,
                swarm,
                message,
                request.resume_from,
                {
                    "body": request.text,
                    "subject": subject,
                    "msg_type": request.msg_type,
                    "entrypoint": request.entrypoint,
                    "task_id": task_id,
                    "resume_from": request.resume_from,
                    "kwargs": kwargs,
                    "timeout": timeout,
                    "request": asked.as_json(),
                },
            )
            if handed is not None:  # another replica runs the task
                return await answer_from_elsewhere(
                    state, caller, task_id, handed.start, stream=stream, show_events=show_events
                )
        swarm.runtime.expect(task_id, asked)
        if stream:
            events = await swarm.submit_message_stream(
                message, timeout, request.resume_from, ping_interval=state.ping_interval, **kwargs
            )
            return await task_stream(state, events, task_id, moved=stale(state, swarm, task_id))
        return await _answer(state, caller, swarm, message, request, kwargs, timeout, show_events)


async def _answer(  # the request's parts, prepared by send_message
    state: ServerState,
    caller: Caller,
    swarm: MAILSwarm,
    message: MAILMessage,
    request: MessageRequest,
    kwargs: dict[str, Any],
    timeout: float,
    show_events: bool,
) -> dict[str, Any] | Response:
    """Run the turn here and answer as JSON once it ended and is stored."""
    task_id = message["message"]["task_id"]
    existing = swarm.get_task_by_id(task_id)
    start = existing.log.last_seq if existing is not None else 0
    try:
        answered, result = await unless_closing(
            swarm.submit_message(message, timeout, show_events, request.resume_from, **kwargs),
            state.closing,
        )
    except TaskStateError:
        if state.cluster_tasks is None or swarm.get_task_by_id(task_id) is not None:
            raise
        # this replica's copy lost its lease while it ran: the answer is the new owner's
        return await answer_from_elsewhere(
            state, caller, task_id, start, stream=False, show_events=show_events
        )
    if result is None or not answered:
        return handed_over(task_id) if state.cluster_tasks else shutting_down(task_id)
    final, log = result
    task = swarm.get_task_by_id(task_id)
    return {
        "response": final["message"]["body"],
        "events": [sse_object(e) for e in log] if log is not None else None,
        "task_id": task_id,
        "status": turn_status(task) if task is not None else "completed",
    }


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
