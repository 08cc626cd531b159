"""Multi-turn tasks: user_response follow-ups, task id reuse (CONTRACT 4.8, 15 items 1-2)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mail.core.agents import AgentCore
from mail.core.events import EventName
from mail.core.tasks import TaskState
from mail.errors import InvalidMessageError, TaskNotFoundError, TaskStateError
from mail.testing import Incoming, ScriptedAgent, tc


def delegating_swarm(make_runtime: Any) -> tuple[Any, ScriptedAgent, ScriptedAgent]:
    def supervisor(incoming: Incoming) -> Any:
        if incoming.sender_type == "user":
            return tc("send_request", target="worker", subject="job", body=incoming.body)
        return tc("task_complete", finish_message="answer to " + incoming.body)

    sup = ScriptedAgent(rule=supervisor)
    worker = ScriptedAgent(
        rule=lambda inc: tc("send_response", target="supervisor", subject="done", body=inc.body)
    )
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                sup, ["worker"], enable_entrypoint=True, can_complete_tasks=True
            ),
            "worker": AgentCore(worker, ["supervisor"]),
        }
    )
    return rt, sup, worker


async def test_followup_right_after_completion_gets_its_own_answer_contract_15_1(
    make_runtime: Any, user_message: Any, wait_event: Any
) -> None:
    """Regression, stale-completion race: the follow-up used to receive the previous answer."""
    rt, sup, _ = delegating_swarm(make_runtime)
    task = await rt.submit(user_message("q1", "t-mt"))
    first = task.turn
    # follow up as early as possible: the moment the final answer is logged
    await wait_event(
        rt,
        "t-mt",
        lambda e: e.event == EventName.NEW_MESSAGE and e.description.startswith("task_complete"),
    )
    second = await rt.submit_and_wait(
        user_message("q2", "t-mt"), resume_from="user_response", timeout=10
    )
    assert first.result()["message"]["body"] == "answer to q1"
    assert second["message"]["body"] == "answer to q2"
    third = await rt.submit_and_wait(
        user_message("q3", "t-mt"), resume_from="user_response", timeout=10
    )
    assert third["message"]["body"] == "answer to q3"
    assert rt.get_task("t-mt").state is TaskState.COMPLETED

    # histories continue across turns: the supervisor saw all three user messages, in order
    user_messages = [
        item["content"]
        for item in rt.agent_histories["t-mt::supervisor"]
        if item.get("role") == "user" and '<from type="user">u1</from>' in item["content"]
    ]
    assert len(user_messages) == 3
    assert "<body>q1</body>" in user_messages[0]
    assert "<body>q2</body>" in user_messages[1]
    assert "<body>q3</body>" in user_messages[2]
    first_turn_history, _ = sup.calls[1]
    last_history, _ = sup.calls[-1]
    assert last_history[: len(first_turn_history)] == first_turn_history
    # one stored task_complete per turn, each with its own answer, awaited or not
    assert [e.description for e in rt.get_events("t-mt") if e.event == EventName.TASK_COMPLETE] == [
        "response: 'answer to q1'",
        "response: 'answer to q2'",
        "response: 'answer to q3'",
    ]


async def test_followup_on_a_completed_task_without_resume_from_raises_contract_15_2(
    make_runtime: Any, user_message: Any
) -> None:
    """Regression: reusing a finished task id without resume_from hung until the timeout."""
    rt, sup, _ = delegating_swarm(make_runtime)
    await rt.submit_and_wait(user_message("q1", "t-reuse"), timeout=10)
    before = rt.get_task("t-reuse").log.last_seq
    with pytest.raises(TaskStateError, match="user_response"):
        await asyncio.wait_for(rt.submit_and_wait(user_message("q2", "t-reuse"), timeout=30), 2)
    assert rt.get_task("t-reuse").state is TaskState.COMPLETED
    assert rt.get_task("t-reuse").log.last_seq == before
    assert sup.invocations == 2


async def test_user_response_on_an_unknown_task_raises(
    make_runtime: Any, user_message: Any
) -> None:
    rt, sup, _ = delegating_swarm(make_runtime)
    with pytest.raises(TaskNotFoundError):
        await rt.submit_and_wait(
            user_message("hello", "t-nope"), resume_from="user_response", timeout=5
        )
    assert rt.get_task("t-nope") is None
    assert sup.invocations == 0


async def test_unknown_resume_from_value_is_rejected(make_runtime: Any, user_message: Any) -> None:
    rt, sup, _ = delegating_swarm(make_runtime)
    with pytest.raises(InvalidMessageError):
        await rt.submit_and_wait(user_message("q", "t-rf"), resume_from="later", timeout=5)
    assert sup.invocations == 0


async def test_followup_on_a_failed_task_runs_again(make_runtime: Any, user_message: Any) -> None:
    sup = ScriptedAgent(
        [
            RuntimeError("first failure"),
            RuntimeError("second failure"),
            tc("task_complete", finish_message="recovered"),
        ]
    )
    rt = make_runtime(
        {"supervisor": AgentCore(sup, [], enable_entrypoint=True, can_complete_tasks=True)}
    )
    failed = await rt.submit_and_wait(user_message("q1", "t-again"), timeout=10)
    assert failed["message"]["subject"] == "::task_error::"
    assert rt.get_task("t-again").state is TaskState.FAILED
    final = await rt.submit_and_wait(
        user_message("q2", "t-again"), resume_from="user_response", timeout=10
    )
    assert final["message"]["body"] == "recovered"
    assert rt.get_task("t-again").state is TaskState.COMPLETED
