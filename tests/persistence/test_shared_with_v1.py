"""A PostgreSQL database shared with a v1.3.6 server (issue 22, item 7).

The original's tables are created exactly as CONTRACT §11 defines them and filled with the
original's own statements (:class:`V1Server`); then our store opens the database (its
migrations run, as on connect), v1.3.6's statements run again, a runtime of ours works in
it, and each side reads what the other wrote.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.persistence.conftest import MakeSwarm

from mail.cli import main
from mail.cli._doctor import check_store
from mail.config import DatabaseConfig
from mail.db import CallerKey, PostgresStore

pytestmark = pytest.mark.timeout(60)

SWARM, ROLE, CALLER = "persist", "user", "u1"
KEY = CallerKey(swarm=SWARM, role=ROLE, id=CALLER)
OWNER = f"{ROLE}:{CALLER}@{SWARM}"

# `mail db-init` of v1.3.6: every table and index of CONTRACT §11
V1_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS agent_histories (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL, caller_id TEXT NOT NULL,
        tool_format TEXT NOT NULL, task_id TEXT NOT NULL, agent_name TEXT NOT NULL,
        history JSONB NOT NULL,
        created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
        updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW())""",
    "CREATE INDEX IF NOT EXISTS idx_agent_histories_swarm_name ON agent_histories(swarm_name)",
    "CREATE INDEX IF NOT EXISTS idx_agent_histories_task_id ON agent_histories(task_id)",
    """CREATE INDEX IF NOT EXISTS idx_agent_histories_caller
        ON agent_histories(caller_role, caller_id)""",
    "CREATE INDEX IF NOT EXISTS idx_agent_histories_agent_name ON agent_histories(agent_name)",
    """CREATE INDEX IF NOT EXISTS idx_agent_histories_created_at
        ON agent_histories(created_at DESC)""",
    """CREATE TABLE IF NOT EXISTS tasks (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        task_id TEXT NOT NULL, swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL,
        caller_id TEXT NOT NULL, task_owner TEXT NOT NULL,
        task_contributors JSONB NOT NULL DEFAULT '[]', remote_swarms JSONB NOT NULL DEFAULT '[]',
        is_running BOOLEAN NOT NULL DEFAULT FALSE, completed BOOLEAN NOT NULL DEFAULT FALSE,
        title TEXT, start_time TIMESTAMP WITH TIME ZONE NOT NULL,
        created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
        updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
        UNIQUE(task_id, swarm_name, caller_role, caller_id))""",
    """CREATE TABLE IF NOT EXISTS task_events (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        task_id TEXT NOT NULL, swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL,
        caller_id TEXT NOT NULL, event_type TEXT, event_data TEXT, event_id TEXT,
        created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW())""",
    """CREATE TABLE IF NOT EXISTS task_responses (
        id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
        task_id TEXT NOT NULL, swarm_name TEXT NOT NULL, caller_role TEXT NOT NULL,
        caller_id TEXT NOT NULL, response JSONB NOT NULL,
        created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
        UNIQUE(task_id, swarm_name, caller_role, caller_id))""",
)


