"""When the store fails, nothing is told that is not stored.

* A store that fails as a whole (another process holds SQLite's write lock, a PostgreSQL
  database that takes no connections) is retried: each task it touched gets one
  ``storage_error`` event per outage (live), ``/health`` says so with the unsaved count,
  new tasks are refused (503, ``Retry-After``), and a task that ends meanwhile is not
  told as ended: its JSON answer is a 503 naming it, its stream ends with a
  ``storage_error`` event without an id instead of ``task_complete``. Once the store
  works again everything lands exactly once and the task is told.
* A store that refuses one task's rows (a constraint) sets that task aside: it ends
  ``failed``, visibly, and the others are stored.
* PostgreSQL's ``health()`` answers within its 2 s even when the database gets no answer
  at all (a network partition, through :mod:`tests.persistence.tcp_proxy`).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from tests.persistence.conftest import (
    KEY,
    MakeSwarm,
    Running,
    eventually,
    postgres_admin,
    running,
    server_config,
    sqlite_execute,
)
from tests.persistence.tcp_proxy import TcpProxy
from tests.server.conftest import Frame, frames, gated_swarm

from mail.api import MAILSwarm
from mail.core._recorder import StoreRecorder
from mail.core.events import EventName
from mail.db import CallerKey, PostgresStore, SQLiteStore, TaskStore
from mail.errors import TaskNotStoredError

pytestmark = pytest.mark.timeout(60)

WAIT = 15.0
_INJECTED = "injected: a row this store refuses"


@contextmanager
def sqlite_write_locked(path: Path | str) -> Iterator[None]:
    """Another process holds the file's write lock (as ``sqlite3 mail.db VACUUM`` would):
    every write of the store fails with ``database is locked`` until it lets go."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=10)
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield
        conn.execute("ROLLBACK")
    finally:
        conn.close()


async def impatient(store: TaskStore) -> None:
    """The SQLite store waits 50 ms, not 10 s, for a lock another process holds."""
    assert isinstance(store, SQLiteStore)
    await store.run("test", lambda conn: conn.execute("PRAGMA busy_timeout = 50"))


def _refuse_events(path: Path | str, when: str = "") -> None:
    """Make SQLite refuse new events (all, or those matching ``when``): a constraint."""
    sqlite_execute(
        path,
        f"CREATE TRIGGER refuse_events BEFORE INSERT ON task_events {when} "
        f"BEGIN SELECT RAISE(ABORT, '{_INJECTED}'); END",
    )


async def _send(swarm: MAILSwarm, body: str, task_id: str) -> str:
    message = swarm.build_message(subject="s", body=body, targets=["supervisor"], task_id=task_id)
    answer = await swarm.runtime.submit_and_wait(message, timeout=10)
    return str(answer["message"]["body"])


def _storage_errors(swarm: MAILSwarm, task_id: str) -> list[dict[str, object]]:
    return [e.extra_data for e in swarm.runtime.get_events(task_id) if e.event == "storage_error"]


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "mail.db", pragmas={"busy_timeout": 50})
    await store.open()
    yield store
    await store.close()


# -- the recorder -------------------------------------------------------------------------


def _recorded(make_swarm: MakeSwarm, store: SQLiteStore) -> tuple[MAILSwarm, StoreRecorder]:
    """A started swarm whose runtime records into ``store`` (answers held back after
    half a second), and its recorder."""
    swarm = make_swarm(store)
    swarm.runtime.commit_timeout = 0.5
    swarm.runtime.start()
    recorder = swarm.runtime.recorder
    assert recorder is not None
    return swarm, recorder


async def test_an_outage_holds_answers_back_and_adds_one_event_per_task(
    make_swarm: MakeSwarm, sqlite_store: SQLiteStore
) -> None:
    swarm, recorder = _recorded(make_swarm, sqlite_store)
    with sqlite_write_locked(sqlite_store.path):
        with pytest.raises(TaskNotStoredError) as held:
            await _send(swarm, "hello", "t1")  # the task ends, but is not told as ended
        assert held.value.task_id == "t1"
        assert "database is locked" in str(held.value)
        for _ in range(3):  # retries fail too, and the event's own failed write adds nothing
            assert not await recorder.flush()
        [extra] = _storage_errors(swarm, "t1")
        assert "database is locked" in str(extra["error"])
        assert isinstance(extra["unsaved_records"], int)
        assert extra["unsaved_records"] >= 1
        assert "database is locked" in (swarm.runtime.storage_error or "")
        assert sqlite_store.outage is not None
        assert swarm.runtime.unsaved_tasks == 1
        assert await sqlite_store.load_task(KEY, "t1") is None

    assert await recorder.flush()
    assert swarm.runtime.storage_error is None
    assert sqlite_store.outage is None
    assert (await swarm.runtime.settled("t1", 0)).committed
    stored = await sqlite_store.load_events(KEY, "t1")
    assert [(e.seq, e.event) for e in stored] == [
        (e.seq, e.event) for e in swarm.runtime.get_events("t1")
    ]
    assert [e.event for e in stored].count(EventName.STORAGE_ERROR) == 1

    # a new outage tells the tasks it touches, again once each; t1 has nothing pending
    with sqlite_write_locked(sqlite_store.path):
        with pytest.raises(TaskNotStoredError):
            await _send(swarm, "again", "t2")
        assert not await recorder.flush()
    assert len(_storage_errors(swarm, "t2")) == 1
    assert len(_storage_errors(swarm, "t1")) == 1


