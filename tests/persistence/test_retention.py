"""The server's retention job: configured in [database], run by the lifespan, reported by
/health when it fails, cancelled at shutdown."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.persistence.conftest import KEY, Running, running, server_config, sqlite_execute

from mail.config import MAILConfig
from mail.db import SQLiteStore, TaskRow

pytestmark = pytest.mark.timeout(60)

WAIT = 10.0
_FINISHED = ("completed", "failed", "cancelled")
_UNFINISHED = ("running", "waiting_breakpoint", "interrupted")


async def _seed(config: MAILConfig) -> None:
    """Old tasks in every state and one young finished task, written before the start."""
    old = datetime.now(UTC) - timedelta(days=3)
    now = datetime.now(UTC)
    async with SQLiteStore(config.database.sqlite_path) as store:
        for state in (*_FINISHED, *_UNFINISHED):
            row = TaskRow(
                task_id=f"old-{state}", task_owner="o", state=state, start_time=old, updated_at=old
            )
            await store.save_task(KEY, row)
        young = TaskRow(
            task_id="young", task_owner="o", state="completed", start_time=now, updated_at=now
        )
        await store.save_task(KEY, young)


def _prune_task(server: Running) -> asyncio.Task[object]:
    return next(t for t in server.state.background if t.get_name() == "mail-prune")


async def test_lifespan_prunes_old_finished_tasks(tmp_path: Path) -> None:
    config = server_config(tmp_path, retention_days=1, prune_interval=0.05)
    await _seed(config)
    async with running(config) as server:
        job = server.state.retention
        assert job is not None
        assert job.first_after == 0.05
        task = _prune_task(server)
        await asyncio.wait_for(job.wait_runs(1), WAIT)
        assert server.state.store is not None
        kept = {t.task_id for t in await server.state.store.load_tasks(KEY)}
        assert kept == {"young", *(f"old-{s}" for s in _UNFINISHED)}
        health = (await server.client.get("/health")).json()
        assert (health["status"], health["storage"]) == ("healthy", "ok")
    # the lifespan cancelled its job and waited for it
    assert task.cancelled()
    assert not server.state.background


async def test_no_job_when_retention_is_off(tmp_path: Path) -> None:
    config = server_config(tmp_path, retention_days=0, prune_interval=0.05)
    async with running(config) as server:
        assert server.state.retention is None
        assert not [t for t in server.state.background if t.get_name() == "mail-prune"]


async def test_failed_prune_is_reported_by_health_and_the_server_goes_on(
    tmp_path: Path,
) -> None:
    config = server_config(tmp_path, retention_days=1, prune_interval=0.05)
    await _seed(config)
    path = config.database.sqlite_path
    # deleting a task fails inside SQLite, as an I/O error would: every prune fails
    sqlite_execute(
        path,
        "CREATE TRIGGER refuse_delete BEFORE DELETE ON tasks "
        "BEGIN SELECT RAISE(ABORT, 'injected failure: disk I/O error'); END",
    )
    async with running(config) as server:
        job = server.state.retention
        assert job is not None
        await asyncio.wait_for(job.wait_runs(2), WAIT)
        health = (await server.client.get("/health")).json()
        assert health["status"] == "degraded"
        assert "prune failed" in health["storage"]
        assert "injected failure" in health["storage"]
        assert not _prune_task(server).done()
        # the server keeps serving: a task runs and completes
        answer = (await server.client.post("/message", json={"body": "hello"})).json()
        assert answer["response"] == "done: hello"
        sqlite_execute(path, "DROP TRIGGER refuse_delete")
        await asyncio.wait_for(job.wait_runs(job.runs + 1), WAIT)
        assert job.last_error is None
        health = (await server.client.get("/health")).json()
        assert (health["status"], health["storage"]) == ("healthy", "ok")
        assert server.state.store is not None
        assert "old-completed" not in {t.task_id for t in await server.state.store.load_tasks(KEY)}


async def test_a_prune_that_failed_shows_only_until_a_write_works(tmp_path: Path) -> None:
    """A prune that failed while the store failed (a short outage) does not keep /health
    degraded for the hour until the next prune: the next write that works clears it."""
    config = server_config(tmp_path, retention_days=1, prune_interval=3600)
    await _seed(config)
    path = config.database.sqlite_path
    sqlite_execute(
        path,
        "CREATE TRIGGER refuse_delete BEFORE DELETE ON tasks "
        "BEGIN SELECT RAISE(ABORT, 'injected failure: disk I/O error'); END",
    )
    async with running(config) as server:
        job = server.state.retention
        assert job is not None
        assert await job.run_once() == 0  # fails (the server's own first run is 10 s away)
        health = (await server.client.get("/health")).json()
        assert health["status"] == "degraded"
        assert "injected failure" in health["storage"]
        sqlite_execute(path, "DROP TRIGGER refuse_delete")  # the outage is over
        answer = (await server.client.post("/message", json={"body": "hello"})).json()
        assert answer["response"] == "done: hello"  # a write that works
        assert job.last_error is not None  # no prune ran since
        health = (await server.client.get("/health")).json()
        assert (health["status"], health["storage"]) == ("healthy", "ok")
