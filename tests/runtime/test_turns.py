"""Turn boundaries: timeouts, late completions, concurrent breakpoints, run_task."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mail.core.agents import AgentCore
from mail.core.events import EventName
from mail.core.tasks import TaskState
from mail.errors import TaskNotFoundError
from mail.testing import Incoming, ScriptedAgent, tc


def answer_agent(probe: Any, gate: asyncio.Event) -> Any:
    return probe(
        ScriptedAgent(
            rule=lambda inc: tc(
                "task_complete", call_id=f"tc-{inc.body}", finish_message="answer to " + inc.body
            ),
            gate=gate,
        )
    )


async def test_timeout_fails_the_turn_and_a_late_completion_is_a_duplicate(
    make_runtime: Any, user_message: Any, wait_event: Any, probe: Any
) -> None:
    gate = asyncio.Event()
    agent = answer_agent(probe, gate)
    rt = make_runtime(
        {"supervisor": AgentCore(agent, [], enable_entrypoint=True, can_complete_tasks=True)}
    )
    waiting = asyncio.ensure_future(
        rt.submit_and_wait(user_message("q1", "t-timeout"), timeout=0.05)
    )
    assert await agent.next_entry() == "q1"
    final = await asyncio.wait_for(waiting, 5)
    assert final["msg_type"] == "broadcast_complete"
    assert final["message"]["subject"] == "::task_timeout::"
    assert final["message"]["body"] == "The task timed out."
    task = rt.get_task("t-timeout")
    assert task.state is TaskState.FAILED
    events = rt.get_events("t-timeout")
    assert [e.event for e in events] == ["new_message", "task_error"]
    assert events[1].description == "timeout for task 't-timeout'"

    gate.set()  # the agent finishes its turn after the caller gave up
    late = await wait_event(
        rt, "t-timeout", lambda e: e.event == EventName.TASK_COMPLETE_CALL_DUPLICATE
    )
    assert late.description == "agent supervisor called task_complete on already completed task"
    assert task.state is TaskState.FAILED
    assert rt.get_response_message("t-timeout") == final
    outputs = [h.get("output") for h in rt.agent_histories["t-timeout::supervisor"]]
    assert outputs[-1] == "SUCCESS: task already completed"


async def test_followup_after_timeout_is_not_answered_by_the_stale_turn_contract_15_1(
    make_runtime: Any, user_message: Any, wait_event: Any, probe: Any
) -> None:
    """A turn that outlived its caller must not answer the next turn (key completion to turns)."""
    gate = asyncio.Event()
    agent = answer_agent(probe, gate)
    rt = make_runtime(
        {"supervisor": AgentCore(agent, [], enable_entrypoint=True, can_complete_tasks=True)}
    )
    waiting = asyncio.ensure_future(rt.submit_and_wait(user_message("q1", "t-stale"), timeout=0.05))
    assert await agent.next_entry() == "q1"
    timed_out = await asyncio.wait_for(waiting, 5)
    assert timed_out["message"]["subject"] == "::task_timeout::"

    # the follow-up reaches the agent while its q1 turn is still running
    task = await rt.submit(user_message("q2", "t-stale"), resume_from="user_response")
    followup = task.turn
    await wait_event(
        rt,
        "t-stale",
        lambda e: (
            e.event == EventName.NEW_MESSAGE
            and e.extra_data["full_message"]["message"]["body"] == "q2"
        ),
    )
    gate.set()
    final = await asyncio.wait_for(asyncio.shield(followup), 10)
    assert final["message"]["body"] == "answer to q2"


async def test_breakpoints_of_two_agents_in_one_task_are_all_reported(
    make_runtime: Any, user_message: Any
) -> None:
    responses: list[str] = []

    def supervisor(incoming: Incoming) -> Any:
        if incoming.sender_type == "user":
            return [
                tc("send_request", target="a", subject="ask", body="ask a human"),
                tc("send_request", target="b", subject="ask", body="ask a human"),
            ]
        if incoming.sender_type == "agent":
            responses.append(incoming.body)
        if len(responses) == 2:
            return tc("task_complete", finish_message=" & ".join(sorted(responses)))
        return tc("ignore_broadcast", reason="waiting for the other answer")  # a no-op turn

    def helper(name: str) -> ScriptedAgent:
        return ScriptedAgent(
            [
                tc("ask_human", call_id=f"bp-{name}", question=f"from {name}"),
                tc("send_response", target="supervisor", subject="re", body=f"{name} done"),
            ]
        )

    a, b = helper("a"), helper("b")
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                ScriptedAgent(rule=supervisor),
                ["a", "b"],
                enable_entrypoint=True,
                can_complete_tasks=True,
            ),
            "a": AgentCore(a, ["supervisor"]),
            "b": AgentCore(b, ["supervisor"]),
        },
        breakpoint_tools=["ask_human"],
    )
    result = await rt.submit_and_wait(user_message("go", "t-two-bp"), timeout=3)
    reported: list[str] = []
    while result["message"]["subject"] == "::breakpoint_tool_call::":
        calls = json.loads(result["message"]["body"])
        new = [c["call_id"] for c in calls if c["call_id"] not in reported]
        assert new, "the same breakpoint calls were reported twice"
        reported.extend(new)
        result = await rt.submit_and_wait(
            user_message("", "t-two-bp"),
            resume_from="breakpoint_tool_call",
            breakpoint_tool_call_result=[{"call_id": c, "content": "yes"} for c in new],
            timeout=3,
        )
    assert sorted(reported) == ["bp-a", "bp-b"]
    assert result["message"]["body"] == "a done & b done"
    for name in ("a", "b"):
        assert {
            "type": "function_call_output",
            "call_id": f"bp-{name}",
            "output": "yes",
        } in rt.agent_histories[f"t-two-bp::{name}"]


async def test_stream_setup_errors_raise_before_streaming(
    make_runtime: Any, user_message: Any
) -> None:
    agent = ScriptedAgent(rule=lambda _: tc("task_complete", finish_message="x"))
    rt = make_runtime(
        {"supervisor": AgentCore(agent, [], enable_entrypoint=True, can_complete_tasks=True)}
    )
    with pytest.raises(TaskNotFoundError):
        await rt.submit_and_stream(user_message("hi", "t-missing"), resume_from="user_response")
    assert rt.get_task("t-missing") is None
    assert agent.invocations == 0


async def test_run_task_runs_the_loop_until_the_turn_ends(
    make_runtime: Any, user_message: Any
) -> None:
    agent = ScriptedAgent(rule=lambda inc: tc("task_complete", finish_message="ran " + inc.body))
    rt = make_runtime(
        {"supervisor": AgentCore(agent, [], enable_entrypoint=True, can_complete_tasks=True)},
        start=False,
    )
    await rt.submit(user_message("inline", "t-run"))
    assert not rt.is_running
    assert agent.invocations == 0  # nothing runs until the loop does
    final = await asyncio.wait_for(rt.run_task("t-run"), 10)
    assert final["message"]["body"] == "ran inline"
    assert rt.get_task("t-run").state is TaskState.COMPLETED
    assert not rt.is_running  # run_task stops the loop it started
    with pytest.raises(TaskNotFoundError):
        await rt.run_task("t-unknown")


async def test_get_events_of_an_unknown_task_raises(make_runtime: Any) -> None:
    rt = make_runtime({"supervisor": AgentCore(ScriptedAgent(), [], enable_entrypoint=True)})
    with pytest.raises(TaskNotFoundError):
        rt.get_events("nope")
    assert rt.get_response_message("nope") is None


async def test_queue_is_kept_while_the_loop_is_stopped(
    make_runtime: Any, user_message: Any
) -> None:
    agent = ScriptedAgent(rule=lambda inc: tc("task_complete", finish_message="ran " + inc.body))
    rt = make_runtime(
        {"supervisor": AgentCore(agent, [], enable_entrypoint=True, can_complete_tasks=True)},
        start=False,
    )
    await rt.submit(user_message("one", "t-q1"))
    assert (await asyncio.wait_for(rt.run_task("t-q1"), 10))["message"]["body"] == "ran one"
    # the loop stopped (run_task's own): the next message waits in the queue ...
    await rt.submit(user_message("two", "t-q2"))
    assert len(rt.scheduler) == 1 and agent.invocations == 1
    assert rt.queued_messages == 1  # what the server's mail_queue_depth sums
    # ... for the next run, which the stop of the previous one does not end
    assert (await asyncio.wait_for(rt.run_task("t-q2"), 10))["message"]["body"] == "ran two"
    assert len(rt.scheduler) == 0 and rt.queued_messages == 0
