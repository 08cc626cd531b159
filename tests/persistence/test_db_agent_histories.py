"""``enable_db_agent_histories`` (issue 22, item 8): off, the agents' histories are not
stored (as v1.3.6), while task records, events and responses still are; a follow-up after
a restart then starts the agents afresh."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.persistence.conftest import KEY

from mail.api import MAILSwarm, MAILSwarmTemplate
from mail.db import PostgresStore, SQLiteStore, TaskStore
from mail.testing.persist_swarm import swarm_definition

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(params=["sqlite", "postgres"])
async def real_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    """A store on a new SQLite file or PostgreSQL database (opened by each runtime's
    owner: the test opens and closes it)."""
    if request.param == "sqlite":
        yield SQLiteStore(tmp_path / "mail.db")
    else:
        _admin, url = request.getfixturevalue("postgres_database")
        yield PostgresStore(url, connect_timeout=5.0)


def _template(tmp_path: Path, histories: bool) -> MAILSwarmTemplate:
    path = tmp_path / "swarms.json"
    path.write_text(json.dumps([swarm_definition(histories=histories)]), encoding="utf-8")
    return MAILSwarmTemplate.from_swarm_json_file("persist", str(path))


async def _ask(swarm: MAILSwarm, body: str, **kw: Any) -> dict[str, Any]:
    message = swarm.build_message(subject="s", body=body, targets=["supervisor"], task_id="t1")
    answer: dict[str, Any] = await swarm.runtime.submit_and_wait(message, timeout=10, **kw)
    return answer


@pytest.mark.parametrize("histories", [True, False], ids=["on", "off"])
async def test_histories_are_stored_only_when_enabled(
    real_store: TaskStore, tmp_path: Path, histories: bool
) -> None:
    template = _template(tmp_path, histories)
    async with real_store as store:
        swarm = template.instantiate({}, user_id="u1", print_llm_streams=False, store=store)
        rt = swarm.runtime
        assert rt.enable_db_agent_histories is histories  # swarms.json -> template -> runtime
        rt.start()
        try:
            answer = await _ask(swarm, "first")
            assert answer["message"]["body"] == "done: first"
            assert rt.agent_histories["t1::supervisor"]  # kept in memory either way
        finally:
            await rt.shutdown(timeout=1)

        task = await store.load_task(KEY, "t1")
        assert task is not None and task.state == "completed"
        assert [e.seq for e in await store.load_events(KEY, "t1")] == [
            e.seq for e in rt.get_events("t1")
        ]
        assert await store.load_response(KEY, "t1") is not None
        stored = await store.load_histories(KEY, "t1")
        assert set(stored) == ({"supervisor"} if histories else set())

        # a restart, then a follow-up: with histories, the supervisor carries on from its
        # stored history; without, it starts afresh with the follow-up alone
        again = template.instantiate({}, user_id="u1", print_llm_streams=False, store=store)
        rt2 = again.runtime
        assert await rt2.restore() == 1
        assert ("t1::supervisor" in rt2.agent_histories) is histories
        rt2.start()
        try:
            answer = await _ask(again, "second", resume_from="user_response")
            assert answer["message"]["body"] == "done: second"
            history = json.dumps(rt2.agent_histories["t1::supervisor"])
        finally:
            await rt2.shutdown(timeout=1)
        assert "second" in history
        assert ("first" in history) is histories
        # the task's events carry on from the stored ones either way
        seqs = [e.seq for e in await store.load_events(KEY, "t1")]
        assert seqs == list(range(1, len(seqs) + 1))
        assert set(await store.load_histories(KEY, "t1")) == (
            {"supervisor"} if histories else set()
        )
