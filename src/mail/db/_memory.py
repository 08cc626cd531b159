"""The in-memory store: tests, ``--no-persist`` and the reference for the other two."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from mail.db._common import (
    changes_from_batch,
    check_changes,
    dumps,
    event_json,
    loads,
    prune_cutoff,
    reported,
    utc,
)
from mail.db.store import (
    FINISHED_STATES,
    BreakpointRow,
    CallerKey,
    EventRow,
    StashRow,
    TaskChanges,
    TaskDetails,
    TaskRow,
)
from mail.errors import StorageError

if TYPE_CHECKING:
    from mail.core._persist import WriteBatch

__all__ = ["MemoryStore"]

_TaskKey = tuple[CallerKey, str]


@dataclass(slots=True)
class _Task:
    """Everything stored for one task; JSON text is kept so that callers get copies."""

    row: TaskRow | None = None
    event_seqs: list[int] = field(default_factory=list)
    events: dict[int, tuple[str, str]] = field(default_factory=dict)
    histories: dict[str, tuple[str, str]] = field(default_factory=dict)
    response: str | None = None
    breakpoints: list[tuple[str, str, str, str]] = field(default_factory=list)
    stash: list[tuple[int, int, str]] = field(default_factory=list)


def _copy_task(row: TaskRow) -> TaskRow:
    return TaskRow(
        task_id=row.task_id,
        task_owner=row.task_owner,
        task_contributors=list(row.task_contributors),
        remote_swarms=list(row.remote_swarms),
        state=row.state,
        title=row.title,
        start_time=row.start_time,
        updated_at=row.updated_at,
    )


def _stored_task(task: TaskRow) -> TaskRow:
    """A copy of ``task`` with UTC datetimes, checked to be JSON like the SQL stores'."""
    row = _copy_task(task)
    row.start_time, row.updated_at = utc(task.start_time), utc(task.updated_at)
    dumps([row.task_contributors, row.remote_swarms, row.title])
    return row


_Event = tuple[str, int, str, str]


def _encode_events(rows: Sequence[EventRow]) -> list[_Event]:
    return [(r.task_id, int(r.seq), r.event, event_json(r)) for r in rows]


def _encode_breakpoints(rows: Sequence[BreakpointRow]) -> list[tuple[str, str, str, str]]:
    return [(r.call_id, r.agent, dumps(r.call), dumps(r.normalized)) for r in rows]


def _encode_stash(rows: Sequence[StashRow]) -> list[tuple[int, int, str]]:
    return [(int(r.priority), int(r.seq), dumps(r.message)) for r in rows]


def _put_events(task: _Task, events: Sequence[_Event]) -> None:
    """Store ``task``'s events, ignoring sequence numbers it has."""
    for _, seq, event, data in events:
        if seq in task.events:
            continue
        task.events[seq] = (event, data)
        if not task.event_seqs or seq > task.event_seqs[-1]:
            task.event_seqs.append(seq)
        else:
            bisect.insort(task.event_seqs, seq)


