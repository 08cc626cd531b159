"""The PostgreSQL store's writer process: a store given a DSN writes through a process of
its own (the DSN not on its command line), a death is survived, and a store given a pool
writes in this process."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.db.test_save_batch import batch_of
from tests.db.test_sqlite_writer import _gone
from tests.db.test_store import event, task_row

from mail.db import CallerKey, PostgresStore

pytestmark = pytest.mark.timeout(60)


def _key(request: pytest.FixtureRequest) -> CallerKey:
    return CallerKey(swarm="demo", role="user", id=request.node.name)


@pytest.fixture
async def pg_store(postgres_url: str) -> AsyncIterator[PostgresStore]:
    store = PostgresStore(postgres_url, connect_timeout=5.0)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


async def test_writes_go_through_a_process_of_their_own(
    pg_store: PostgresStore, postgres_url: str, request: pytest.FixtureRequest
) -> None:
    key = _key(request)
    pid = pg_store.writer_pid
    assert pid is not None and pid != os.getpid()
    command = Path(f"/proc/{pid}/cmdline").read_bytes().decode()  # noqa: ASYNC240  # /proc
    assert "from mail.db._pg_child import main" in command
    assert postgres_url not in command  # the DSN goes by the environment
    assert os.getpriority(os.PRIO_PROCESS, pid) == min(os.getpriority(os.PRIO_PROCESS, 0) + 10, 19)
    assert await pg_store.save_batch(key, batch_of(range(1, 6))) == {}
    assert [e.seq for e in await pg_store.load_events(key, "t04")] == [1, 2, 3, 4]
    await pg_store.close()
    assert pg_store.writer_pid is None
    await _gone(pid)


async def test_a_writer_that_died_is_started_again(
    pg_store: PostgresStore, caplog: pytest.LogCaptureFixture, request: pytest.FixtureRequest
) -> None:
    key = _key(request)
    await pg_store.save_task(key, task_row("t1"))
    pid = pg_store.writer_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    with caplog.at_level("WARNING", logger="mail.db"):
        await pg_store.save_task(key, task_row("t2"))  # a new writer takes it
        await pg_store.append_events(key, [event("t2", 1), event("t2", 2)])
    assert "PostgreSQL writer process" in caplog.text
    assert pg_store.writer_pid not in (None, pid)
    assert await pg_store.health() == "ok"
    assert [t.task_id for t in await pg_store.load_tasks(key)] == ["t1", "t2"]
    assert [e.seq for e in await pg_store.load_events(key, "t2")] == [1, 2]


async def test_a_store_given_a_pool_writes_in_this_process(
    postgres_url: str, request: pytest.FixtureRequest
) -> None:
    key = _key(request)
    import asyncpg

    pool = await asyncpg.create_pool(postgres_url, min_size=1, max_size=2)
    try:
        async with PostgresStore(pool=pool) as store:
            assert store.writer_pid is None
            batch = batch_of(range(1, 6))
            assert await store.save_batch(key, batch) == {}
            events = await store.load_events(key, "t04")
            assert [e.data for e in events] == [e.data() for e in batch.events["t04"]]
    finally:
        await pool.close()
