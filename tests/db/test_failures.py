"""Storage failures are reported as StorageError (naming the store and the operation)."""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from mail.db import CallerKey, EventRow, PostgresStore, SQLiteStore, TaskRow
from mail.errors import ConfigurationError, StorageError

KEY = CallerKey(swarm="demo", role="user", id="u1")


def _events(task_id: str, first: int, count: int, size: int = 2000) -> list[EventRow]:
    return [
        EventRow(task_id=task_id, seq=s, event="e", data={"pad": "x" * size})
        for s in range(first, first + count)
    ]


# -- SQLite -------------------------------------------------------------------------------


async def test_sqlite_path_that_is_a_directory(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path)
    with pytest.raises(StorageError, match=r"sqlite store \(.*\): open failed"):
        await store.open()
    assert await store.health() == "closed"


async def test_sqlite_parent_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(StorageError, match="open failed") as info:
        await SQLiteStore(tmp_path / "file" / "mail.db").open()
    assert isinstance(info.value.__cause__, OSError)


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="running as root, which ignores directory permissions",
)
async def test_sqlite_read_only_directory(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(StorageError, match="open failed"):
            await SQLiteStore(locked / "mail.db").open()
    finally:
        locked.chmod(0o700)


async def test_sqlite_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "mail.db"
    path.write_bytes(b"this is not a database, just bytes" * 200)
    with pytest.raises(StorageError, match="open failed") as info:
        await SQLiteStore(path).open()
    assert isinstance(info.value.__cause__, sqlite3.DatabaseError)


async def test_sqlite_disk_full_is_reported_and_reads_go_on(tmp_path: Path) -> None:
    # max_page_count caps the file: SQLite then fails exactly as on a full disk
    store = SQLiteStore(tmp_path / "mail.db", pragmas={"max_page_count": 40})
    await store.open()
    try:
        now = datetime.now(UTC)
        task = TaskRow(task_id="t1", task_owner="o", start_time=now, updated_at=now)
        await store.save_task(KEY, task)
        await store.append_events(KEY, _events("t1", 1, 3))
        with pytest.raises(StorageError, match=r"sqlite store .*append_events failed: .*full"):
            await store.append_events(KEY, _events("t1", 4, 200))
        health = await store.health()
        assert health != "ok"
        assert "full" in health
        # what was stored is still served, and nothing of the failed batch is
        assert await store.load_task(KEY, "t1") == task
        assert [e.seq for e in await store.load_events(KEY, "t1")] == [1, 2, 3]
        # a write that fits commits again, and health recovers with it
        await store.append_events(KEY, _events("t1", 4, 1, size=10))
        assert await store.health() == "ok"
    finally:
        await store.close()


async def test_sqlite_failed_write_fails_alone_in_its_batch(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "mail.db", pragmas={"max_page_count": 40})
    await store.open()
    try:
        results = await asyncio.gather(
            store.append_events(KEY, _events("small", 1, 1, size=10)),
            store.append_events(KEY, _events("huge", 1, 200)),
            store.append_events(KEY, _events("small", 2, 1, size=10)),
            return_exceptions=True,
        )
        assert results[0] is None
        assert isinstance(results[1], StorageError)
        assert results[2] is None
        assert [e.seq for e in await store.load_events(KEY, "small")] == [1, 2]
        assert await store.load_events(KEY, "huge") == []
    finally:
        await store.close()


async def test_sqlite_bad_pragma_is_refused(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "mail.db", pragmas={"cache_size; DROP TABLE tasks": 1})
    with pytest.raises(StorageError, match="bad pragma"):
        await store.open()


async def test_sqlite_uses_wal_mode(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "mail.db"):
        pass
    conn = sqlite3.connect(tmp_path / "mail.db")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


async def test_sqlite_new_database_has_8k_pages_and_an_old_one_keeps_its_own(
    tmp_path: Path,
) -> None:
    old = sqlite3.connect(tmp_path / "old.db")  # made elsewhere, with 4 KB pages
    old.execute("PRAGMA page_size = 4096")
    old.execute("CREATE TABLE other (x)")
    old.close()
    now = datetime.now(UTC)
    task = TaskRow(task_id="t1", task_owner="o", start_time=now, updated_at=now)
    for name in ("new.db", "old.db"):
        async with SQLiteStore(tmp_path / name) as store:
            await store.save_task(KEY, task)
            assert await store.load_task(KEY, "t1") == task
    sizes = {}
    for name in ("new.db", "old.db"):
        conn = sqlite3.connect(tmp_path / name)
        try:
            sizes[name] = conn.execute("PRAGMA page_size").fetchone()[0]
        finally:
            conn.close()
    assert sizes == {"new.db": 8192, "old.db": 4096}


# -- PostgreSQL ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_postgres_wrong_port_fails_fast() -> None:
    store = PostgresStore(
        f"postgresql://postgres:secret-pw@127.0.0.1:{_free_port()}/mail", connect_timeout=2.0
    )
    started = time.monotonic()
    with pytest.raises(
        StorageError, match=r"postgres store \(127\.0\.0\.1:\d+/mail\): open failed"
    ):
        await store.open()
    assert time.monotonic() - started < 5
    assert await store.health() == "closed"


async def test_postgres_errors_never_show_the_password() -> None:
    store = PostgresStore(f"postgresql://postgres:secret-pw@127.0.0.1:{_free_port()}/mail")
    with pytest.raises(StorageError) as info:
        await store.open()
    assert "secret-pw" not in str(info.value)
    assert "secret-pw" not in repr(store)


async def test_postgres_missing_database(postgres_admin_url: str) -> None:
    url = urlunsplit(urlsplit(postgres_admin_url)._replace(path="/mail_test_does_not_exist"))
    with pytest.raises(StorageError, match=r"open failed.*does not exist"):
        await PostgresStore(url, connect_timeout=5.0).open()


async def test_postgres_needs_exactly_one_of_dsn_and_pool() -> None:
    with pytest.raises(ConfigurationError, match="exactly one"):
        PostgresStore()
    with pytest.raises(ConfigurationError, match="exactly one"):
        PostgresStore("postgresql://x/y", pool=object())


async def test_postgres_given_pool_is_not_closed(postgres_url: str) -> None:
    import asyncpg

    pool = await asyncpg.create_pool(postgres_url, min_size=1, max_size=2)
    try:
        store = PostgresStore(pool=pool)
        await store.open()
        assert await store.health() == "ok"
        await store.close()
        assert await pool.fetchval("SELECT 1") == 1  # the caller's pool still works
    finally:
        await pool.close()


async def test_postgres_outage_is_reported_then_recovered(
    postgres_url: str, postgres_admin_url: str
) -> None:
    import asyncpg

    database = urlsplit(postgres_url).path.lstrip("/")

    async def admin(statement: str, *args: str) -> None:
        conn = await asyncpg.connect(postgres_admin_url, timeout=5)
        try:
            await conn.execute(statement, *args)
        finally:
            await conn.close()

    async with PostgresStore(postgres_url, connect_timeout=5.0) as store:
        await store.append_events(KEY, _events("outage", 1, 1, size=10))
        # the database goes away: no new connections, the store's connections are dropped
        await admin(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS false')
        await admin(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = $1 AND application_name = 'mail-server'",
            database,
        )
        try:
            with pytest.raises(StorageError, match=r"postgres store .*append_events failed"):
                await store.append_events(KEY, _events("outage", 2, 1, size=10))
            assert await store.health() != "ok"
            with pytest.raises(StorageError, match="load_events failed"):
                await store.load_events(KEY, "outage")
        finally:
            await admin(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS true')
        # back: the retried write lands once, reads and health recover
        await store.append_events(KEY, _events("outage", 2, 2, size=10))
        assert await store.health() == "ok"
        assert [e.seq for e in await store.load_events(KEY, "outage")] == [1, 2, 3]
        # upserts go through a staging table of the writing connection: the new connection
        # has its own
        now = datetime.now(UTC)
        task = TaskRow(task_id="outage", task_owner="o", start_time=now, updated_at=now)
        await asyncio.gather(
            store.save_task(KEY, task),
            store.save_history(KEY, "outage", "a", [{"v": 1}], "completions"),
        )
        assert await store.load_task(KEY, "outage") == task
        assert await store.load_histories(KEY, "outage") == {"a": [{"v": 1}]}