async def test_a_task_the_store_refuses_is_set_aside_and_fails_visibly(
    make_swarm: MakeSwarm, sqlite_store: SQLiteStore
) -> None:
    swarm, recorder = _recorded(make_swarm, sqlite_store)
    _refuse_events(sqlite_store.path, "WHEN NEW.task_id = 'bad'")
    assert await _send(swarm, "hello", "good") == "done: hello"
    answer = await _send(swarm, "hello", "bad")
    assert answer.startswith("The task encountered an error: this task could not be stored")
    assert _INJECTED in answer
    task = swarm.runtime.get_task("bad")
    assert task is not None
    assert task.state == "failed"
    [error] = [e for e in task.log.all() if e.event == EventName.TASK_ERROR]
    assert _INJECTED in error.description
    # no outage: nothing is retried, nothing waits, other tasks are stored
    assert await recorder.flush()
    assert swarm.runtime.storage_error is None
    assert sqlite_store.outage is None
    assert swarm.runtime.unsaved_tasks == 0
    assert _storage_errors(swarm, "good") == []
    stored = await sqlite_store.load_events(KEY, "good")
    assert len(stored) == len(swarm.runtime.get_events("good"))
    # the set-aside task's record says it failed; it cannot go on
    row = await sqlite_store.load_task(KEY, "bad")
    assert row is not None
    assert row.state == "failed"
    assert await sqlite_store.load_events(KEY, "bad") == []
    message = swarm.build_message(subject="s", body="more", targets=["supervisor"], task_id="bad")
    with pytest.raises(Exception, match="could not be stored"):
        await swarm.runtime.submit(message, resume_from="user_response")


# -- the server ---------------------------------------------------------------------------


@dataclass
class Outage:
    """How to break and repair a server's store for real."""

    database: dict[str, str]
    start: Callable[[Running], Awaitable[None]]
    end: Callable[[Running], Awaitable[None]]


def _sqlite_outage() -> Outage:
    held = ExitStack()

    async def start(server: Running) -> None:
        assert server.state.store is not None
        await impatient(server.state.store)
        held.enter_context(sqlite_write_locked(server.state.config.database.sqlite_path))

    async def end(_server: Running) -> None:
        held.close()

    return Outage({}, start, end)


