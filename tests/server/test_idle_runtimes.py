"""Idle caller runtimes are shut down by the sweeper (``[server] idle_runtime_seconds``)
without losing anything a caller can still ask for: with a task store the tasks come back
on the next request; without one, a runtime holding tasks is kept; and a request that meets
an eviction gets a fresh runtime, never a 409 (issue 5, "per-caller runtimes")."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.server.conftest import (
    Running,
    Start,
    ask_human_action,
    make_config,
    scripted_template,
    within,
)

from mail.api import MAILSwarmTemplate
from mail.server._state import CallerSwarms
from mail.server.auth import Caller
from mail.testing import Incoming, ScriptedAgent, ScriptedCall, tc

pytestmark = pytest.mark.timeout(30)

U1 = Caller(role="user", id="u1", api_key="user-key")
IDLE = 0.2  # seconds: the sweeper runs every IDLE seconds too


def pausing_swarm() -> MAILSwarmTemplate:
    """Pauses on ``ask_human`` when the body is "pause" (completing once the answer comes
    back), else completes at once."""
    asked: set[str] = set()  # the messages already answered with ask_human

    def rule(incoming: Incoming) -> ScriptedCall:
        if incoming.body == "pause" and incoming.content not in asked:
            asked.add(incoming.content)
            return tc("ask_human", call_id="bp-1", question="What is your name?")
        return tc("task_complete", finish_message=f"done: {incoming.body}")

    return scripted_template(
        {"supervisor": ScriptedAgent(rule=rule)},
        breakpoint_tools=["ask_human"],
        actions=[ask_human_action()],
    )


def resume_body(task_id: str) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "resume_from": "breakpoint_tool_call",
        "kwargs": {"breakpoint_tool_call_result": "Ada"},
    }


async def swept_until(swarms: CallerSwarms, runtimes: int) -> None:
    """Wait for sweeps until ``runtimes`` runtimes are left (reads nothing that counts as
    using a runtime)."""

    async def sweeps() -> None:
        while len(swarms) != runtimes:
            await swarms.next_sweep()

    await within(sweeps())


async def test_with_a_store_an_evicted_callers_tasks_come_back(
    start: Start, tmp_path: Path
) -> None:
    config = make_config(tmp_path, idle_runtime_seconds=IDLE)
    assert config.database.persist  # the SQLite store in tmp_path
    server = await start(config, template=pausing_swarm())
    user = await server.user()
    finished = await user.post("/message", json={"body": "hello", "task_id": "t-done"})
    paused = await user.post("/message", json={"body": "pause", "task_id": "t-paused"})
    before = (await user.get("/task", params={"task_id": "t-done"})).json()
    assert finished.json()["response"] == "done: hello"
    assert paused.json()["status"] == "waiting_breakpoint"

    await swept_until(server.state.swarms, 0)

    after = await user.get("/task", params={"task_id": "t-done"})
    assert after.status_code == 200
    assert after.json()["state"] == "completed"
    assert after.json()["events"] == before["events"]
    assert sorted((await user.get("/tasks")).json()) == ["t-done", "t-paused"]
    resumed = await user.post("/message", json=resume_body("t-paused"))
    assert (resumed.status_code, resumed.json()["status"]) == (200, "completed")
    again = await user.post(
        "/message", json={"body": "more", "task_id": "t-done", "resume_from": "user_response"}
    )
    assert (again.status_code, again.json()["response"]) == (200, "done: more")


async def test_without_a_store_a_paused_task_survives_the_sweep(
    start: Start, tmp_path: Path
) -> None:
    config = make_config(
        tmp_path,
        idle_runtime_seconds=IDLE,
        settings={"print_llm_streams": False, "finished_task_ttl": 0.05},
        database={"persist": False},
    )
    server = await start(config, template=pausing_swarm())
    user, user2 = await server.user(), await server.user2()
    paused = await user.post("/message", json={"body": "pause", "task_id": "t-bp"})
    assert paused.json()["status"] == "waiting_breakpoint"
    # the control: u2's only task is finished and past finished_task_ttl, so u2's runtime
    # holds nothing to lose and goes; u1's, idle just as long, must stay
    done = await user2.post("/message", json={"body": "hi", "task_id": "t-u2"})
    assert done.json()["status"] == "completed"

    await swept_until(server.state.swarms, 1)

    assert server.state.swarms.lookup("user", "u1") is not None
    task = await user.get("/task", params={"task_id": "t-bp"})
    assert (task.status_code, task.json()["state"]) == (200, "waiting_breakpoint")
    resumed = await user.post("/message", json=resume_body("t-bp"))
    assert resumed.status_code == 200
    assert resumed.json()["status"] == "completed"


async def test_a_request_meeting_an_eviction_gets_a_fresh_runtime(offline: Running) -> None:
    user = await offline.user()
    first = await user.post("/message", json={"body": "what is 6*7?", "task_id": "t-race"})
    assert first.status_code == 200
    swarms = offline.state.swarms
    old = swarms.lookup("user", "u1")

    # the sweep takes the runtime out before the request reaches the server, which then
    # meets it shutting down: it must wait for it and build a new one, not answer 409
    sweep = asyncio.ensure_future(swarms.evict_idle(0.0))
    resumed = await user.post(
        "/message",
        json={"body": "what is 1+1?", "task_id": "t-race", "resume_from": "user_response"},
    )

    assert await within(sweep) == 1
    assert resumed.status_code == 200, resumed.text
    assert "2" in resumed.json()["response"]
    new = swarms.lookup("user", "u1")
    assert new is not None
    assert new is not old


async def test_a_held_runtime_is_not_evicted(offline: Running) -> None:
    swarms = offline.state.swarms

    async with swarms.hold(U1) as swarm:
        assert await swarms.evict_idle(0.0) == 0
        assert not swarm.runtime.stopping

    assert await swarms.evict_idle(0.0) == 1
    assert swarm.runtime.stopping
