"""Following a task this server runs: its events after a sequence number, then live, then
the end of its turn once the task is stored (:meth:`MAILRuntime.turn_end`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mail.api import MAILSwarm
    from mail.core.events import MAILEvent
    from mail.core.tasks import MAILTask

__all__ = ["follow_local"]


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
