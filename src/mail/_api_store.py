"""``StoreSink``: one caller's part of a ``mail.db.TaskStore``, as the runtime's sink.

The runtime (``mail.core``) writes through :class:`mail.core._persist.TaskSink`, plain
snapshots; this adapter turns them into the store's rows for one
:class:`mail.db.CallerKey` and back.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from mail.core._persist import StoredEvent, StoredTask, TaskSnapshot, TaskWriteError, WriteBatch

if TYPE_CHECKING:
    from mail.db import CallerKey, TaskStore

__all__ = ["StoreSink"]


class StoreSink:
    """Writes and loads the tasks of ``key`` in ``store``."""

    def __init__(self, store: TaskStore, key: CallerKey) -> None:
        self.store = store
        self.key = key

    async def write(self, batch: WriteBatch) -> None:
        """Apply ``batch``; raises :class:`TaskWriteError` naming the tasks whose rows were
        not stored (``from`` the first failure)."""
        from mail.db import BreakpointRow, EventRow, StashRow, TaskRow  # noqa: PLC0415

        store, key = self.store, self.key
        # fired together: the store applies them in call order and commits them in groups;
        # ``owners[i]`` is the task the i-th write belongs to
        owners = [t.task_id for t in batch.tasks]
        calls = [store.save_task(key, TaskRow(**_fields(t))) for t in batch.tasks]
        for task_id, events in batch.events.items():
            owners.append(task_id)
            calls.append(
                store.append_events(
                    key,
                    [
                        EventRow(
                            task_id=task_id,
                            seq=e.seq,
                            event=e.event,
                            data=e.data,
                            data_json=e.data_json,
                        )
                        for e in events
                    ],
                )
            )
        for t, a, h, f in batch.histories:
            owners.append(t)
            calls.append(store.save_history(key, t, a, h, f))
        for t, m in batch.responses:
            owners.append(t)
            calls.append(store.save_response(key, t, m))
        for task_id, rows in batch.breakpoints.items():
            owners.append(task_id)
            calls.append(
                store.save_breakpoints(
                    key,
                    task_id,
                    [
                        BreakpointRow(call_id=c, agent=a, call=call, normalized=n)
                        for c, a, call, n in rows
                    ],
                )
            )
        for task_id, stash in batch.stashes.items():
            owners.append(task_id)
            calls.append(
                store.save_stash(
                    key, task_id, [StashRow(priority=p, seq=s, message=m) for p, s, m in stash]
                )
            )
        results = await asyncio.gather(*calls, return_exceptions=True)
        _raise_failures(owners, results)

    async def load(self) -> list[StoredTask]:
        store, key = self.store, self.key
        loaded: list[StoredTask] = []
        for row in await store.load_tasks(key):
            tid = row.task_id
            events, histories, response, breakpoints, stash = await asyncio.gather(
                store.load_events(key, tid),
                store.load_histories(key, tid),
                store.load_response(key, tid),
                store.load_breakpoints(key, tid),
                store.load_stash(key, tid),
            )
            loaded.append(
                StoredTask(
                    record=TaskSnapshot(
                        task_id=tid,
                        task_owner=row.task_owner,
                        task_contributors=list(row.task_contributors),
                        remote_swarms=list(row.remote_swarms),
                        state=row.state,
                        title=row.title,
                        start_time=row.start_time,
                        updated_at=row.updated_at,
                    ),
                    events=[
                        StoredEvent(seq=e.seq, event=e.event, data=e.data, data_json=e.data_json)
                        for e in events
                    ],
                    histories=histories,
                    response=response,
                    breakpoints=[(b.call_id, b.agent, b.call, b.normalized) for b in breakpoints],
                    stash=[(s.priority, s.seq, s.message) for s in stash],
                )
            )
        return loaded


def _fields(t: TaskSnapshot) -> dict[str, Any]:
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


def _raise_failures(owners: list[str], results: list[Any]) -> None:
    failures: dict[str, str] = {}
    first: BaseException | None = None
    for task_id, result in zip(owners, results, strict=True):
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                raise result  # cancellation and the like: not a storage failure
            first = first or result
            failures.setdefault(task_id, str(result) or type(result).__name__)
    if first is not None:
        raise TaskWriteError(str(first) or type(first).__name__, failures) from first
