"""Keeping a runtime's tasks in a store: the :class:`TaskSink` seam, what goes through it,
and :func:`restore`.

``mail.core`` does not import ``mail.db`` (STYLE §2): the runtime talks to a
:class:`TaskSink`, a small protocol over plain snapshots, and ``mail.api`` adapts a
``mail.db.TaskStore`` to it (``mail.api.StoreSink``). The recorder that batches a
runtime's changes into :class:`WriteBatch` writes is :mod:`mail.core._recorder`.

:func:`restore` rebuilds a runtime's tasks from the sink: events keep their sequence
numbers, and a task that was running when the process stopped becomes ``interrupted``
with a ``task_interrupted`` event (resumable with ``resume_from="user_response"``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, cast

from mail.core.events import EventLog, EventName, MAILEvent
from mail.core.tasks import MAILTask, PendingBreakpoint, TaskState
from mail.errors import StorageError

if TYPE_CHECKING:
    from mail.core.message import MAILMessage
    from mail.core.runtime import MAILRuntime

__all__ = [
    "StoredEvent",
    "StoredTask",
    "TaskSink",
    "TaskSnapshot",
    "TaskWriteError",
    "WriteBatch",
    "restore",
]

logger = logging.getLogger("mail.runtime")

#: ``(call_id, agent, call, normalized)`` of a pending breakpoint call.
BreakpointTuple = tuple[str, str, dict[str, Any], dict[str, Any]]
#: ``(priority, seq, message)`` of a stashed queue item.
StashTuple = tuple[int, int, dict[str, Any]]


@dataclass(slots=True, kw_only=True)
class TaskSnapshot:
    """The record of one task as stored."""

    task_id: str
    task_owner: str
    task_contributors: list[str]
    remote_swarms: list[str]
    state: str
    title: str | None
    start_time: datetime
    updated_at: datetime


@dataclass(slots=True, kw_only=True)
class StoredEvent:
    """One event of a task with its sequence number and wire ``data``."""

    seq: int
    event: str
    data: dict[str, Any]
    data_json: str | None = None


@dataclass(slots=True, kw_only=True)
class WriteBatch:
    """Everything one flush writes, in the order the sink must apply it."""

    tasks: list[TaskSnapshot] = field(default_factory=list)
    #: the runtime's events themselves (appended, never changed): ``seq``, ``event``, ``data()``
    events: dict[str, list[MAILEvent]] = field(default_factory=dict)
    histories: list[tuple[str, str, list[dict[str, Any]], str]] = field(default_factory=list)
    responses: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    breakpoints: dict[str, list[BreakpointTuple]] = field(default_factory=dict)
    stashes: dict[str, list[StashTuple]] = field(default_factory=dict)

    def __len__(self) -> int:
        return (
            len(self.tasks)
            + sum(len(v) for v in self.events.values())
            + len(self.histories)
            + len(self.responses)
            + len(self.breakpoints)
            + len(self.stashes)
        )

    def records_by_task(self) -> dict[str, int]:
        """How many of the batch's rows belong to each task."""
        counts: dict[str, int] = {}
        task_ids = [t.task_id for t in self.tasks]
        task_ids += [t for t, *_ in self.histories]
        task_ids += [t for t, _ in self.responses]
        task_ids += [*self.breakpoints, *self.stashes]
        for task_id in task_ids:
            counts[task_id] = counts.get(task_id, 0) + 1
        for task_id, events in self.events.items():
            counts[task_id] = counts.get(task_id, 0) + len(events)
        return counts


class TaskWriteError(StorageError):
    """A sink write failed for some of the batch's tasks.

    ``failures`` maps the id of each task whose rows could not be stored to what failed;
    the other tasks' rows may have been stored (a retry stores them again harmlessly).
    """

    def __init__(self, message: str, failures: dict[str, str]) -> None:
        super().__init__(message)
        self.failures = failures


