"""Fixtures running one store test suite over the memory, SQLite and PostgreSQL stores.

* ``store_kind``: ``"memory"``, ``"sqlite"`` or ``"postgres"`` (every test using ``store``
  or ``make_store`` runs once per kind).
* ``make_store()``: a new, unopened store on this test's location (the same file or
  database each call; for memory the same object), to test closing and reopening.
* ``store``: an opened store on a clean location, closed after the test.
* ``postgres_url``: a throwaway database ``mail_test_<hex>`` created for the session from
  the admin URL in ``MAIL_TEST_POSTGRES_URL`` and dropped at the end. Tests that need it
  are SKIPPED, with the reason, when the variable is unset or the server is unreachable.
* ``postgres_admin_url``: the admin URL itself (same skip rules).
* ``key(...)``: a :class:`CallerKey` (``swarm="demo", role="user", id="u1"`` by default).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import pytest

from mail.db import CallerKey, MemoryStore, PostgresStore, SQLiteStore, TaskStore

POSTGRES_ENV = "MAIL_TEST_POSTGRES_URL"
#: the message of the failure :func:`refuse_bad_events` injects
INJECTED = "injected failure: task_events refuses task bad"
STORE_KINDS = ("memory", "sqlite", "postgres")
TABLES = (
    "tasks",
    "task_events",
    "agent_histories",
    "task_responses",
    "task_breakpoints",
    "task_stash",
)

T = TypeVar("T")


def run_off_loop(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion on a private loop in another thread, so that session
    fixtures never touch the loop pytest-asyncio gives each test."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def redact(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 5432}{parts.path}"


async def admin_execute(admin_url: str, *statements: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(admin_url, timeout=5)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(f"{POSTGRES_ENV} is not set: PostgreSQL store tests need a server")
    try:
        run_off_loop(lambda: admin_execute(url, "SELECT 1"))
    except Exception as e:
        pytest.skip(f"PostgreSQL at {redact(url)} is unreachable: {type(e).__name__}: {e}")
    return url


@pytest.fixture(scope="session")
def postgres_url(postgres_admin_url: str) -> Iterator[str]:
    name = f"mail_test_{uuid.uuid4().hex}"
    run_off_loop(lambda: admin_execute(postgres_admin_url, f'CREATE DATABASE "{name}"'))
    try:
        yield with_database(postgres_admin_url, name)
    finally:
        run_off_loop(
            lambda: admin_execute(postgres_admin_url, f'DROP DATABASE "{name}" WITH (FORCE)')
        )


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Callable[[], TaskStore]:
    if store_kind == "memory":
        shared = MemoryStore()
        return lambda: shared
    if store_kind == "sqlite":
        return lambda: SQLiteStore(tmp_path / "data" / "mail.db")
    url = request.getfixturevalue("postgres_url")
    return lambda: PostgresStore(url, connect_timeout=5.0)


@pytest.fixture
async def store(
    make_store: Callable[[], TaskStore], store_kind: str, request: pytest.FixtureRequest
) -> AsyncIterator[TaskStore]:
    opened = make_store()
    await opened.open()
    if store_kind == "postgres":
        # one database per session: start every test from empty tables
        url = request.getfixturevalue("postgres_url")
        await admin_execute(url, f"TRUNCATE {', '.join(TABLES)}")
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def key() -> Callable[..., CallerKey]:
    def make(swarm: str = "demo", role: str = "user", id: str = "u1") -> CallerKey:
        return CallerKey(swarm=swarm, role=role, id=id)

    return make


@pytest.fixture
async def refuse_bad_events(
    store: TaskStore, store_kind: str, request: pytest.FixtureRequest
) -> AsyncIterator[None]:
    """Make the database itself refuse the events of task ``bad`` (a trigger)."""
    if store_kind == "memory":
        pytest.skip("the memory store has no database to refuse a row")
    if isinstance(store, SQLiteStore):
        conn = sqlite3.connect(store.path, timeout=10, isolation_level=None)
        try:
            conn.execute(
                "CREATE TRIGGER refuse_bad BEFORE INSERT ON task_events "
                f"WHEN NEW.task_id = 'bad' BEGIN SELECT RAISE(ABORT, '{INJECTED}'); END"
            )
        finally:
            conn.close()
        yield
        return
    url = request.getfixturevalue("postgres_url")
    await admin_execute(
        url,
        "CREATE FUNCTION refuse_bad() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN RAISE EXCEPTION '{INJECTED}'; END $$",
        "CREATE TRIGGER refuse_bad BEFORE INSERT ON task_events FOR EACH ROW "
        "WHEN (NEW.task_id = 'bad') EXECUTE FUNCTION refuse_bad()",
    )
    try:
        yield
    finally:  # the database is the session's: leave it as found
        await admin_execute(
            url, "DROP TRIGGER refuse_bad ON task_events", "DROP FUNCTION refuse_bad()"
        )
