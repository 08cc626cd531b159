"""Fixtures for the persistence tests: runtimes of the scripted persist swarm over a store,
and servers of it (lifespan on, real uvicorn).

* ``template``: the persist swarm (:mod:`mail.testing.persist_swarm`).
* ``store``/``make_swarm``: a memory store and runtimes of the swarm over a store;
  :class:`ProxyStore`, :class:`CutStore`, :class:`GatedStore`: stores that break or hold.
* :func:`server_config` and :func:`running`: a server of the swarm whose only caller is
  ``user-key`` (:data:`KEY`), with its data (SQLite file, registry) in a temporary directory.
* ``postgres_database``: a throwaway PostgreSQL database (skipped without
  ``MAIL_TEST_POSTGRES_URL``), and ``postgres_proxy``, a TCP proxy to its server that cuts
  or black-holes the connections (:mod:`tests.persistence.tcp_proxy`);
  :func:`sqlite_execute` changes an SQLite file from outside.
* :func:`eventually`: wait for a condition, with a deadline.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from tests._servers import serve
from tests.persistence.tcp_proxy import TcpProxy

from mail.api import MAILSwarm, MAILSwarmTemplate
from mail.config import MAILConfig, load_config
from mail.db import (
    CallerKey,
    EventRow,
    MemoryStore,
    TaskChanges,
    TaskDetails,
    TaskRow,
    TaskStore,
)
from mail.errors import StorageError
from mail.server import create_app
from mail.server._state import ServerState
from mail.testing import StaticAuth
from mail.testing.persist_swarm import swarm_definition

KEY = CallerKey(swarm="persist", role="user", id="u1")
USER_KEY = "user-key"
POSTGRES_ENV = "MAIL_TEST_POSTGRES_URL"


class ProxyStore(TaskStore):
    """A store that hands every call to ``inner``: tests subclass it to fail, hold or
    log writes, as a database that breaks or a process that dies would."""

    backend = "memory"

    def __init__(self, inner: TaskStore) -> None:
        self.inner = inner
        super().__init__()
        self.name = f"proxy of {inner.name}"

    async def open(self) -> None:
        await self.inner.open()

    async def close(self) -> None:
        await self.inner.close()

    async def _save(
        self, op: str, key: CallerKey, changes: Sequence[TaskChanges]
    ) -> dict[str, StorageError]:
        return await self.inner._save(op, key, changes)

    async def load_tasks(self, key: CallerKey) -> list[TaskRow]:
        return await self.inner.load_tasks(key)

    async def load_task(self, key: CallerKey, task_id: str) -> TaskRow | None:
        return await self.inner.load_task(key, task_id)

    async def load_events(
        self, key: CallerKey, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[EventRow]:
        return await self.inner.load_events(key, task_id, after, limit)

    async def load_details(self, key: CallerKey, task_ids: Sequence[str]) -> dict[str, TaskDetails]:
        return await self.inner.load_details(key, task_ids)

    async def prune(
        self, *, older_than: timedelta | None = None, keep_last: int | None = None
    ) -> int:
        return await self.inner.prune(older_than=older_than, keep_last=keep_last)

    async def health(self) -> str:
        return await self.inner.health()

    async def schema_version(self) -> int:
        return await self.inner.schema_version()


class CutStore(ProxyStore):
    """Writes fail with ``fail`` while it is set, and are dropped once ``cut`` (the
    process "died"); ``writes`` logs the changes of every write that reached it."""

    def __init__(self, inner: TaskStore) -> None:
        super().__init__(inner)
        self.cut = False
        self.fail: Exception | None = None
        self.writes: list[list[TaskChanges]] = []

    async def _save(
        self, op: str, key: CallerKey, changes: Sequence[TaskChanges]
    ) -> dict[str, StorageError]:
        if self.fail is not None:
            raise self.fail
        if self.cut:
            return {}
        self.writes.append(list(changes))
        return await super()._save(op, key, changes)


class GatedStore(CutStore):
    """Holds every write until ``gate`` opens; ``arrived`` is set once a write waits."""

    def __init__(self, inner: TaskStore) -> None:
        super().__init__(inner)
        self.gate = asyncio.Event()
        self.arrived = asyncio.Event()

    async def _save(
        self, op: str, key: CallerKey, changes: Sequence[TaskChanges]
    ) -> dict[str, StorageError]:
        self.arrived.set()
        await self.gate.wait()
        return await super()._save(op, key, changes)


MakeSwarm = Callable[..., MAILSwarm]


@pytest.fixture
def template(tmp_path: Path) -> MAILSwarmTemplate:
    path = tmp_path / "swarms.json"
    path.write_text(json.dumps([swarm_definition()]), encoding="utf-8")
    return MAILSwarmTemplate.from_swarm_json_file("persist", str(path))


@pytest.fixture
async def store() -> AsyncIterator[MemoryStore]:
    s = MemoryStore()
    await s.open()
    yield s
    await s.close()


@pytest.fixture
async def make_swarm(template: MAILSwarmTemplate, store: MemoryStore) -> AsyncIterator[MakeSwarm]:
    built: list[MAILSwarm] = []

    def build(store: TaskStore) -> MAILSwarm:
        swarm = template.instantiate({}, user_id="u1", print_llm_streams=False, store=store)
        built.append(swarm)
        return swarm

    yield build
    for swarm in built:
        await swarm.runtime.shutdown(timeout=0.5)


# --- waiting -------------------------------------------------------------------------------


async def eventually(
    check: Callable[[], Awaitable[bool]], *, timeout: float = 10.0, what: str = "condition"
) -> None:
    """Poll ``check`` until it is true; fail the test after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"{what}: not true within {timeout}s")
        await asyncio.sleep(0.02)


