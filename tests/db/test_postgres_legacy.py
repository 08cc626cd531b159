"""A database written by the original implementation (v1.3.6) stays readable, and
``--upgrade-from-v1`` converts it (tests/db/test_shared_with_v1.py: sharing it)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from mail.db import CallerKey, EventRow, PostgresStore, TaskRow, latest_version

# The tables exactly as the original's `mail db-init` creates them (CONTRACT §11).
ORIGINAL_SCHEMA = (
    """CREATE TABLE agent_histories (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
        tool_format TEXT NOT NULL, task_id TEXT NOT NULL, agent_name TEXT NOT NULL,
        history JSONB NOT NULL,
        created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
        updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW())""",
    """CREATE TABLE tasks (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        task_id TEXT NOT NULL, swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL,
        caller_id TEXT NOT NULL, task_owner TEXT NOT NULL,
        task_contributors JSONB NOT NULL DEFAULT '[]', remote_swarms JSONB NOT NULL DEFAULT '[]',
        is_running BOOLEAN NOT NULL DEFAULT FALSE, completed BOOLEAN NOT NULL DEFAULT FALSE,
        title TEXT, start_time TIMESTAMP WITH TIME ZONE NOT NULL,
        created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
        updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
        UNIQUE(task_id, swarm_name, caller_role, caller_id))""",
    """CREATE TABLE task_events (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        task_id TEXT NOT NULL, swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL,
        caller_id TEXT NOT NULL, event_type TEXT, event_data TEXT, event_id TEXT,
        created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW())""",
    """CREATE INDEX idx_task_events_lookup
        ON task_events (task_id, swarm_name, caller_role, caller_id)""",
    """CREATE TABLE task_responses (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        task_id TEXT NOT NULL, swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL,
        caller_id TEXT NOT NULL, response JSONB NOT NULL,
        created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
        UNIQUE(task_id, swarm_name, caller_role, caller_id))""",
)

KEY = CallerKey(swarm="demo", role="user", id="u1")
CALLER = ("demo", "user", "u1")
T0 = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)


def data(n: int) -> dict[str, Any]:
    return {"timestamp": f"t{n}", "description": f"d{n}", "task_id": "t1", "extra_data": {}}


@pytest.fixture
async def legacy_url(postgres_admin_url: str) -> AsyncIterator[str]:
    import asyncpg

    name = f"mail_test_{uuid.uuid4().hex}_legacy"
    admin = await asyncpg.connect(postgres_admin_url, timeout=5)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = urlunsplit(urlsplit(postgres_admin_url)._replace(path=f"/{name}"))
    try:
        conn = await asyncpg.connect(url)
        try:
            await _write_like_the_original(conn)
        finally:
            await conn.close()
        yield url
    finally:
        await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        await admin.close()


async def _write_like_the_original(conn: Any) -> None:
    for statement in ORIGINAL_SCHEMA:
        await conn.execute(statement)
    tasks = (
        ("t1", False, True, "Finished", T0),
        ("t2", True, False, None, T0 + timedelta(minutes=1)),
    )
    for task_id, running, completed, title, start in tasks:
        await conn.execute(
            """INSERT INTO tasks (task_id, swarm_name, caller_role, caller_id, task_owner,
               task_contributors, remote_swarms, is_running, completed, title, start_time)
               VALUES ($1, $2, $3, $4, $5, $6::jsonb, '[]', $7, $8, $9, $10)""",
            task_id, *CALLER, "user:u1@demo", json.dumps(["user:u1@demo"]),
            running, completed, title, start,
        )  # fmt: skip
    # events inserted out of order: their created_at is the order they happened in
    for n in (2, 3, 1):
        await conn.execute(
            """INSERT INTO task_events (task_id, swarm_name, caller_role, caller_id,
               event_type, event_data, event_id, created_at)
               VALUES ('t1', $1, $2, $3, $4, $5, NULL, $6)""",
            *CALLER, f"event_{n}", json.dumps(data(n)), T0 + timedelta(seconds=n),
        )  # fmt: skip
    # one full-history row per completion, as the original wrote them
    histories = (
        ("supervisor", [{"role": "system"}], 1),
        ("supervisor", [{"role": "system"}, {"role": "user"}], 2),
        ("weather", [{"type": "message"}], 1),
    )
    for agent, history, n in histories:
        await conn.execute(
            """INSERT INTO agent_histories (swarm_name, caller_role, caller_id, tool_format,
               task_id, agent_name, history, created_at)
               VALUES ($1, $2, $3, 'completions', 't1', $4, $5::jsonb, $6)""",
            *CALLER, agent, json.dumps(history), T0 + timedelta(minutes=n),
        )  # fmt: skip
    await conn.execute(
        """INSERT INTO task_responses (task_id, swarm_name, caller_role, caller_id, response)
           VALUES ('t1', $1, $2, $3, $4::jsonb)""",
        *CALLER, json.dumps({"id": "final"}),
    )  # fmt: skip


async def test_original_database_is_upgraded_and_readable(legacy_url: str) -> None:
    async with PostgresStore(legacy_url, connect_timeout=5.0) as store:
        assert store.v1_readable
        assert await store.upgrade_from_v1() == [2, 3]
        assert not store.v1_readable
        assert await store.upgrade_from_v1() == []
        assert await store.schema_version() == latest_version("postgres")
        tasks = await store.load_tasks(KEY)
        assert [(t.task_id, t.state, t.title) for t in tasks] == [
            ("t1", "completed", "Finished"),
            ("t2", "running", None),
        ]
        assert tasks[0].task_contributors == ["user:u1@demo"]
        assert tasks[0].start_time == T0
        events = await store.load_events(KEY, "t1")
        assert [(e.seq, e.event, e.data) for e in events] == [
            (n, f"event_{n}", data(n)) for n in (1, 2, 3)
        ]
        # the newest row is the current history; older, shorter copies are gone
        assert await store.load_histories(KEY, "t1") == {
            "supervisor": [{"role": "system"}, {"role": "user"}],
            "weather": [{"type": "message"}],
        }
        assert await store.load_response(KEY, "t1") == {"id": "final"}

        # and the store carries on writing into the same tables
        await store.append_events(
            KEY, [EventRow(task_id="t1", seq=s, event="e", data={}) for s in (3, 4)]
        )
        assert [e.seq for e in await store.load_events(KEY, "t1")] == [1, 2, 3, 4]
        await store.save_history(KEY, "t1", "supervisor", [{"role": "system"}], "completions")
        assert (await store.load_histories(KEY, "t1"))["supervisor"] == [{"role": "system"}]
        now = datetime.now(UTC)
        row = TaskRow(
            task_id="t2", task_owner="user:u1@demo", state="failed", start_time=now, updated_at=now
        )
        await store.save_task(KEY, row)


async def test_original_columns_follow_the_state(legacy_url: str) -> None:
    import asyncpg

    async with PostgresStore(legacy_url) as store:
        now = datetime.now(UTC)
        for task_id, state in (("r", "running"), ("p", "waiting_breakpoint"), ("c", "completed")):
            await store.save_task(
                KEY,
                TaskRow(
                    task_id=task_id, task_owner="o", state=state, start_time=now, updated_at=now
                ),
            )
    conn = await asyncpg.connect(legacy_url)
    try:
        rows = await conn.fetch(
            "SELECT task_id, is_running, completed FROM tasks WHERE task_id = ANY($1::text[])",
            ["r", "p", "c"],
        )
        event_ids = await conn.fetch("SELECT event_id FROM task_events WHERE seq IS NULL")
    finally:
        await conn.close()
    assert {r["task_id"]: (r["is_running"], r["completed"]) for r in rows} == {
        "r": (True, False),
        "p": (False, True),
        "c": (False, True),
    }
    # shared with v1.3.6: the original's rows stay as they were
    assert [r["event_id"] for r in event_ids] == [None, None, None]


async def test_unused_secondary_indexes_are_dropped(legacy_url: str) -> None:
    """Migration 3 (with the upgrade): the original's secondary indexes that no query uses go (every insert
    paid for them); the tables' unique indexes, which the queries use, stay."""
    import asyncpg

    async with PostgresStore(legacy_url) as store:
        await store.upgrade_from_v1()
        assert await store.schema_version() == latest_version("postgres")
    conn = await asyncpg.connect(legacy_url)
    try:
        names = {r["indexname"] for r in await conn.fetch("SELECT indexname FROM pg_indexes")}
    finally:
        await conn.close()
    dropped = {
        "idx_agent_histories_swarm_name",
        "idx_agent_histories_task_id",
        "idx_agent_histories_caller",
        "idx_agent_histories_agent_name",
        "idx_agent_histories_created_at",
        "idx_tasks_task_id",
        "idx_task_events_created",
        "idx_task_responses_lookup",
    }
    assert not names & dropped
    assert {"uq_task_events_seq", "uq_agent_histories_current", "idx_tasks_finished"} <= names
    assert "idx_tasks_lookup" in names  # the original lists a caller's tasks with it