class MemoryStore:
    """A :class:`~mail.db.store.TaskStore` kept in dictionaries, lost with the object.

    Data is serialized to JSON on write exactly as the other stores do, so what they
    reject (non-JSON values) this one rejects too. Closing and reopening the same object
    keeps its data. Every method raises :class:`mail.errors.StorageError` when the store
    is not open or a value cannot be stored.
    """

    backend = "memory"

    def __init__(self) -> None:
        self._open = False
        self._tasks: dict[_TaskKey, _Task] = {}

    def __repr__(self) -> str:
        return "MemoryStore()"

    async def __aenter__(self) -> MemoryStore:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Mark the store open (nothing to connect to)."""
        self._open = True

    async def close(self) -> None:
        """Mark the store closed; its data stays with the object."""
        self._open = False

    def _check(self, op: str) -> None:
        if not self._open:
            raise StorageError(f"memory store: {op} failed: the store is not open")

    def _task(self, key: CallerKey, task_id: str) -> _Task:
        return self._tasks.setdefault((key, task_id), _Task())

    def _peek(self, key: CallerKey, task_id: str) -> _Task | None:
        return self._tasks.get((key, task_id))

    # -- writes ---------------------------------------------------------------------------

    def _apply(self, op: str, key: CallerKey, changes: TaskChanges) -> None:
        self._check(op)
        with reported("memory store", op):
            apply = self._stage(key, changes)
        apply()

    def _stage(self, key: CallerKey, c: TaskChanges) -> Callable[[], None]:
        """Encode all of ``c`` (raising before anything is stored), then return what stores it."""
        check_changes(c)
        row = None if c.task is None else _stored_task(c.task)
        events = _encode_events(c.events)
        histories = [(agent, fmt, dumps(history)) for agent, history, fmt in c.histories]
        response = None if c.response is None else dumps(c.response)
        breakpoints = None if c.breakpoints is None else _encode_breakpoints(c.breakpoints)
        stash = None if c.stash is None else _encode_stash(c.stash)

        def apply() -> None:
            task = self._task(key, c.task_id)
            if row is not None:
                task.row = row
            _put_events(task, events)
            for agent, fmt, text in histories:
                task.histories[agent] = (fmt, text)
            if response is not None:
                task.response = response
            if breakpoints is not None:
                task.breakpoints = breakpoints
            if stash is not None:
                task.stash = stash

        return apply

    async def save_task(self, key: CallerKey, task: TaskRow) -> None:
        """Insert or replace a task record."""
        self._apply("save_task", key, TaskChanges(task_id=task.task_id, task=task))

    async def append_events(self, key: CallerKey, rows: Sequence[EventRow]) -> None:
        """Store events, ignoring sequence numbers already stored."""
        self._check("append_events")
        with reported("memory store", "append_events"):
            encoded = _encode_events(rows)
        for task_id, seq, event, data in encoded:
            _put_events(self._task(key, task_id), [(task_id, seq, event, data)])

    async def save_history(
        self,
        key: CallerKey,
        task_id: str,
        agent: str,
        history: list[dict[str, Any]],
        tool_format: str,
    ) -> None:
        """Replace an agent's current history in a task."""
        changes = TaskChanges(task_id=task_id, histories=[(agent, history, tool_format)])
        self._apply("save_history", key, changes)

    async def save_response(self, key: CallerKey, task_id: str, message: dict[str, Any]) -> None:
        """Insert or replace a task's final response."""
        self._apply("save_response", key, TaskChanges(task_id=task_id, response=message))

    async def save_breakpoints(
        self, key: CallerKey, task_id: str, rows: Sequence[BreakpointRow]
    ) -> None:
        """Replace a task's pending breakpoint calls."""
        changes = TaskChanges(task_id=task_id, breakpoints=list(rows))
        self._apply("save_breakpoints", key, changes)

    async def save_stash(self, key: CallerKey, task_id: str, rows: Sequence[StashRow]) -> None:
        """Replace a task's stashed messages."""
        self._apply("save_stash", key, TaskChanges(task_id=task_id, stash=list(rows)))

    async def save_changes(
        self, key: CallerKey, changes: Sequence[TaskChanges]
    ) -> dict[str, StorageError]:
        """Store many tasks' changes, each task's all or nothing; returns the failed tasks'
        errors (see :meth:`mail.db.store.TaskStore.save_changes`)."""
        self._check("save_changes")
        failures: dict[str, StorageError] = {}
        staged: dict[str, list[Callable[[], None]]] = {}
        for c in changes:
            if c.task_id in failures:
                continue
            try:
                with reported("memory store", "save_changes"):
                    apply = self._stage(key, c)
            except StorageError as e:
                failures[c.task_id] = e
                staged.pop(c.task_id, None)
                continue
            staged.setdefault(c.task_id, []).append(apply)
        for applies in staged.values():
            for apply in applies:
                apply()
        return failures

    async def save_batch(self, key: CallerKey, batch: WriteBatch) -> dict[str, StorageError]:
        """Store a runtime's batch (see :meth:`mail.db.store.TaskStore.save_batch`)."""
        return await self.save_changes(key, list(changes_from_batch(batch).values()))

    # -- reads ----------------------------------------------------------------------------

    async def load_tasks(self, key: CallerKey) -> list[TaskRow]:
        """Return the caller's tasks, oldest first."""
        self._check("load_tasks")
        rows = [
            task.row
            for (owner, _), task in self._tasks.items()
            if owner == key and task.row is not None
        ]
        return [_copy_task(row) for row in sorted(rows, key=lambda row: row.start_time)]

    async def load_task(self, key: CallerKey, task_id: str) -> TaskRow | None:
        """Return one task record, or ``None``."""
        self._check("load_task")
        task = self._peek(key, task_id)
        return None if task is None or task.row is None else _copy_task(task.row)

    async def load_events(
        self, key: CallerKey, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[EventRow]:
        """Return the events after ``after`` in order, at most ``limit``."""
        self._check("load_events")
        task = self._peek(key, task_id)
        if task is None:
            return []
        start = bisect.bisect_right(task.event_seqs, after)
        seqs = task.event_seqs[start:] if limit is None else task.event_seqs[start : start + limit]
        rows: list[EventRow] = []
        for seq in seqs:
            name, text = task.events[seq]
            rows.append(
                EventRow(task_id=task_id, seq=seq, event=name, data=loads(text), data_json=text)
            )
        return rows

    async def load_histories(self, key: CallerKey, task_id: str) -> dict[str, list[dict[str, Any]]]:
        """Return each agent's current history in a task."""
        self._check("load_histories")
        task = self._peek(key, task_id)
        if task is None:
            return {}
        return {agent: loads(text) for agent, (_, text) in task.histories.items()}

    async def load_response(self, key: CallerKey, task_id: str) -> dict[str, Any] | None:
        """Return a task's final response, or ``None``."""
        self._check("load_response")
        task = self._peek(key, task_id)
        if task is None or task.response is None:
            return None
        response: dict[str, Any] = loads(task.response)
        return response

    async def load_breakpoints(self, key: CallerKey, task_id: str) -> list[BreakpointRow]:
        """Return a task's pending breakpoint calls."""
        self._check("load_breakpoints")
        task = self._peek(key, task_id)
        if task is None:
            return []
        return [
            BreakpointRow(call_id=call_id, agent=agent, call=loads(call), normalized=loads(norm))
            for call_id, agent, call, norm in task.breakpoints
        ]

    async def load_stash(self, key: CallerKey, task_id: str) -> list[StashRow]:
        """Return a task's stashed messages."""
        self._check("load_stash")
        task = self._peek(key, task_id)
        if task is None:
            return []
        return [StashRow(priority=p, seq=s, message=loads(m)) for p, s, m in task.stash]

    async def load_details(self, key: CallerKey, task_ids: Sequence[str]) -> dict[str, TaskDetails]:
        """Return many tasks' events, histories, responses, breakpoints and stashes (see
        :meth:`mail.db.store.TaskStore.load_details`)."""
        self._check("load_details")
        found: dict[str, TaskDetails] = {}
        for task_id in dict.fromkeys(task_ids):
            details = TaskDetails(
                events=await self.load_events(key, task_id),
                histories=await self.load_histories(key, task_id),
                response=await self.load_response(key, task_id),
                breakpoints=await self.load_breakpoints(key, task_id),
                stash=await self.load_stash(key, task_id),
            )
            if details != TaskDetails():  # like the SQL stores: only tasks with rows
                found[task_id] = details
        return found

    # -- maintenance ----------------------------------------------------------------------

    async def prune(
        self, *, older_than: timedelta | None = None, keep_last: int | None = None
    ) -> int:
        """Delete finished tasks older than ``older_than`` or beyond ``keep_last``."""
        self._check("prune")
        cutoff = prune_cutoff(older_than, keep_last)
        finished: list[tuple[datetime, datetime, _TaskKey]] = [
            (task.row.updated_at, task.row.start_time, task_key)
            for task_key, task in self._tasks.items()
            if task.row is not None and task.row.state in FINISHED_STATES
        ]
        finished.sort(key=lambda item: (item[0], item[1]), reverse=True)
        doomed = [
            task_key
            for rank, (updated_at, _, task_key) in enumerate(finished, start=1)
            if (cutoff is not None and updated_at < cutoff)
            or (keep_last is not None and rank > keep_last)
        ]
        for task_key in doomed:
            del self._tasks[task_key]
        return len(doomed)

    async def health(self) -> str:
        """``"ok"`` while open, else ``"closed"``."""
        return "ok" if self._open else "closed"

    async def schema_version(self) -> int:
        """Always 0: the memory store has no schema."""
        self._check("schema_version")
        return 0