@dataclass(slots=True, kw_only=True)
class StoredTask:
    """A task as loaded back: its record and everything kept with it."""

    record: TaskSnapshot
    events: list[StoredEvent]
    histories: dict[str, list[dict[str, Any]]]
    response: dict[str, Any] | None
    breakpoints: list[BreakpointTuple]
    stash: list[StashTuple]


class TaskSink(Protocol):
    """Where a runtime's tasks go (one caller's part of a store)."""

    async def write(self, batch: WriteBatch) -> None:
        """Apply ``batch`` in order: task records, events, histories, responses,
        breakpoints, stashes. Raises on failure (nothing is swallowed), preferably
        :class:`TaskWriteError` naming the tasks whose rows were not stored.

        The batch's histories and messages are the runtime's own objects, which change
        as tasks go on: a sink encodes (or copies) them before its first ``await``."""
        ...

    async def load(self, keep_finished: int | None = None) -> list[StoredTask]:
        """The stored tasks of this caller, oldest first: every one, or with
        ``keep_finished``, those that were running or paused on a breakpoint and the newest
        ``keep_finished`` of the others (what a runtime keeps in memory)."""
        ...


async def restore(runtime: MAILRuntime, sink: TaskSink) -> int:
    """Load the stored tasks into ``runtime`` (skipping ids it already holds).

    Returns how many tasks were loaded. A task stored as running is marked interrupted,
    with a ``task_interrupted`` event.
    """
    from mail.core.tools import AgentToolCall  # noqa: PLC0415  # pydantic model, only here

    loaded = 0
    # the runtime would evict finished tasks beyond its retention limit right away:
    # loading only those it keeps makes the first request after a restart as fast with a
    # store of a million tasks as with a store of a thousand
    for stored in await sink.load(runtime.tasks.max_finished):
        rec = stored.record
        if rec.task_id in runtime.tasks:
            continue
        task = MAILTask(
            task_id=rec.task_id,
            task_owner=rec.task_owner,
            task_contributors=list(rec.task_contributors),
            start_time=rec.start_time,
            updated_at=rec.updated_at,
            state=TaskState(rec.state),
            title=rec.title,
            remote_swarms=set(rec.remote_swarms),
        )
        task.log = EventLog(rec.task_id, [_event(rec.task_id, e) for e in stored.events])
        task.log.stored_seq = task.log.last_seq  # the store has them
        for agent, history in stored.histories.items():
            runtime.agent_histories[f"{rec.task_id}::{agent}"] = history
            task.agents.add(agent)
        task.response = stored.response  # type: ignore[assignment]
        for call_id, agent, call, normalized in stored.breakpoints:
            task.pending_breakpoints[call_id] = PendingBreakpoint(
                agent=agent, call=AgentToolCall.model_validate(call), normalized=normalized
            )
        task.stash = [
            (p, runtime.scheduler.next_seq(), cast("MAILMessage", m)) for p, _, m in stored.stash
        ]
        runtime.tasks.add(task, notify=False)
        if runtime.recorder is not None:
            runtime.recorder.loaded(task)
        if task.state is TaskState.RUNNING:
            task.state = TaskState.INTERRUPTED
            task.touch()
            task.response = runtime.system.task_error(
                task.task_id, "the server stopped while this task was running"
            )
            if runtime.recorder is not None:
                runtime.recorder.attach(task)
            task.log.emit(
                EventName.TASK_INTERRUPTED, "the server stopped while this task was running"
            )
        elif runtime.recorder is not None:
            runtime.recorder.follow(task.log)
        if task.response is not None:
            task.turn = asyncio.get_running_loop().create_future()
            task.turn.set_result(task.response)
        task.finished_at = None
        for evicted in runtime.tasks.mark_finished(task):
            runtime.forget(evicted)
        loaded += 1
    return loaded


def _event(task_id: str, stored: StoredEvent) -> MAILEvent:
    data = stored.data
    return MAILEvent(
        event=stored.event,
        task_id=task_id,
        description=data.get("description", ""),
        extra_data=data.get("extra_data") or {},
        timestamp=data.get("timestamp"),
        seq=stored.seq,
    )
