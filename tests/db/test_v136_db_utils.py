"""v1.3.6's ``mail.db.utils`` / ``mail.db.init`` on our store (SQLite; PostgreSQL too when
``MAIL_TEST_POSTGRES_URL`` is set)."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mail.db import init, utils

BACKENDS = ["sqlite"] + (["postgres"] if os.environ.get("MAIL_TEST_POSTGRES_URL") else [])


@pytest.fixture(params=BACKENDS)
def configured(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MAIL_CONFIG_PATH", str(tmp_path / "mail.toml"))
    (tmp_path / "mail.toml").write_text(
        f'[database]\nsqlite_path = "{tmp_path / "v136.db"}"\n', encoding="utf-8"
    )
    if request.param == "postgres":
        # the session's own test database, never the admin database the variable names
        monkeypatch.setenv("DATABASE_URL", request.getfixturevalue("postgres_url"))
    else:
        monkeypatch.delenv("DATABASE_URL", raising=False)
    return str(request.param)


def test_rows_written_with_the_v136_functions_read_back(configured: str) -> None:
    swarm = f"v136-{os.getpid()}-{datetime.now(UTC).timestamp()}"
    who = (swarm, "user", "u1")

    async def run() -> None:
        await init.create_tables()
        store = await utils.get_pool()
        assert store.backend == configured
        start = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
        await utils.create_task("t1", *who, "user:u1@" + swarm, ["supervisor"], [], start)
        await utils.create_task("t1", *who, "someone else", [], [], start)  # kept as it was
        await utils.create_task_event("t1", *who, "new_message", json.dumps({"n": 1}), "e1")
        await utils.create_task_event("t1", *who, "task_complete", {"n": 2}, None)
        await utils.create_agent_history(
            *who, "completions", "t1", "supervisor", [{"role": "user", "content": "hi"}]
        )
        await utils.create_task_response("t1", *who, {"message": {"body": "done"}})
        await utils.update_task("t1", *who, is_running=False, completed=True, title="Hello")
        await utils.update_task("missing", *who, title="ignored")

        [task] = await utils.load_tasks(*who)
        assert task["task_owner"] == "user:u1@" + swarm
        assert (task["is_running"], task["completed"], task["title"]) == (False, True, "Hello")
        assert task["start_time"] == start
        events = await utils.load_task_events("t1", *who)
        assert [e["event_type"] for e in events] == ["new_message", "task_complete"]
        assert json.loads(events[0]["event_data"]) == {"n": 1}
        assert await utils.load_agent_histories(*who) == {
            "t1::supervisor": [{"role": "user", "content": "hi"}]
        }
        assert await utils.load_task_responses(*who) == {"t1": {"message": {"body": "done"}}}
        assert await utils.load_tasks(swarm, "user", "someone-else") == []
        await utils.close_pool()

    asyncio.run(run())
