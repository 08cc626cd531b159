"""``POST /message`` (JSON or server-sent events), its alias ``/chat`` and ``/ui/message``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter
from fastapi.responses import Response

from mail.core.events import STREAM_ONLY_EVENTS, MAILEvent
from mail.core.message import new_task_id
from mail.core.tasks import turn_status
from mail.errors import TaskStateError
from mail.server._deps import AdminOrUser, AppState, UICaller
from mail.server._routing import StrictJSONRoute
from mail.server._shutdown import handed_over, shutting_down, unless_closing
from mail.server._sse import event_response, sse_object
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

__all__ = ["router", "send_message"]

router = APIRouter(responses=ERROR_RESPONSES, route_class=StrictJSONRoute)


async def send_message(
    state: ServerState,
    caller: Caller,
    request: MessageRequest,
    *,
    stream_default: bool = False,
    events_default: bool = False,
) -> dict[str, Any] | Response:
    """Run ``request`` in the caller's swarm: the answer, or a stream of the task's events
    (whose first event is fetched before answering, so setup failures are HTTP errors).
    Refused (503) while the store fails; the JSON answer is held back (503) when the task
    cannot be committed in time."""
    state.check_store()
    task_id = request.task_id or new_task_id()
    kwargs = dict(request.kwargs)
    timeout = float(kwargs.pop("timeout", state.config.server.settings.task_timeout))
    subject = request.subject or "New Message"
    stream = request.stream if request.stream is not None else stream_default
    show_events = request.show_events if request.show_events is not None else events_default
    # held: an idle-runtime sweep cannot shut the swarm down under this request
    async with state.swarms.hold(caller) as swarm:
        message = swarm._user_message(
            request.text, subject, request.msg_type, request.entrypoint, task_id
        )
        if state.cluster_tasks is not None:
            asked = {
                "body": request.text,
                "subject": subject,
                "msg_type": request.msg_type,
                "entrypoint": request.entrypoint,
                "task_id": task_id,
                "resume_from": request.resume_from,
                "kwargs": kwargs,
                "timeout": timeout,
            }
            handed = await state.cluster_tasks.start_turn(
                caller, swarm, message, request.resume_from, asked
            )
            if handed is not None:  # another replica runs the task
                return await answer_from_elsewhere(
                    state, caller, task_id, handed.start, stream=stream, show_events=show_events
                )
        if stream:
            events = await swarm.submit_message_stream(
                message, timeout, request.resume_from, ping_interval=state.ping_interval, **kwargs
            )
            return await task_stream(state, events, task_id, moved=_stale(state, swarm, task_id))
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


async def task_stream(
    state: ServerState,
    events: AsyncIterator[MAILEvent],
    task_id: str,
    moved: Callable[[], bool] = lambda: False,
) -> Response:
    """The stream of a task's turn (its first event fetched now, so that setup failures
    are HTTP errors). When the server stops, a single server ends it with a final
    ``task_error`` saying how to resume; a replica just ends it (the task goes on on
    another replica, where the client follows it with ``Last-Event-ID``), as it does when
    the task ``moved`` (cluster mode: this replica's copy lost its lease)."""
    if state.cluster_tasks is not None:
        events = _until_moved(events, moved)
    first = await anext(events)
    final = state.cluster_tasks is None
    return event_response(
        events, first, closing=state.closing, task_id=task_id, final_on_stop=final
    )


async def _until_moved(
    events: AsyncIterator[MAILEvent], moved: Callable[[], bool]
) -> AsyncIterator[MAILEvent]:
    """``events``, ending quietly when the task moved to another replica (this one lost
    its lease): the client follows it there with ``Last-Event-ID``. A final event of this
    replica's copy is left out too when the copy moved meanwhile (its turn ended just
    before the replica learned it lost the lease; the new owner runs the turn again)."""
    try:
        async for event in events:
            if event.seq is None and event.event not in STREAM_ONLY_EVENTS and moved():
                return
            yield event
    except TaskStateError:
        return


def _stale(state: ServerState, swarm: MAILSwarm, task_id: str) -> Callable[[], bool]:
    """Whether this replica's copy of the task (as it is now) no longer tells how its turn
    ends (:meth:`ClusterTasks.stale`); never for a single server."""
    cluster, task = state.cluster_tasks, swarm.get_task_by_id(task_id)
    if cluster is None or task is None:
        return lambda: False
    return lambda: cluster.stale(swarm, task)


async def answer_from_elsewhere(
    state: ServerState,
    caller: Caller,
    task_id: str,
    start: int,
    *,
    stream: bool,
    show_events: bool,
) -> dict[str, Any] | Response:
    """The answer of a turn another replica runs (cluster mode): its events from ``start``
    as a stream, or its closing event's answer."""
    assert state.cluster_tasks is not None  # noqa: S101
    events = state.cluster_tasks.follow(caller, task_id, start, started=True)
    if stream:
        return await task_stream(state, events, task_id)
    final: dict[str, Any] = {}
    async for event in events:
        if event.seq is None and event.payload is not None and "response" in event.payload:
            final = event.payload
    task = await state.cluster_tasks.view(caller, task_id) if show_events else None
    return {
        "response": final.get("response", ""),
        "events": [sse_object(e) for e in task.log.all()] if task is not None else None,
        "task_id": task_id,
        "status": final.get("status", "completed"),
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
    state: AppState, caller: AdminOrUser, body: JSONBody[MessageRequest]
) -> dict[str, Any] | Response:
    return await send_message(state, caller, body)


@router.post(
    "/chat",
    response_model=MessageResponse,
    summary="Send a message (protocol 0.1 name; `message` is accepted for `body`)",
    responses=_ANSWERS,
)
async def chat(
    state: AppState, caller: AdminOrUser, body: JSONBody[MessageRequest]
) -> dict[str, Any] | Response:
    return await send_message(state, caller, body)


@router.post(
    "/ui/message",
    response_model=MessageResponse,
    summary="Send a message from the UI (streams by default)",
    responses=_ANSWERS,
)
async def ui_message(
    state: AppState, caller: UICaller, body: JSONBody[MessageRequest]
) -> dict[str, Any] | Response:
    # the UI's non-streamed answers always carry the task's events
    return await send_message(state, caller, body, stream_default=True, events_default=True)
