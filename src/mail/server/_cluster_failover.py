"""Fail-over (cluster mode): a task whose replica died, taken over by this runtime.

The replica that starts a turn of a task records where it started (:func:`checkpoint`):
the caller's message, the task's last event and the length of each agent's history. The
replica that claims the task once the dead one's lease ran out loads it from the store
(:meth:`MAILRuntime.restore` with ``only``) and calls :func:`take_over`:

* a task paused on breakpoints, or finished, is simply loaded: nothing was lost;
* a running task whose turn did nothing that cannot be done twice (no action ran, no
  breakpoint tool, no message to or from another swarm since the turn started) runs its
  turn again: each agent's history is cut back to where the turn started, a
  ``task_taken_over`` event says so, and the caller's message is delivered again;
* any other running task ends ``interrupted``, exactly as after a single server's
  restart (it resumes with ``resume_from="user_response"``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

from mail.core.events import EventName
from mail.core.tasks import MAILTask, TaskState

if TYPE_CHECKING:
    from collections.abc import Collection

    from mail.core import Scheduler, SystemMessages
    from mail.core.message import MAILMessage
    from mail.core.tasks import TaskTable


class MAILRuntime(Protocol):
    """What fail-over uses of a :class:`~mail.core.runtime.MAILRuntime`."""

    tasks: TaskTable
    agent_histories: dict[str, list[dict[str, Any]]]
    system: SystemMessages
    scheduler: Scheduler

    async def restore(self, only: Collection[str] | None = None) -> int: ...
    def forget(self, task: MAILTask) -> None: ...


__all__ = ["UNSAFE_EVENTS", "checkpoint", "take_over"]

#: Events after which a turn cannot be run again: something outside the agents happened.
UNSAFE_EVENTS = frozenset(
    {
        EventName.ACTION_CALL,
        EventName.ACTION_COMPLETE,
        EventName.ACTION_ERROR,
        EventName.BREAKPOINT_TOOL_CALL,
        EventName.BREAKPOINT_ACTION_COMPLETE,
        EventName.BUILTIN_TOOL_CALL,
        EventName.INTERSWARM_MESSAGE_SENT,
        EventName.INTERSWARM_MESSAGE_RECEIVED,
    }
)


def checkpoint(
    runtime: MAILRuntime, message: MAILMessage, resume_from: str | None
) -> dict[str, Any]:
    """Where the turn ``message`` starts begins: what :func:`take_over` needs to run it
    again. Call it before the message is submitted. A breakpoint answer cannot be run
    again (its calls are gone from the store once the task runs): it records no message."""
    task_id = message["message"]["task_id"]
    task = runtime.tasks.get(task_id)
    histories = {}
    if task is not None:
        for agent in task.agents:
            history = runtime.agent_histories.get(f"{task_id}::{agent}")
            histories[agent] = len(history) if history is not None else 0
    redo = resume_from in (None, "user_response")
    return {
        "seq": task.log.last_seq if task is not None else 0,
        "message": message if redo else None,
        "histories": histories,
    }


def _why_not(task: MAILTask, point: dict[str, Any] | None) -> str | None:
    """Why the task's turn cannot be run again; ``None`` when it can."""
    if not point or not isinstance(point.get("message"), dict):
        return "it was answering a breakpoint, or its turn left no record"
    done = {str(e.event) for e in task.log.since(int(point.get("seq", 0)))}
    unsafe = sorted(done & UNSAFE_EVENTS)
    if unsafe:
        return f"its turn had already done what cannot be done twice ({', '.join(unsafe)})"
    return None


async def take_over(
    runtime: MAILRuntime, task_id: str, point: dict[str, Any] | None, *, by: str, was: str
) -> str:
    """Load ``task_id`` from the store into ``runtime`` and carry it on (see the module).

    ``by`` is this replica, ``was`` the one that died. Returns ``"loaded"`` (paused or
    finished: nothing to redo), ``"rerun"``, ``"interrupted"`` or ``"missing"`` (not in
    the store). Raises :class:`~mail.errors.StorageError`.
    """
    stale = runtime.tasks.remove(task_id)  # an older copy this runtime kept
    if stale is not None:
        runtime.forget(stale)
    await runtime.restore(only={task_id})
    task = runtime.tasks.get(task_id)
    if task is None:
        return "missing"
    if not task.is_running:
        return "loaded"
    why = _why_not(task, point)
    if why is not None:
        reason = f"replica {was} stopped while this task was running, and {why}"
        task.log.emit(EventName.TASK_INTERRUPTED, reason)
        task.open_turn()  # a turn to end: whoever follows it gets its answer
        task.close_turn(TaskState.INTERRUPTED, runtime.system.task_error(task_id, reason))
        task.changed()
        runtime.tasks.mark_finished(task)
        return "interrupted"
    assert point is not None  # noqa: S101  # _why_not checked it
    lengths = cast("dict[str, int]", point.get("histories") or {})
    for agent in list(task.agents):
        key = f"{task_id}::{agent}"
        keep = lengths.get(agent, 0)
        history = runtime.agent_histories.get(key)
        if history is not None:
            del history[keep:]
    message = cast("MAILMessage", point["message"])
    task.log.emit(
        EventName.TASK_TAKEN_OVER,
        f"replica {by} took this task over after replica {was} stopped; "
        "its turn runs again from the caller's message",
        {"replica_id": by, "previous_replica_id": was, "from_seq": int(point.get("seq", 0))},
    )
    task.open_turn()
    task.changed()
    runtime.scheduler.put(message)
    runtime.scheduler.route_queued()
    return "rerun"
