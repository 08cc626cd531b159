"""``StoreSink``: one caller's part of a ``mail.db.TaskStore``, as the runtime's sink.

The runtime (``mail.core``) writes through :class:`mail.core._persist.TaskSink`, plain
snapshots; this adapter turns them into the store's rows for one
:class:`mail.db.CallerKey` and back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mail.core._persist import StoredEvent, StoredTask, TaskSnapshot, TaskWriteError, WriteBatch
from mail.errors import StorageError

if TYPE_CHECKING:
    from mail.db import CallerKey, TaskDetails, TaskRow, TaskStore

__all__ = ["StoreSink"]


class StoreSink:
    """Writes and loads the tasks of ``key`` in ``store``."""

    def __init__(self, store: TaskStore, key: CallerKey) -> None:
        self.store = store
        self.key = key

    async def write(self, batch: WriteBatch) -> None:
        """Apply ``batch`` with one :meth:`~mail.db.TaskStore.save_batch` call; raises
        :class:`TaskWriteError` naming the tasks whose rows were not stored (``from`` the
        first failure)."""
        try:
            failures = await self.store.save_batch(self.key, batch)
        except StorageError as e:  # nothing was tried (a closed store): every task failed
            reason = str(e) or type(e).__name__
            raise TaskWriteError(reason, dict.fromkeys(batch.records_by_task(), reason)) from e
        if failures:
            first = next(iter(failures.values()))
            texts = {task_id: str(e) or type(e).__name__ for task_id, e in failures.items()}
            raise TaskWriteError(str(first) or type(first).__name__, texts) from first

    async def load(self, keep_finished: int | None = None) -> list[StoredTask]:
        """The caller's stored tasks, oldest first (see :meth:`TaskSink.load`): the task
        records, then the rest of the kept ones in one
        :meth:`~mail.db.TaskStore.load_details` call."""
        from mail.db import TaskDetails  # noqa: PLC0415

        rows = _kept(await self.store.load_tasks(self.key), keep_finished)
        details = await self.store.load_details(self.key, [row.task_id for row in rows])
        return [_stored(row, details.get(row.task_id) or TaskDetails()) for row in rows]


def _stored(row: TaskRow, details: TaskDetails) -> StoredTask:
    return StoredTask(
        record=TaskSnapshot(**_fields(row)),
        events=[
            StoredEvent(seq=e.seq, event=e.event, data=e.data, data_json=e.data_json)
            for e in details.events
        ],
        histories=details.histories,
        response=details.response,
        breakpoints=[(b.call_id, b.agent, b.call, b.normalized) for b in details.breakpoints],
        stash=[(s.priority, s.seq, s.message) for s in details.stash],
    )


def _fields(t: TaskSnapshot | TaskRow) -> dict[str, Any]:
    """A task record's fields, the same in the runtime's snapshot and the store's row."""
    return {
        "task_id": t.task_id,
        "task_owner": t.task_owner,
        "task_contributors": t.task_contributors,
        "remote_swarms": t.remote_swarms,
        "state": t.state,
        "title": t.title,
        "start_time": t.start_time,
        "updated_at": t.updated_at,
    }


_KEPT_STATES = frozenset({"running", "waiting_breakpoint"})


def _kept(rows: list[TaskRow], keep_finished: int | None) -> list[TaskRow]:
    """``rows`` (oldest first) without the finished ones beyond the newest ``keep_finished``."""
    if keep_finished is None:
        return rows
    others = [r for r in rows if r.state not in _KEPT_STATES]
    newest = {r.task_id for r in others[len(others) - keep_finished :]} if keep_finished else set()
    return [r for r in rows if r.state in _KEPT_STATES or r.task_id in newest]