async def _postgres_outage(admin_url: str, url: str) -> Outage:
    name = urlsplit(url).path.lstrip("/")

    async def start(_server: Running) -> None:
        # the database goes away: no new connections, the server's are terminated
        await postgres_admin(admin_url, f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        await postgres_admin(
            admin_url,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = $1 AND application_name = 'mail-server'",
            args=(name,),
        )

    async def end(_server: Running) -> None:
        await postgres_admin(admin_url, f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')

    return Outage({"url": url}, start, end)


@pytest.fixture(params=["sqlite", "postgres"])
async def outage(request: pytest.FixtureRequest) -> Outage:
    if request.param == "sqlite":
        return _sqlite_outage()
    admin_url, url = request.getfixturevalue("postgres_database")
    return await _postgres_outage(admin_url, url)


async def _storage_error_seen(stream: AsyncIterator[Frame], seen: list[Frame]) -> Frame:
    """Read the stream until its live ``storage_error`` event (with an id)."""
    async for frame in stream:
        seen.append(frame)
        if frame.event == "storage_error":
            return frame
    pytest.fail(f"no storage_error event: {[f.event for f in seen]}")


async def test_an_outage_holds_every_answer_back_until_the_task_is_stored(
    tmp_path: Path, outage: Outage
) -> None:
    gate = asyncio.Event()
    gate.set()
    template, _worker = gated_swarm(gate)
    key = CallerKey(swarm=template.name, role=KEY.role, id=KEY.id)
    config = server_config(tmp_path, commit_timeout=1.0, **outage.database)
    async with running(config, template) as server:
        client, store = server.client, server.state.store
        assert store is not None
        warm = (await client.post("/message", json={"body": "warm up"})).json()
        assert warm["status"] == "completed"

        gate.clear()  # the next tasks stay running until the test opens the gate
        answer = asyncio.create_task(client.post("/message", json={"body": "json job"}))
        await outage.start(server)
        seen: list[Frame] = []
        async with client.stream("POST", "/message", json={"body": "job", "stream": True}) as r:
            assert r.status_code == 200
            stream = frames(r)
            live = await _storage_error_seen(stream, seen)  # live: the follower hears of it
            assert live.id is not None
            assert live.data["extra_data"]["unsaved_records"] >= 1
            task_id = live.data["task_id"]
            health = (await client.get("/health")).json()
            assert health["status"] == "degraded"
            assert health["storage"] not in ("", "ok")
            assert health["unsaved_tasks"] >= 1
            refused = await client.post("/message", json={"body": "new"})  # refused at once
            assert refused.status_code == 503, refused.text
            assert refused.headers["retry-after"] == "1"
            assert "the task store is failing" in refused.json()["detail"]
            gate.set()
            rest = [f async for f in stream]
        # the turn ended, but the stream does not say so: it says it is not stored
        notice = rest[-1]
        assert (notice.event, notice.id) == ("storage_error", None)
        assert [f for f in rest if f.id is None] == [notice]  # no task_complete
        assert notice.data["extra_data"]["stored"] is False
        assert notice.data["extra_data"]["retry_after"] == 1
        held = await answer  # and the JSON answer is held back, naming its task
        assert held.status_code == 503, held.text
        assert held.headers["retry-after"] == "1"
        assert held.json()["task_id"]
        assert "not stored yet" in held.json()["detail"]
        shown = (await client.get("/task", params={"task_id": task_id})).json()
        assert (shown["state"], shown["stored"]) == ("completed", False)

        await outage.end(server)

        async def recovered() -> bool:
            health = (await client.get("/health")).json()
            return bool(health["storage"] == "ok" and health["status"] == "healthy")

        await eventually(recovered, timeout=WAIT, what="/health recovers")
        assert (await client.get("/health")).json()["unsaved_tasks"] == 0
        shown = (await client.get("/task", params={"task_id": task_id})).json()
        assert shown["stored"] is True
        async with client.stream("GET", f"/tasks/{task_id}/events") as r:
            told = [f async for f in frames(r)]
        assert told[-1].event == "task_complete"
        assert told[-1].data["response"] == "done: worked"
        again = await client.post("/message", json={"body": "new"})  # taken again
        assert again.status_code == 200

        swarm = server.state.swarms.lookup(KEY.role, KEY.id)
        assert swarm is not None
        expected = [(e.seq, e.event) for e in swarm.runtime.get_events(task_id)]
        stored = [(e.seq, e.event) for e in await store.load_events(key, task_id)]
        assert stored == expected
        assert [name for _, name in expected].count("storage_error") == 1
        held_id = held.json()["task_id"]
        row = await store.load_task(key, held_id)
        assert row is not None
        assert row.state == "completed"


async def test_a_repeat_is_answered_while_the_store_fails(tmp_path: Path, outage: Outage) -> None:
    """A request repeated while the store fails is no new work: it gets the answer of the
    turn it repeats (here stored before the outage), not the 503 that refuses new tasks."""
    gate = asyncio.Event()
    gate.set()
    template, _worker = gated_swarm(gate)
    config = server_config(tmp_path, commit_timeout=1.0, **outage.database)
    async with running(config, template) as server:
        client = server.client
        ask = {"body": "job", "task_id": "kept"}
        first = await client.post("/message", json=ask)
        assert first.status_code == 200, first.text
        gate.clear()
        await outage.start(server)
        async with client.stream("POST", "/message", json={"body": "j", "stream": True}) as r:
            await _storage_error_seen(frames(r), [])  # the store is known to fail now
            refused = await client.post("/message", json={"body": "new"})
            assert refused.status_code == 503, refused.text
            again = await client.post("/message", json=ask)
            assert again.status_code == 200, again.text
            assert again.json() == first.json()
            async with client.stream("POST", "/message", json={**ask, "stream": True}) as s:
                replayed = [f async for f in frames(s)]
            assert replayed[0].id == 1
            assert replayed[-1].event == "task_complete"
            assert replayed[-1].data["response"] == first.json()["response"]
            gate.set()
        await outage.end(server)


# -- a network partition --------------------------------------------------------------------


async def test_postgres_health_answers_within_its_timeout_during_a_partition(
    postgres_proxy: TcpProxy, postgres_database: tuple[str, str]
) -> None:
    """Regression: the probe of ``PostgresStore.health`` was cancelled at its 2 s timeout,
    but asyncpg releases a cancelled query's connection only once its cancel request is
    answered, which a partition delays up to ``command_timeout`` (30 s): ``/health``
    said "did not answer within 2 s" after as long as the partition lasted."""
    proxy = postgres_proxy
    async with PostgresStore(proxy.url(postgres_database[1])) as store:
        assert await store.health() == "ok"
        proxy.blackhole()
        for _ in range(2):  # the second call waits on the same probe: no pile-up
            started = time.monotonic()
            assert "did not answer within 2 s" in await store.health()
            assert time.monotonic() - started < 3.0
        proxy.heal()

        async def ok() -> bool:
            return await store.health() == "ok"

        await eventually(ok, timeout=10, what="health after the partition")
