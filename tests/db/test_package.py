"""mail.db's public surface, its factory and its import cost."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import mail.db
from mail.config import DatabaseConfig
from mail.db import (
    CallerKey,
    MemoryStore,
    PostgresStore,
    SQLiteStore,
    TaskRow,
    create_store,
    latest_version,
    open_store,
    prune_periodically,
)
from mail.errors import StorageError


def test_public_names() -> None:
    assert set(mail.db.__all__) == {
        "TaskStore",
        "CallerKey",
        "TaskRow",
        "EventRow",
        "BreakpointRow",
        "StashRow",
        "TaskChanges",
        "TaskDetails",
        "FINISHED_STATES",
        "MemoryStore",
        "SQLiteStore",
        "PostgresStore",
        "create_store",
        "open_store",
        "latest_version",
        "RetentionJob",
        "prune_periodically",
    }
    assert all(hasattr(mail.db, name) for name in mail.db.__all__)


def test_importing_mail_db_does_not_import_asyncpg() -> None:
    code = (
        "import sys, mail; assert 'mail.db' not in sys.modules; "
        "import mail.db; print('asyncpg' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    )
    assert result.stdout.strip() == "False"


def test_create_store_follows_the_backend(tmp_path: Path) -> None:
    assert isinstance(create_store(DatabaseConfig(persist=False)), MemoryStore)
    sqlite = create_store(DatabaseConfig(sqlite_path=str(tmp_path / "x.db")))
    assert isinstance(sqlite, SQLiteStore)
    assert sqlite.path == tmp_path / "x.db"
    postgres = create_store(DatabaseConfig(url="postgresql://u:pw@db.example:5433/mail"))
    assert isinstance(postgres, PostgresStore)
    assert "pw" not in repr(postgres)
    assert "db.example:5433/mail" in repr(postgres)
    # a URL with persist = false still means memory
    assert isinstance(
        create_store(DatabaseConfig(url="postgresql://x/y", persist=False)), MemoryStore
    )


async def test_open_store_opens(tmp_path: Path) -> None:
    store = await open_store(DatabaseConfig(sqlite_path=str(tmp_path / "deep" / "x.db")))
    try:
        assert store.backend == "sqlite"
        assert await store.schema_version() == latest_version("sqlite")
        assert await store.health() == "ok"
    finally:
        await store.close()


def test_latest_versions() -> None:
    assert latest_version("memory") == 0
    assert latest_version("sqlite") >= 1
    assert latest_version("postgres") >= 2


class _CountingStore(MemoryStore):
    """A memory store that tells when a prune has run."""

    def __init__(self) -> None:
        super().__init__()
        self.pruned = asyncio.Event()

    async def prune(
        self, *, older_than: timedelta | None = None, keep_last: int | None = None
    ) -> int:
        try:
            return await super().prune(older_than=older_than, keep_last=keep_last)
        finally:
            self.pruned.set()


async def test_prune_periodically_prunes_and_survives_failures(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = _CountingStore()
    await store.open()
    key = CallerKey(swarm="s", role="user", id="u")
    old = datetime.now(UTC) - timedelta(days=2)
    await store.save_task(
        key, TaskRow(task_id="t", task_owner="o", state="completed", start_time=old, updated_at=old)
    )
    errors: list[StorageError] = []
    two_errors = asyncio.Event()

    def on_error(error: StorageError) -> None:
        errors.append(error)
        if len(errors) >= 2:
            two_errors.set()

    job = asyncio.ensure_future(
        prune_periodically(store, every=0.01, older_than=timedelta(days=1), on_error=on_error)
    )
    try:
        await asyncio.wait_for(store.pruned.wait(), 5)
        assert await store.load_tasks(key) == []
        with caplog.at_level(logging.WARNING, logger="mail.db"):
            await store.close()  # every prune now fails: reported, and the job goes on
            await asyncio.wait_for(two_errors.wait(), 5)
        assert not job.done()
        assert "prune failed" in str(errors[0])
        assert any("retention" in r.getMessage() for r in caplog.records)
    finally:
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
