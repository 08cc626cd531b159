"""Following a task: the one this server runs (its events after a sequence number, then
live, then the end of its turn once the task is stored, :meth:`MAILRuntime.turn_end`),
or, in cluster mode, the one another replica runs; as a stream or as the JSON answer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from fastapi.responses import Response

from mail.core.events import STREAM_ONLY_EVENTS, MAILEvent
from mail.errors import TaskStateError
from mail.server._sse import event_response, sse_object

if TYPE_CHECKING:
    from mail.api import MAILSwarm
    from mail.core.tasks import MAILTask
    from mail.server._state import ServerState
    from mail.server.auth import Caller

__all__ = ["answer_from_elsewhere", "follow_local", "stale", "task_stream"]


async def follow_local(
    swarm: MAILSwarm, task: MAILTask, after: int, ping: float, moved: Callable[[], bool]
) -> AsyncIterator[MAILEvent]:
    """``task``'s events after ``after`` (stored ``task_complete`` events left out: the
    stream closes with its own final one), live until its turn ends, then that end;
    nothing more when it ``moved`` (cluster mode: the client follows it where it runs)."""
    follow = task.log.follow(
        after, heartbeat=ping, until=lambda: not task.is_running, stored_ends=False
    )
    cursor = after
    async for event in follow:
        cursor = event.seq or cursor
        yield event
    if moved():
        return
    # the end of the turn is told once it is stored (or the stream says it is not yet)
    async for event in swarm.runtime.turn_end(task, cursor):
        yield event


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


def stale(state: ServerState, swarm: MAILSwarm, task_id: str) -> Callable[[], bool]:
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
