"""Shutdown: cancelling agents stuck mid-turn, or letting them finish (CONTRACT 4.14)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mail.core.agents import AgentCore
from mail.core.events import EventName
from mail.core.tasks import TaskState
from mail.errors import TaskStateError
from mail.testing import ScriptedAgent, tc


def gated_solo(make_runtime: Any, probe: Any) -> tuple[Any, Any, asyncio.Event]:
    gate = asyncio.Event()
    agent = probe(
        ScriptedAgent([tc("task_complete", finish_message="finished in time")], gate=gate)
    )
    rt = make_runtime(
        {"supervisor": AgentCore(agent, [], enable_entrypoint=True, can_complete_tasks=True)}
    )
    return rt, agent, gate


async def test_shutdown_cancels_agents_stuck_mid_turn(
    make_runtime: Any, user_message: Any, probe: Any
) -> None:
    rt, agent, _ = gated_solo(make_runtime, probe)
    waiting = asyncio.ensure_future(rt.submit_and_wait(user_message("hi", "t-shut"), timeout=30))
    await agent.next_entry()
    assert agent.inner.running == 1

    await asyncio.wait_for(rt.shutdown(timeout=0.05), 10)

    final = await asyncio.wait_for(waiting, 5)
    assert final["msg_type"] == "broadcast_complete"
    assert final["message"]["subject"] == "::shutdown_requested::"
    task = rt.get_task("t-shut")
    assert task.state is TaskState.CANCELLED
    assert agent.inner.running == 0  # the turn was cancelled, not left dangling
    events = rt.get_events("t-shut")
    assert [e.event for e in events] == ["new_message", "task_error"]
    assert "shut down" in events[-1].description
    assert not rt.is_running
    assert EventName.SHUTDOWN_REQUESTED in [e.event for e in rt.runtime_log.all()]
    # a stopped runtime takes no new work
    with pytest.raises(TaskStateError):
        await rt.submit_and_wait(user_message("more", "t-after"), timeout=1)
    assert rt.get_task("t-after") is None


async def test_shutdown_lets_a_turn_that_finishes_in_time_complete(
    make_runtime: Any, user_message: Any, probe: Any
) -> None:
    rt, agent, gate = gated_solo(make_runtime, probe)
    waiting = asyncio.ensure_future(rt.submit_and_wait(user_message("hi", "t-grace"), timeout=30))
    await agent.next_entry()

    # release the agent only once shutdown has started draining
    asyncio.get_running_loop().call_soon(gate.set)
    await asyncio.wait_for(rt.shutdown(timeout=5), 10)

    final = await asyncio.wait_for(waiting, 5)
    assert final["message"]["subject"] == "::task_complete::"
    assert final["message"]["body"] == "finished in time"
    assert rt.get_task("t-grace").state is TaskState.COMPLETED
    assert [e.event for e in rt.get_events("t-grace")] == [
        "new_message",
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    assert agent.inner.invocations == 1
    assert agent.inner.running == 0


async def test_shutdown_is_idempotent(make_runtime: Any, user_message: Any, probe: Any) -> None:
    rt, _, _ = gated_solo(make_runtime, probe)
    await asyncio.wait_for(rt.shutdown(timeout=1), 5)
    await asyncio.wait_for(rt.shutdown(timeout=1), 5)
    assert not rt.is_running
    assert [e.event for e in rt.runtime_log.all()].count(EventName.SHUTDOWN_REQUESTED) == 1
