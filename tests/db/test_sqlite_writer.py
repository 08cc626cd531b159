"""The SQLite store's writer process: it stores what the event loop hands it, a death is
reported as a failed write and survived, and closing leaves no process behind."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.db.test_store import event, task_row

from mail.db import CallerKey, SQLiteStore

pytestmark = pytest.mark.timeout(60)

KEY = CallerKey(swarm="demo", role="user", id="u1")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _gone(pid: int) -> None:
    """Wait (up to 10 s) until process ``pid`` has ended; a child is reaped by asyncio."""
    for _ in range(1000):
        if not _alive(pid):
            return
        await asyncio.sleep(0.01)
    pytest.fail(f"process {pid} is still running")


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    """An open SQLite store (each test may close it; closing twice is harmless)."""
    s = SQLiteStore(tmp_path / "mail.db")
    await s.open()
    try:
        yield s
    finally:
        await s.close()


async def test_writes_go_through_a_process_of_their_own(sqlite_store: SQLiteStore) -> None:
    pid = sqlite_store.writer_pid
    assert pid is not None and pid != os.getpid() and _alive(pid)
    # background work: batch scheduling (where there is such a policy), ten nice steps
    # below this process
    if hasattr(os, "sched_getscheduler"):
        assert os.sched_getscheduler(pid) == os.SCHED_BATCH
    assert os.getpriority(os.PRIO_PROCESS, pid) == min(os.getpriority(os.PRIO_PROCESS, 0) + 10, 19)
    await sqlite_store.save_task(KEY, task_row("t1", title="first"))
    await sqlite_store.append_events(KEY, [event("t1", 1), event("t1", 2)])
    loaded = await sqlite_store.load_task(KEY, "t1")  # read back on the store's own thread
    assert loaded is not None and loaded.title == "first"
    assert [e.seq for e in await sqlite_store.load_events(KEY, "t1")] == [1, 2]
    await sqlite_store.close()
    assert sqlite_store.writer_pid is None
    await _gone(pid)


async def test_a_writer_that_died_is_started_again(
    sqlite_store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    await sqlite_store.save_task(KEY, task_row("t1"))
    pid = sqlite_store.writer_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    await _gone(pid)
    for _ in range(1000):  # until the event loop has seen it end (its exit code)
        if sqlite_store.writer_pid is None:
            break
        await asyncio.sleep(0.01)
    assert sqlite_store.writer_pid is None
    with caplog.at_level("WARNING", logger="mail.db"):
        await sqlite_store.save_task(KEY, task_row("t2"))  # a new writer takes it
    assert "had exited" in caplog.text
    second = sqlite_store.writer_pid
    assert second not in (None, pid)
    # killed again and written to at once (before the loop has seen it end): the
    # write goes to a new writer all the same
    os.kill(second, signal.SIGKILL)
    await sqlite_store.save_task(KEY, task_row("t3"))
    assert sqlite_store.writer_pid not in (None, pid, second)
    assert await sqlite_store.health() == "ok"
    assert [t.task_id for t in await sqlite_store.load_tasks(KEY)] == ["t1", "t2", "t3"]


async def test_the_runtimes_enum_values_reach_the_writer_as_plain_text(
    sqlite_store: SQLiteStore,
) -> None:
    # the writer process does not import mail: a StrEnum in a row must arrive as its text
    from mail.core.events import EventName

    row = event("t1", 1)
    row.event = EventName.TASK_COMPLETE
    await sqlite_store.append_events(KEY, [row])
    (loaded,) = await sqlite_store.load_events(KEY, "t1")
    assert loaded.event == "task_complete"


async def test_ctrl_c_leaves_the_writer_to_finish(sqlite_store: SQLiteStore) -> None:
    # a terminal's Ctrl+C reaches the writer too: it must outlive it, to apply the
    # writes the server hands over while it shuts down
    pid = sqlite_store.writer_pid
    assert pid is not None
    os.kill(pid, signal.SIGINT)
    await sqlite_store.save_task(KEY, task_row("t1"))
    assert sqlite_store.writer_pid == pid
    assert [t.task_id for t in await sqlite_store.load_tasks(KEY)] == ["t1"]


async def test_the_wal_is_checkpointed_beside_the_writes(tmp_path: Path) -> None:
    """The writer process checkpoints the WAL on a thread of its own every
    ``checkpoint_rows`` rows, so its commits never wait for a checkpoint: written rows
    reach the database file while the store is open, and the WAL starts over instead of
    growing (without the checkpoints every write stays in it until the store closes)."""
    path = tmp_path / "mail.db"
    wal = tmp_path / "mail.db-wal"
    store = SQLiteStore(path, checkpoint_rows=20)
    await store.open()
    try:
        start = path.stat().st_size

        async def write(i: int) -> None:
            await store.save_task(KEY, task_row(f"t{i}"))
            await store.append_events(KEY, [event(f"t{i}", n) for n in range(1, 11)])

        i = 0
        while path.stat().st_size == start:  # every write is a commit: no sleep needed
            assert i < 400, "no checkpoint reached the database file"
            await write(i)
            i += 1
        for j in range(i, i + 400):
            await write(j)
        # about 3.6 MB when the machine is idle, 29.5 MB without checkpoints: a slow disk
        # (another database syncing) delays the passive checkpoints, never stops them
        assert wal.stat().st_size < 10_000_000
        assert (await store.load_task(KEY, "t0")) is not None
        assert [e.seq for e in await store.load_events(KEY, f"t{i + 399}")] == list(range(1, 11))
    finally:
        await store.close()
    assert not wal.exists()  # closing the last connection checkpointed everything
