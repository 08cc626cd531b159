"""Budgets through the Python API: the runtime counts the tokens an agent function reports
(``report_usage``) and stops the task past a limit; a request above the runtime's ceiling
is refused before anything changes."""

from __future__ import annotations

from typing import Any

import pytest

from mail.core import report_usage
from mail.core.agents import AgentCore
from mail.core.budget import Budget
from mail.core.tasks import TaskState
from mail.errors import InvalidMessageError
from mail.testing import Incoming, ScriptedAgent, ScriptedCall, tc


def _reporting(tokens: int) -> ScriptedAgent:
    """An agent that reports ``tokens`` input tokens per turn and never finishes (it asks
    for help, which answers and prompts it again)."""

    def turn(_incoming: Incoming) -> ScriptedCall:
        report_usage({"input_tokens": tokens, "output_tokens": 0}, model="m")
        return tc("help")

    return ScriptedAgent(rule=turn)


def _supervisor(function: Any) -> dict[str, AgentCore]:
    return {"supervisor": AgentCore(function, [], enable_entrypoint=True, can_complete_tasks=True)}


async def test_reported_tokens_stop_the_task(make_runtime: Any, user_message: Any) -> None:
    rt = make_runtime(_supervisor(_reporting(40)))

    final = await rt.submit_and_wait(
        user_message("hi", "t-py"), timeout=10, budget={"input_tokens": 100}
    )

    task = rt.get_task("t-py")
    assert task is not None and task.state is TaskState.FAILED
    assert "budget exceeded: input_tokens 120 > 100" in final["message"]["body"]
    assert task.budget is not None and task.budget.spent.agent_turns == 3


async def test_a_request_above_the_ceiling_is_refused_before_the_task_exists(
    make_runtime: Any, user_message: Any
) -> None:
    rt = make_runtime(_supervisor(_reporting(1)))
    rt.budgets.ceiling = Budget(input_tokens=50)

    with pytest.raises(InvalidMessageError, match=r"input_tokens 60 > 50 \(the swarm's ceiling\)"):
        await rt.submit(user_message("hi", "t-over"), budget={"input_tokens": 60})

    assert rt.get_task("t-over") is None
