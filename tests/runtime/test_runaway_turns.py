"""An agent whose turns never suspend cannot starve the event loop, and an agent that keeps
answering its own tool errors with more errors fails its task instead of spinning forever
(regression: a scripted agent calling ``await_message`` with nothing to wait for froze the
server at full CPU while its task's events grew without bound)."""

from __future__ import annotations

import asyncio
from typing import Any

from mail.core._scheduler import MAX_TOOL_ERROR_TURNS
from mail.core.agents import AgentCore
from mail.core.tasks import TaskState
from mail.testing import Incoming, ScriptedAgent, tc


def _supervisor(agent: ScriptedAgent) -> dict[str, AgentCore]:
    return {"supervisor": AgentCore(agent, [], enable_entrypoint=True, can_complete_tasks=True)}


async def test_an_agent_looping_on_tool_errors_fails_its_task(
    make_runtime: Any, user_message: Any
) -> None:
    looping = ScriptedAgent(rule=lambda _incoming: tc("await_message"))
    rt = make_runtime(_supervisor(looping))

    final = await rt.submit_and_wait(user_message("hi", "t-loop"), timeout=10)

    task = rt.get_task("t-loop")
    assert task is not None and task.state is TaskState.FAILED
    assert final["message"]["body"].startswith(
        f"The task encountered an error: agent supervisor made tool errors in "
        f"{MAX_TOOL_ERROR_TURNS} turns in a row; the last: no outstanding requests"
    )
    assert looping.invocations == MAX_TOOL_ERROR_TURNS + 1


async def test_fewer_errors_in_a_row_leave_the_task_to_the_agent(
    make_runtime: Any, user_message: Any
) -> None:
    script: list[Any] = [tc("await_message")] * MAX_TOOL_ERROR_TURNS
    agent = ScriptedAgent([*script, tc("task_complete", finish_message="recovered")])
    rt = make_runtime(_supervisor(agent))

    final = await rt.submit_and_wait(user_message("hi", "t-recover"), timeout=10)

    assert final["message"]["body"] == "recovered"
    task = rt.get_task("t-recover")
    assert task is not None and task.state is TaskState.COMPLETED


async def test_chained_turns_let_other_work_run(make_runtime: Any, user_message: Any) -> None:
    # The first turn schedules a callback; the turns that follow at once (answers to tool
    # errors, none of which suspends) must let the event loop run it before the last one.
    ran = asyncio.Event()
    seen: list[bool] = []

    def turn(_incoming: Incoming) -> Any:
        if not seen:
            asyncio.get_running_loop().call_soon(ran.set)
        seen.append(ran.is_set())
        if len(seen) < 4:
            return tc("await_message")
        return tc("task_complete", finish_message="done")

    rt = make_runtime(_supervisor(ScriptedAgent(rule=turn)))

    final = await rt.submit_and_wait(user_message("hi", "t-fair"), timeout=10)

    assert final["message"]["body"] == "done"
    assert seen[0] is False
    assert seen[-1] is True
