"""Throughput of event appends per store: printed for the record, not asserted.

10,000 events in batches of 13 (about one task's events): appended one batch at a time,
each awaited ("sequential"); all batches at once, the group commit's case ("concurrent");
and all at once with the JSON text already given (``EventRow.data_json``, as when the SSE
frame's text is reused: "pre-encoded"). Each figure is events/s of wall time and the CPU
time per event of the event loop's thread and of this process's other threads (the SQLite
thread; the PostgreSQL server's own work is not counted).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable

import pytest

from mail.db import CallerKey, EventRow, TaskStore

EVENTS = 10_000
BATCH = 13
KEY = CallerKey(swarm="demo", role="user", id="bench")


def _batches(prefix: str, *, encoded: bool = False) -> list[list[EventRow]]:
    batches: list[list[EventRow]] = []
    for start in range(0, EVENTS, BATCH):
        task_id = f"{prefix}-{start // BATCH}"
        batch: list[EventRow] = []
        for seq in range(1, min(BATCH, EVENTS - start) + 1):
            data = {
                "timestamp": "2025-01-01T12:00:00.000000+00:00",
                "description": "sending message:\n\n<incoming_message>...</incoming_message>" * 4,
                "task_id": task_id,
                "extra_data": {"full_message": {"id": "m", "body": "x" * 200}},
            }
            text = json.dumps(data, separators=(",", ":")) if encoded else None
            batch.append(
                EventRow(task_id=task_id, seq=seq, event="new_message", data=data, data_json=text)
            )
        batches.append(batch)
    return batches


async def test_event_append_throughput(
    store: TaskStore, store_kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    figures: list[str] = []

    async def sequential(batches: list[list[EventRow]]) -> None:
        for batch in batches:
            await store.append_events(KEY, batch)

    async def concurrent(batches: list[list[EventRow]]) -> None:
        await asyncio.gather(*(store.append_events(KEY, batch) for batch in batches))

    async def measure(
        label: str, run: Callable[[list[list[EventRow]]], Awaitable[None]], *, encoded: bool = False
    ) -> None:
        batches = _batches(label, encoded=encoded)
        wall, cpu, loop = time.perf_counter(), time.process_time(), time.thread_time()
        await run(batches)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        loop = time.thread_time() - loop
        others = max(cpu - loop, 0.0)  # the two clocks tick differently: no negative noise
        figures.append(
            f"{label} {EVENTS / wall:,.0f}/s, CPU/event {loop / EVENTS * 1e6:.1f} µs loop"
            f" + {others / EVENTS * 1e6:.1f} µs other threads"
        )
        stored = await store.load_events(KEY, f"{label}-0")
        assert [e.seq for e in stored] == list(range(1, BATCH + 1))

    await measure("sequential", sequential)
    await measure("concurrent", concurrent)
    await measure("pre-encoded", concurrent, encoded=True)
    with capsys.disabled():
        print(f"\n[{store_kind}] {EVENTS:,} events in batches of {BATCH}: " + "; ".join(figures))
