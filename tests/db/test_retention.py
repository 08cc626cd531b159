"""The background retention job over every store: what it prunes, what it keeps, failures."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from mail.db import CallerKey, EventRow, RetentionJob, TaskRow, TaskStore

pytestmark = pytest.mark.timeout(30)

WAIT = 10.0
_OLD = timedelta(days=3)
# state -> pruned when old (finished) or kept (running, paused, interrupted)
_STATES = {
    "completed": True,
    "failed": True,
    "cancelled": True,
    "running": False,
    "waiting_breakpoint": False,
    "interrupted": False,
}


async def _task(store: TaskStore, key: CallerKey, task_id: str, state: str, age: timedelta) -> None:
    when = datetime.now(UTC) - age
    await store.save_task(
        key, TaskRow(task_id=task_id, task_owner="o", state=state, start_time=when, updated_at=when)
    )
    data = {"timestamp": when.isoformat(), "description": "", "task_id": task_id, "extra_data": {}}
    await store.append_events(key, [EventRow(task_id=task_id, seq=1, event="e", data=data)])


async def test_job_prunes_old_finished_tasks_and_keeps_the_rest(
    store: TaskStore, key: Callable[..., CallerKey]
) -> None:
    k1, k2 = key(), key(role="admin", id="a1")
    for state in _STATES:
        await _task(store, k1, f"old-{state}", state, _OLD)
        await _task(store, k2, f"young-{state}", state, timedelta(minutes=5))
    job = RetentionJob(store, every=0.05, older_than=timedelta(days=1), first_after=0.0)
    runner = asyncio.create_task(job.run(), name="test-prune")
    try:
        await asyncio.wait_for(job.wait_runs(2), WAIT)
    finally:
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner
    kept = {t.task_id for t in await store.load_tasks(k1)}
    assert kept == {f"old-{s}" for s, pruned in _STATES.items() if not pruned}
    assert {t.task_id for t in await store.load_tasks(k2)} == {f"young-{s}" for s in _STATES}
    assert await store.load_events(k1, "old-completed") == []
    assert len(await store.load_events(k1, "old-running")) == 1
    assert (job.pruned, job.last_error) == (3, None)
    assert job.runs >= 2


async def test_job_keeps_only_the_newest_finished_tasks(
    store: TaskStore, key: Callable[..., CallerKey]
) -> None:
    k = key()
    for n in range(5):
        await _task(store, k, f"done-{n}", "completed", timedelta(hours=n + 1))
    await _task(store, k, "paused", "waiting_breakpoint", timedelta(days=9))
    job = RetentionJob(store, every=3600.0, keep_last=2)
    assert job.first_after == 10.0  # the first run comes shortly after start, not an hour
    assert await job.run_once() == 3
    assert {t.task_id for t in await store.load_tasks(k)} == {"done-0", "done-1", "paused"}


async def test_job_without_limits_prunes_nothing(
    store: TaskStore, key: Callable[..., CallerKey]
) -> None:
    await _task(store, key(), "ancient", "completed", timedelta(days=10_000))
    job = RetentionJob(store, every=0.05)
    assert await job.run_once() == 0
    assert [t.task_id for t in await store.load_tasks(key())] == ["ancient"]


async def test_failed_prunes_are_reported_and_the_job_goes_on(
    store: TaskStore, key: Callable[..., CallerKey], caplog: pytest.LogCaptureFixture
) -> None:
    await _task(store, key(), "old", "completed", _OLD)
    errors: list[Exception] = []
    job = RetentionJob(
        store, every=0.02, older_than=timedelta(days=1), first_after=0.0, on_error=errors.append
    )
    await store.close()  # every prune now fails
    runner = asyncio.create_task(job.run(), name="test-prune")
    try:
        with caplog.at_level(logging.WARNING, logger="mail.db"):
            await asyncio.wait_for(job.wait_runs(3), WAIT)
        assert not runner.done()
        assert job.last_error is not None
        assert "prune failed" in job.last_error
        assert len(errors) >= 3
        assert any(r.getMessage().startswith("retention: ") for r in caplog.records)
        await store.open()  # the store is back: the next prune works and clears the error
        runs = job.runs
        await asyncio.wait_for(job.wait_runs(runs + 1), WAIT)
        assert job.last_error is None
    finally:
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner
    assert await store.load_tasks(key()) == []
