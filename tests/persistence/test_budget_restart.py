"""A task's budget and what it spent survive a restart (SQLite; PostgreSQL when
``MAIL_TEST_POSTGRES_URL`` is set): a follow-up after the restart counts on from there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.persistence.conftest import running, server_config

pytestmark = pytest.mark.timeout(60)


async def _budget_survives(tmp_path: Path, **database: Any) -> None:
    config = server_config(tmp_path, **database)
    budget = {"agent_turns": 2, "seconds": 600, "warn_at": 0.99}
    async with running(config) as server:
        first = await server.client.post(
            "/message", json={"body": "hello", "task_id": "t-kept", "budget": budget}
        )
        assert first.status_code == 200, first.text
        assert first.json()["status"] == "completed"

    async with running(config) as server:
        restored = (await server.client.get("/task", params={"task_id": "t-kept"})).json()
        follow = {"body": "again", "task_id": "t-kept", "resume_from": "user_response"}
        second = (await server.client.post("/message", json=follow)).json()
        third = (await server.client.post("/message", json=follow)).json()

    assert restored["budget"]["limits"] == budget
    assert restored["budget"]["spent"]["agent_turns"] == 1
    assert 0 < restored["budget"]["spent"]["seconds"] < 600
    assert second["status"] == "completed"  # the second turn of two
    assert third["status"] == "failed"
    assert "budget exceeded: agent_turns 3 > 2" in third["response"]


async def test_sqlite_keeps_the_budget_over_a_restart(tmp_path: Path) -> None:
    await _budget_survives(tmp_path)


async def test_postgres_keeps_the_budget_over_a_restart(
    tmp_path: Path, postgres_database: tuple[str, str]
) -> None:
    await _budget_survives(tmp_path, url=postgres_database[1])
