"""The in-memory store: tests, ``--no-persist`` and the reference for the other two."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta

from mail.db.store import (
    FINISHED_STATES,
    BreakpointRow,
    CallerKey,
    EventRow,
    StashRow,
    TaskChanges,
    TaskDetails,
    TaskRow,
    TaskStore,
    checked_text,
    dumps,
    foreign_rows,
    loads,
    merged,
    prune_cutoff,
    utc,
)
from mail.errors import StorageError

__all__ = ["MemoryStore"]


@dataclass(slots=True)
class _Task:
    """Everything stored for one task, JSON as text (so that callers get copies)."""

    row: TaskRow | None = None
    events: dict[int, tuple[str, str]] = field(default_factory=dict)
    histories: dict[str, str] = field(default_factory=dict)
    response: str | None = None
    breakpoints: list[tuple[str, str, str, str]] = field(default_factory=list)
    stash: list[tuple[int, int, str]] = field(default_factory=list)


def _copy(row: TaskRow) -> TaskRow:
    contributors, remote = list(row.task_contributors), list(row.remote_swarms)
    request = None if row.request is None else dict(row.request)
    return replace(row, task_contributors=contributors, remote_swarms=remote, request=request)


def _staged(c: TaskChanges) -> _Task:
    """``c`` encoded as it will be stored (raising before anything is)."""
    staged = _Task()
    if c.task is not None:
        row = _copy(c.task)
        row.start_time, row.updated_at = utc(row.start_time), utc(row.updated_at)
        dumps([row.task_contributors, row.remote_swarms, row.title, row.request])  # as in SQL
        checked_text(row.task_owner, "the task owner")
        staged.row = row
    staged.events = {int(e.seq): (str(e.event), dumps(e.data)) for e in reversed(c.events)}
    staged.histories = {
        checked_text(agent, "an agent name"): dumps(history) for agent, history, _ in c.histories
    }
    staged.response = None if c.response is None else dumps(c.response)
    if c.breakpoints is not None:
        staged.breakpoints = [
            (
                checked_text(b.call_id, "a breakpoint call id"),
                checked_text(b.agent, "an agent name"),
                dumps(b.call),
                dumps(b.normalized),
            )
            for b in c.breakpoints
        ]
    if c.stash is not None:
        staged.stash = [(int(s.priority), int(s.seq), dumps(s.message)) for s in c.stash]
    return staged


class MemoryStore(TaskStore):
    """A :class:`~mail.db.store.TaskStore` kept in dictionaries, lost with the object.

    Data is encoded as JSON on write as the other stores do, so what they refuse
    (values JSON cannot hold) this one refuses too. Closing and reopening the same object
    keeps its data.
    """

    backend = "memory"
    name = "memory store"

    def __init__(self) -> None:
        super().__init__()
        self._open = False
        self._tasks: dict[tuple[CallerKey, str], _Task] = {}

    def __repr__(self) -> str:
        return "MemoryStore()"

    async def open(self) -> None:
        self._open = True

    async def close(self) -> None:
        self._open = False

    def _check(self, op: str) -> None:
        if not self._open:
            raise self.failure(op, "the store is not open")

    async def _save(
        self, op: str, key: CallerKey, changes: Sequence[TaskChanges]
    ) -> dict[str, StorageError]:
        self._check(op)
        failures: dict[str, StorageError] = {}
        for c in merged(changes):
            problem = foreign_rows(c)
            if problem is None and c.lease is not None:
                problem = "this store keeps no task leases (cluster mode needs PostgreSQL)"
            if problem is not None:
                failures[c.task_id] = self.refusal(op, problem)
                continue
            try:
                checked_text(c.task_id, "the task id")
                staged = _staged(c)
            except (TypeError, ValueError) as e:
                failures[c.task_id] = self.refusal(op, e)
                continue
            task = self._tasks.setdefault((key, c.task_id), _Task())
            task.row = staged.row or task.row
            for seq, event in staged.events.items():
                task.events.setdefault(seq, event)  # the first write of a seq wins
            task.histories.update(staged.histories)
            task.response = staged.response or task.response
            if c.breakpoints is not None:
                task.breakpoints = staged.breakpoints
            if c.stash is not None:
                task.stash = staged.stash
        return failures

    async def load_tasks(self, key: CallerKey) -> list[TaskRow]:
        self._check("load_tasks")
        rows = [t.row for (k, _), t in self._tasks.items() if k == key and t.row is not None]
        return [_copy(row) for row in sorted(rows, key=lambda row: row.start_time)]

    async def load_task(self, key: CallerKey, task_id: str) -> TaskRow | None:
        self._check("load_task")
        task = self._tasks.get((key, task_id))
        return None if task is None or task.row is None else _copy(task.row)

    async def load_events(
        self, key: CallerKey, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[EventRow]:
        self._check("load_events")
        task = self._tasks.get((key, task_id))
        if task is None:
            return []
        seqs = sorted(s for s in task.events if s > after)[:limit]
        events = [(s, *task.events[s]) for s in seqs]
        return [EventRow(task_id=task_id, seq=s, event=n, data=loads(d)) for s, n, d in events]

    async def load_details(self, key: CallerKey, task_ids: Sequence[str]) -> dict[str, TaskDetails]:
        self._check("load_details")
        found: dict[str, TaskDetails] = {}
        for task_id in dict.fromkeys(task_ids):
            task = self._tasks.get((key, task_id))
            if task is None:
                continue
            details = TaskDetails(
                events=await self.load_events(key, task_id),
                histories={agent: loads(text) for agent, text in task.histories.items()},
                response=None if task.response is None else dict(loads(task.response)),
                breakpoints=[
                    BreakpointRow(call_id=c, agent=a, call=loads(call), normalized=loads(n))
                    for c, a, call, n in task.breakpoints
                ],
                stash=[StashRow(priority=p, seq=s, message=loads(m)) for p, s, m in task.stash],
            )
            if details != TaskDetails():  # as the SQL stores: only tasks with such rows
                found[task_id] = details
        return found

    async def prune(
        self, *, older_than: timedelta | None = None, keep_last: int | None = None
    ) -> int:
        self._check("prune")
        cutoff = prune_cutoff(older_than, keep_last)
        finished = sorted(
            (
                (t.row.updated_at, t.row.start_time, task_key)
                for task_key, t in self._tasks.items()
                if t.row is not None and t.row.state in FINISHED_STATES
            ),
            key=lambda item: (item[0], item[1]),
            reverse=True,
        )
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
        return "ok" if self._open else "closed"

    async def schema_version(self) -> int:
        self._check("schema_version")
        return 0
