"""``StoreSink``: one caller's part of a ``mail.db.TaskStore``, as the runtime's sink.

The runtime (``mail.core``) writes through :class:`mail.core._persist.TaskSink`, plain
snapshots; this adapter turns them into the store's rows for one
:class:`mail.db.CallerKey` and back.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from mail.core._persist import StoredEvent, StoredTask, TaskSnapshot, WriteBatch

if TYPE_CHECKING:
    from mail.db import CallerKey, TaskStore

__all__ = ["StoreSink"]


class StoreSink:
    """Writes and loads the tasks of ``key`` in ``store``."""

    def __init__(self, store: TaskStore, key: CallerKey) -> None:
        self.store = store
        self.key = key

    async def write(self, batch: WriteBatch) -> None:
        from mail.db import BreakpointRow, EventRow, StashRow, TaskRow  # noqa: PLC0415

        store, key = self.store, self.key
        # fired together: the store applies them in call order and commits them in groups
        calls = [store.save_task(key, TaskRow(**_fields(t))) for t in batch.tasks]
        calls.extend(
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
            for task_id, events in batch.events.items()
        )
        calls.extend(store.save_history(key, t, a, h, f) for t, a, h, f in batch.histories)
        calls.extend(store.save_response(key, t, m) for t, m in batch.responses)
        calls.extend(
            store.save_breakpoints(
                key,
                task_id,
                [
                    BreakpointRow(call_id=c, agent=a, call=call, normalized=n)
                    for c, a, call, n in rows
                ],
            )
            for task_id, rows in batch.breakpoints.items()
        )
        calls.extend(
            store.save_stash(
                key, task_id, [StashRow(priority=p, seq=s, message=m) for p, s, m in rows]
            )
            for task_id, rows in batch.stashes.items()
        )
        results = await asyncio.gather(*calls, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

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