# --- servers -------------------------------------------------------------------------------


def server_config(tmp_path: Path, **database: Any) -> MAILConfig:
    """The persist swarm's server, every file under ``tmp_path``; ``database`` holds
    ``[database]`` values (``url=...``, ``prune_interval=...``)."""
    swarms = tmp_path / "swarms.json"
    swarms.write_text(json.dumps([swarm_definition()]), encoding="utf-8")
    overrides: dict[str, Any] = {
        "server": {
            "swarm": {"name": "persist", "source": str(swarms)},
            "settings": {"print_llm_streams": False},
        },
        "database": database,
    }
    return load_config(
        None,
        env={
            "MAIL_DATA_DIR": str(tmp_path / "data"),
            "SWARM_REGISTRY_FILE": str(tmp_path / "data" / "registry.json"),
        },
        search=False,
        overrides=overrides,
    )


@dataclass
class Running:
    url: str
    state: ServerState
    client: httpx.AsyncClient


@asynccontextmanager
async def running(
    config: MAILConfig, template: MAILSwarmTemplate | None = None
) -> AsyncIterator[Running]:
    """A started server of ``config`` (and ``template``, default the configured swarm) and
    a client authenticated as :data:`KEY`'s caller."""
    auth = StaticAuth({USER_KEY: ("user", KEY.id)})
    app = create_app(config, template=template, authenticator=auth)
    async with serve(app) as url:
        headers = {"Authorization": f"Bearer {USER_KEY}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=15) as client:
            yield Running(url, app.state.mail, client)


def sqlite_execute(path: str | Path, *statements: str) -> None:
    """Run statements on an SQLite file through a connection of the test's own."""
    conn = sqlite3.connect(path, timeout=10, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


async def postgres_admin(url: str, *statements: str, args: tuple[Any, ...] = ()) -> None:
    import asyncpg

    conn = await asyncpg.connect(url, timeout=5)
    try:
        for statement in statements:
            await conn.execute(statement, *args)
    finally:
        await conn.close()


def _off_loop(coro: Callable[[], Coroutine[Any, Any, None]]) -> None:
    # a private loop in another thread: never touches the loop pytest-asyncio gives the test
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(lambda: asyncio.run(coro())).result()


@pytest.fixture
def postgres_database() -> Iterator[tuple[str, str]]:
    """``(admin URL, URL of a new empty database)``; the database is dropped afterwards."""
    admin = os.environ.get(POSTGRES_ENV)
    if not admin:
        pytest.skip(f"{POSTGRES_ENV} is not set")
    asyncpg = pytest.importorskip("asyncpg")
    name = f"mail_persist_{uuid.uuid4().hex[:12]}"
    try:
        _off_loop(lambda: postgres_admin(admin, f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError) as e:
        pytest.skip(f"PostgreSQL at {POSTGRES_ENV} is unreachable: {e}")
    head, _, _ = admin.rpartition("/")
    try:
        yield admin, f"{head}/{name}"
    finally:
        _off_loop(lambda: postgres_admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
async def postgres_proxy(postgres_database: tuple[str, str]) -> AsyncIterator[TcpProxy]:
    """A TCP proxy to the server of ``postgres_database``; ``proxy.url(url)`` goes through it."""
    target = urlsplit(postgres_database[1])
    async with TcpProxy((target.hostname or "127.0.0.1", target.port or 5432)) as proxy:
        yield proxy
