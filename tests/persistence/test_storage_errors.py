"""A storage failure is reported: a ``storage_error`` event in each affected task (once per
outage, live), the log and ``/health``; tasks still complete, and once the store is back the
retried writes (the event included) land exactly once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
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
from tests.server.conftest import frames, gated_swarm

from mail.api import MAILSwarm
from mail.core._recorder import StoreRecorder
from mail.core.events import EventName
from mail.db import CallerKey, SQLiteStore

pytestmark = pytest.mark.timeout(60)

WAIT = 15.0
_INJECTED = "injected failure: database or disk is full"


def _refuse_events(path: Path | str, when: str = "") -> None:
    """Make SQLite itself refuse new events (all, or those matching ``when``)."""
    sqlite_execute(
        path,
        f"CREATE TRIGGER refuse_events BEFORE INSERT ON task_events {when} "
        f"BEGIN SELECT RAISE(ABORT, '{_INJECTED}'); END",
    )


def _accept_events(path: Path | str) -> None:
    sqlite_execute(path, "DROP TRIGGER refuse_events")


async def _send(swarm: MAILSwarm, body: str, task_id: str) -> str:
    message = swarm.build_message(subject="s", body=body, targets=["supervisor"], task_id=task_id)
    answer = await swarm.runtime.submit_and_wait(message, timeout=10)
    return str(answer["message"]["body"])


def _storage_errors(swarm: MAILSwarm, task_id: str) -> list[dict[str, object]]:
    return [e.extra_data for e in swarm.runtime.get_events(task_id) if e.event == "storage_error"]


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "mail.db")
    await store.open()
    yield store
    await store.close()


# -- the recorder -------------------------------------------------------------------------


def _recorded(make_swarm: MakeSwarm, store: SQLiteStore) -> tuple[MAILSwarm, StoreRecorder]:
    """A started swarm whose runtime records into ``store``, and its recorder."""
    swarm = make_swarm(store)
    swarm.runtime.start()
    recorder = swarm.runtime.recorder
    assert recorder is not None
    return swarm, recorder


async def test_failed_writes_add_one_storage_error_event_per_task_and_outage(
    make_swarm: MakeSwarm, sqlite_store: SQLiteStore
) -> None:
    swarm, recorder = _recorded(make_swarm, sqlite_store)
    _refuse_events(sqlite_store.path)
    assert await _send(swarm, "hello", "t1") == "done: hello"  # the task completes anyway
    for _ in range(3):  # retries fail too, and the event's own failed write adds nothing
        assert not await recorder.flush()
    [extra] = _storage_errors(swarm, "t1")
    assert _INJECTED in str(extra["error"])
    assert isinstance(extra["unsaved_records"], int)
    assert extra["unsaved_records"] >= 1
    assert _INJECTED in (swarm.runtime.storage_error or "")

    _accept_events(sqlite_store.path)
    assert await recorder.flush()
    assert swarm.runtime.storage_error is None
    stored = await sqlite_store.load_events(KEY, "t1")
    assert [(e.seq, e.event) for e in stored] == [
        (e.seq, e.event) for e in swarm.runtime.get_events("t1")
    ]
    assert [e.event for e in stored].count(EventName.STORAGE_ERROR) == 1

    # a new outage tells the tasks it touches, again once each; t1 has nothing pending
    _refuse_events(sqlite_store.path)
    assert await _send(swarm, "again", "t2") == "done: again"
    assert not await recorder.flush()
    assert not await recorder.flush()
    assert len(_storage_errors(swarm, "t2")) == 1
    assert len(_storage_errors(swarm, "t1")) == 1


async def test_only_the_tasks_whose_rows_failed_are_told(
    make_swarm: MakeSwarm, sqlite_store: SQLiteStore
) -> None:
    swarm, recorder = _recorded(make_swarm, sqlite_store)
    _refuse_events(sqlite_store.path, "WHEN NEW.task_id = 'bad'")
    assert await _send(swarm, "hello", "good") == "done: hello"
    assert await _send(swarm, "hello", "bad") == "done: hello"
    assert not await recorder.flush()
    assert _storage_errors(swarm, "good") == []
    assert len(_storage_errors(swarm, "bad")) == 1
    # the healthy task's rows were stored all the same
    stored = await sqlite_store.load_events(KEY, "good")
    assert len(stored) == len(swarm.runtime.get_events("good"))


# -- the server ---------------------------------------------------------------------------


@dataclass
class Outage:
    """How to break and repair a server's store for real."""

    database: dict[str, str]
    start: Callable[[Running], Awaitable[None]]
    end: Callable[[Running], Awaitable[None]]


async def _sqlite_outage(tmp_path: Path) -> Outage:
    async def start(server: Running) -> None:
        _refuse_events(server.state.config.database.sqlite_path)

    async def end(server: Running) -> None:
        _accept_events(server.state.config.database.sqlite_path)

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
async def outage(request: pytest.FixtureRequest, tmp_path: Path) -> Outage:
    if request.param == "sqlite":
        return await _sqlite_outage(tmp_path)
    admin_url, url = request.getfixturevalue("postgres_database")
    return await _postgres_outage(admin_url, url)


async def test_storage_failure_is_an_event_and_health_and_the_task_completes(
    tmp_path: Path, outage: Outage
) -> None:
    gate = asyncio.Event()
    gate.set()
    template, _worker = gated_swarm(gate)
    key = CallerKey(swarm=template.name, role=KEY.role, id=KEY.id)
    config = server_config(tmp_path, **outage.database)
    async with running(config, template) as server:
        client, store = server.client, server.state.store
        assert store is not None
        warm = (await client.post("/message", json={"body": "warm up"})).json()
        assert warm["status"] == "completed"

        async def warm_stored() -> bool:
            row = await store.load_task(key, warm["task_id"])
            return row is not None and row.state == "completed"

        await eventually(warm_stored, what="the first task is stored")

        gate.clear()  # the next task stays running until the test opens the gate
        await outage.start(server)
        seen: list[str] = []
        job = {"body": "job", "stream": True}
        async with client.stream("POST", "/message", json=job) as response:
            assert response.status_code == 200
            async for frame in frames(response):
                seen.append(frame.event)
                if frame.event == "storage_error":
                    # live: the follower of the running task hears of it
                    error = frame.data["extra_data"]["error"]
                    assert error
                    assert frame.data["extra_data"]["unsaved_records"] >= 1
                    task_id = frame.data["task_id"]
                    health = (await client.get("/health")).json()
                    assert health["status"] == "degraded"
                    assert health["storage"] not in ("", "ok")
                    gate.set()
                if frame.event == "task_complete" and frame.id is None:
                    assert frame.data["response"] == "done: worked"
        assert seen.count("storage_error") == 1
        assert seen[-1] == "task_complete"

        await outage.end(server)

        async def recovered() -> bool:
            health = (await client.get("/health")).json()
            return bool(health["storage"] == "ok" and health["status"] == "healthy")

        await eventually(recovered, timeout=WAIT, what="/health recovers")
        swarm = server.state.swarms.lookup(KEY.role, KEY.id)
        assert swarm is not None
        expected = [(e.seq, e.event) for e in swarm.runtime.get_events(task_id)]

        async def job_stored() -> bool:
            return [(e.seq, e.event) for e in await store.load_events(key, task_id)] == expected

        await eventually(job_stored, timeout=WAIT, what="the job's events are stored")
        assert [name for _, name in expected].count("storage_error") == 1