class V1Server:
    """The statements a v1.3.6 server runs (CONTRACT §11), on one connection."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def create_task(self, task_id: str, *, start: datetime) -> None:
        await self.conn.execute(
            """INSERT INTO tasks (task_id, swarm_name, caller_role, caller_id, task_owner,
               task_contributors, remote_swarms, is_running, completed, start_time)
               VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, TRUE, FALSE, $8)
               ON CONFLICT (task_id, swarm_name, caller_role, caller_id) DO NOTHING""",
            task_id, SWARM, ROLE, CALLER, OWNER, json.dumps([OWNER]), "[]", start,
        )  # fmt: skip

    async def event(self, task_id: str, name: str, description: str) -> None:
        data = {
            "timestamp": datetime.now(UTC).isoformat(),
            "description": description,
            "task_id": task_id,
            "extra_data": {},
        }
        await self.conn.execute(
            """INSERT INTO task_events (task_id, swarm_name, caller_role, caller_id,
               event_type, event_data, event_id) VALUES ($1, $2, $3, $4, $5, $6, $7)""",
            task_id, SWARM, ROLE, CALLER, name, json.dumps(data), None,
        )  # fmt: skip

    async def complete(
        self, task_id: str, histories: dict[str, list[dict[str, Any]]], response: dict[str, Any]
    ) -> None:
        """What v1.3.6 does on ``task_complete``: the full history of each agent, the
        response, the task marked completed."""
        for agent, history in histories.items():
            fmt = "completions" if "role" in history[0] else "responses"
            await self.conn.execute(
                """INSERT INTO agent_histories (swarm_name, caller_role, caller_id,
                   tool_format, task_id, agent_name, history)
                   VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)""",
                SWARM, ROLE, CALLER, fmt, task_id, agent, json.dumps(history),
            )  # fmt: skip
        await self.conn.execute(
            """INSERT INTO task_responses (task_id, swarm_name, caller_role, caller_id,
               response) VALUES ($1, $2, $3, $4, $5::jsonb)
               ON CONFLICT (task_id, swarm_name, caller_role, caller_id)
               DO UPDATE SET response = EXCLUDED.response""",
            task_id, SWARM, ROLE, CALLER, json.dumps(response),
        )  # fmt: skip
        await self.conn.execute(
            """UPDATE tasks SET is_running = FALSE, completed = TRUE, updated_at = NOW()
               WHERE task_id = $1 AND swarm_name = $2 AND caller_role = $3 AND caller_id = $4""",
            task_id, SWARM, ROLE, CALLER,
        )  # fmt: skip

    async def set_title(self, task_id: str, title: str) -> None:
        await self.conn.execute(
            "UPDATE tasks SET title = $5, updated_at = NOW() WHERE task_id = $1 AND swarm_name = $2 AND caller_role = $3 AND caller_id = $4",
            task_id, SWARM, ROLE, CALLER, title,
        )  # fmt: skip

    async def load(self) -> dict[str, Any]:
        """What a v1.3.6 instance loads: histories concatenated per ``task::agent`` in
        ``created_at`` order, tasks by ``start_time`` with their events, responses."""
        caller = (SWARM, ROLE, CALLER)
        histories: dict[str, list[Any]] = {}
        for row in await self.conn.fetch(
            "SELECT * FROM agent_histories WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 ORDER BY created_at",
            *caller,
        ):
            key = f"{row['task_id']}::{row['agent_name']}"
            histories.setdefault(key, []).extend(json.loads(row["history"]))
        tasks: dict[str, dict[str, Any]] = {}
        for row in await self.conn.fetch(
            "SELECT * FROM tasks WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 ORDER BY start_time",
            *caller,
        ):
            events = await self.conn.fetch(
                """SELECT event_type, event_data, event_id FROM task_events
                    WHERE task_id = $1 AND swarm_name = $2 AND caller_role = $3 AND caller_id = $4 ORDER BY created_at""",
                row["task_id"], *caller,
            )  # fmt: skip
            tasks[row["task_id"]] = {
                "is_running": row["is_running"],
                "completed": row["completed"],
                "title": row["title"],
                "events": [(e["event_type"], json.loads(e["event_data"])) for e in events],
            }
        responses = {
            row["task_id"]: json.loads(row["response"])
            for row in await self.conn.fetch(
                "SELECT task_id, response FROM task_responses WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3",
                *caller,
            )
        }
        return {"histories": histories, "tasks": tasks, "responses": responses}


@pytest.fixture
async def v1(postgres_database: tuple[str, str]) -> AsyncIterator[tuple[str, V1Server]]:
    """``(url, v1.3.6 server)`` on a new database holding the original's tables and one
    task ``old`` it completed."""
    import asyncpg

    url = postgres_database[1]
    conn = await asyncpg.connect(url)
    try:
        for statement in V1_SCHEMA:
            await conn.execute(statement)
        server = V1Server(conn)
        await server.create_task("old", start=datetime(2025, 6, 1, tzinfo=UTC))
        await server.event("old", "new_message", "first")
        await server.event("old", "task_complete", "response: 'fine'")
        await server.complete(
            "old",
            {"supervisor": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]},
            {"id": "r-old", "msg_type": "response"},
        )
        yield url, server
    finally:
        await conn.close()


def nullable_request(rows: list[Any]) -> bool:
    return [row["is_nullable"] for row in rows] == ["YES"]


async def _names(conn: Any, sql: str) -> set[str]:
    return {row[0] for row in await conn.fetch(sql)}


async def test_migrations_change_only_what_v1_can_live_with(v1: tuple[str, V1Server]) -> None:
    url, server = v1
    async with PostgresStore(url) as store:
        assert store.v1_readable
    conn = server.conn
    assert await _names(conn, "SELECT version::text FROM schema_migrations") == {
        "1",
        "4",
        "5",
        "6",
        "7",
        "8",
        "9",
        "10",
    }  # 5-8 and 10: new tables and indexes of our own (cluster, MAP Mail, task leases,
    # shared conversations); 9: a nullable column of tasks v1.3.6 neither writes nor reads
    assert nullable_request(
        await conn.fetch(
            "SELECT is_nullable FROM information_schema.columns"
            " WHERE table_name = 'tasks' AND column_name = 'request'"
        )
    )
    nullable = {
        (row["table_name"], row["column_name"]): row["is_nullable"]
        for row in await conn.fetch(
            "SELECT table_name, column_name, is_nullable FROM information_schema.columns"
        )
    }
    assert nullable[("task_events", "seq")] == "YES"
    assert nullable[("tasks", "state")] == "YES"
    indexes = await _names(conn, "SELECT indexname FROM pg_indexes")
    assert "uq_agent_histories_current" not in indexes
    assert "idx_agent_histories_caller" in indexes  # the original's indexes stay
    histories = await conn.fetchval("SELECT count(*) FROM agent_histories")
    assert histories == 1  # nothing deleted


async def test_both_servers_read_what_the_other_wrote(
    v1: tuple[str, V1Server], make_swarm: MakeSwarm
) -> None:
    url, server = v1
    async with PostgresStore(url) as store:
        # v1.3.6 carries on after our migrations: a second completion of `old` (its full
        # history inserted again) and a new task
        await server.event("old", "new_message", "again")
        await server.complete(
            "old",
            {
                "supervisor": [
                    {"role": "system", "content": "s"},
                    {"role": "user", "content": "u"},
                    {"role": "user", "content": "u2"},
                ]
            },
            {"id": "r-old-2", "msg_type": "response"},
        )
        await server.create_task("v1-running", start=datetime(2025, 6, 2, tzinfo=UTC))
        await server.event("v1-running", "new_message", "hello")
        await server.set_title("old", "Old task")

        # ours reads it as our server shows it
        swarm = make_swarm(store)
        rt = swarm.runtime
        assert await rt.restore() == 2
        old = rt.get_task("old")
        assert old is not None and old.state.value == "completed" and old.title == "Old task"
        assert [(e.seq, e.event, e.description) for e in rt.get_events("old")] == [
            (1, "new_message", "first"),
            (2, "task_complete", "response: 'fine'"),
            (3, "new_message", "again"),
        ]
        assert old.response == {"id": "r-old-2", "msg_type": "response"}
        # the newest row is the agent's current history
        assert rt.agent_histories["old::supervisor"][-1] == {"role": "user", "content": "u2"}
        running = rt.get_task("v1-running")
        assert running is not None and running.state.value == "interrupted"  # it crashed

        # ours works in the same database
        rt.start()
        message = swarm.build_message(
            subject="s", body="hello", targets=["supervisor"], task_id="ours"
        )
        answer = await rt.submit_and_wait(message, timeout=10)
        assert answer["message"]["body"] == "done: hello"
        await rt.submit_and_wait(
            swarm.build_message(subject="s", body="more", targets=["supervisor"], task_id="ours"),
            timeout=10,
            resume_from="user_response",
        )
        assert rt.recorder is not None
        await rt.recorder.persisted()
        events = [(e.event, e.data()) for e in rt.get_events("ours")]
        histories = {k: v for k, v in rt.agent_histories.items() if k.startswith("ours::")}
        response = rt.get_task("ours").response  # type: ignore[union-attr]

        # v1.3.6's selects read it whole: descriptions, messages, one history per agent
        seen = await server.load()
        ours = seen["tasks"]["ours"]
        assert (ours["is_running"], ours["completed"]) == (False, True)
        # (in order: each row has its own created_at, the only order v1.3.6 reads by)
        assert ours["events"] == [(name, json.loads(json.dumps(d))) for name, d in events]
        stamps = await server.conn.fetch(
            "SELECT created_at FROM task_events WHERE task_id = 'ours' ORDER BY seq"
        )
        assert [r[0] for r in stamps] == sorted({r[0] for r in stamps})
        assert {k: v for k, v in seen["histories"].items() if k.startswith("ours::")} == (
            json.loads(json.dumps(histories))
        )
        assert seen["responses"]["ours"] == json.loads(json.dumps(response))
        assert [e[0] for e in seen["tasks"]["v1-running"]["events"]] == [
            "new_message",
            "task_interrupted",  # our restore's, readable by v1.3.6 too
        ]
        # v1.3.6's own second completion concatenates, as it always did
        assert len(seen["histories"]["old::supervisor"]) == 5

        # and a second runtime of ours reloads our task as it was
        other = make_swarm(store).runtime
        assert await other.restore() == 3
        assert [(e.event, e.data()) for e in other.get_events("ours")] == events
        reloaded = {k: v for k, v in other.agent_histories.items() if k.startswith("ours::")}
        assert reloaded == histories


async def test_upgrade_from_v1_keeps_what_both_wrote(
    v1: tuple[str, V1Server], make_swarm: MakeSwarm
) -> None:
    url, server = v1
    async with PostgresStore(url) as store:
        swarm = make_swarm(store)
        swarm.runtime.start()
        message = swarm.build_message(subject="s", body="x", targets=["supervisor"], task_id="t")
        await swarm.runtime.submit_and_wait(message, timeout=10)
        await server.event("old", "new_message", "later")  # seq NULL, numbered 3 on read
        before = {t: await store.load_events(KEY, t) for t in ("old", "t")}
        assert await store.upgrade_from_v1() == [2, 3]
        assert not store.v1_readable
        after = {t: await store.load_events(KEY, t) for t in ("old", "t")}
        assert [(e.seq, e.event, e.data) for e in after["old"]] == [
            (e.seq, e.event, e.data) for e in before["old"]
        ]
        assert [e.seq for e in after["t"]] == [e.seq for e in before["t"]]
        assert (await store.load_task(KEY, "old")).state == "completed"  # type: ignore[union-attr]


async def test_db_migrate_upgrades_from_v1_only_when_told_and_confirmed(
    v1: tuple[str, V1Server], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, server = v1
    config = tmp_path / "mail.toml"
    config.write_text(f'[database]\nurl = "{url}"\n', encoding="utf-8")

    async def versions() -> set[str]:
        return await _names(server.conn, "SELECT version::text FROM schema_migrations")

    def migrate(*flags: str) -> int:
        return main(["db-migrate", "-c", str(config), *flags])

    assert await asyncio.to_thread(migrate) == 0
    assert "shared with v1.3.6" in capsys.readouterr().out
    assert await versions() == {"1", "4", "5", "6", "7", "8", "9", "10"}  # 5-10: ours alone
    found = await check_store(DatabaseConfig(url=url))
    assert found.status == "ok" and "--upgrade-from-v1" in found.message

    # no terminal to ask on, no --yes: nothing changes
    assert await asyncio.to_thread(migrate, "--upgrade-from-v1") == 2
    captured = capsys.readouterr()
    assert "DELETED" in captured.out  # it said what it would change
    assert "confirm with --yes" in captured.err
    assert await versions() == {"1", "4", "5", "6", "7", "8", "9", "10"}  # 5-10: ours alone

    assert await asyncio.to_thread(migrate, "--upgrade-from-v1", "--yes") == 0
    assert "applied 2, 3" in capsys.readouterr().out
    assert await versions() == {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}
    assert await server.conn.fetchval("SELECT count(*) FROM agent_histories") == 1

    assert await asyncio.to_thread(migrate, "--upgrade-from-v1") == 0
    assert "nothing to upgrade" in capsys.readouterr().out
