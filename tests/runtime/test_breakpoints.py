"""Breakpoint tools: pause, the JSON array answer, resume, partial resume, bad resumes (CONTRACT 4.7)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mail.core.agents import AgentCore
from mail.core.events import EventName
from mail.core.tasks import TaskState
from mail.errors import InvalidMessageError, TaskNotFoundError, TaskStateError
from mail.testing import ScriptedAgent, tc

FORMATS = ["completions", "responses"]


def tool_result(fmt: str, call_id: str, name: str, content: str) -> dict[str, Any]:
    if fmt == "completions":
        return {"role": "tool", "name": name, "content": content, "tool_call_id": call_id}
    return {"type": "function_call_output", "call_id": call_id, "output": content}


def pending_call(call_id: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "arguments": json.dumps(args),
        "call_id": call_id,
        "name": "ask_human",
        "type": "function_call",
        "id": f"fc_{call_id}",
        "status": "completed",
    }


def breakpoint_swarm(make_runtime: Any, fmt: str, first_turn: Any) -> tuple[Any, ScriptedAgent]:
    supervisor = ScriptedAgent(
        [first_turn, tc("task_complete", finish_message="thanks, human")], tool_format=fmt
    )
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                supervisor,
                [],
                enable_entrypoint=True,
                can_complete_tasks=True,
                tool_format=fmt,
            )
        },
        breakpoint_tools=["ask_human"],
    )
    return rt, supervisor


@pytest.mark.parametrize("fmt", FORMATS)
async def test_single_breakpoint_pauses_and_resumes(
    make_runtime: Any, user_message: Any, fmt: str
) -> None:
    rt, supervisor = breakpoint_swarm(
        make_runtime, fmt, tc("ask_human", call_id="bp1", question="What is your name?")
    )
    paused = await rt.submit_and_wait(user_message("hello", "t-bp"), timeout=10)

    assert paused["msg_type"] == "broadcast_complete"
    assert paused["message"]["subject"] == "::breakpoint_tool_call::"
    assert paused["message"]["sender"] == {"address_type": "system", "address": "demo"}
    assert json.loads(paused["message"]["body"]) == [
        pending_call("bp1", {"question": "What is your name?"})
    ]
    task = rt.get_task("t-bp")
    assert task.state is TaskState.WAITING_BREAKPOINT
    events = rt.get_events("t-bp")
    assert [e.event for e in events] == [
        "new_message",
        "tool_call",
        "breakpoint_tool_call",
        "task_complete",
    ]
    assert events[2].description == (
        'agent supervisor used breakpoint tools ask_human with args: {"question": "What is your name?"}'
    )
    assert events[3].description == f"response: '{paused['message']['body']}'"
    # no tool result yet for the breakpoint call
    assert not [
        item
        for item in rt.agent_histories["t-bp::supervisor"]
        if item.get("type") == "function_call_output" or item.get("role") == "tool"
    ]
    assert supervisor.invocations == 1

    final = await rt.submit_and_wait(
        user_message("", "t-bp"),
        resume_from="breakpoint_tool_call",
        breakpoint_tool_call_result=json.dumps({"content": "Ada"}),
        timeout=10,
    )
    assert final["message"]["subject"] == "::task_complete::"
    assert final["message"]["body"] == "thanks, human"
    assert task.state is TaskState.COMPLETED
    events = rt.get_events("t-bp")
    assert [e.event for e in events[4:]] == [
        "breakpoint_action_complete",
        "tool_call",  # task_complete: re-prompted without a logged new_message
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    assert events[4].description == "breakpoint action complete (caller = supervisor):\nAda"
    # re-prompted with the tool result carrying the call id as the newest history item
    history, _ = supervisor.calls[1]
    assert history[-1] == tool_result(fmt, "bp1", "ask_human", "Ada")
    assert supervisor.invocations == 2
    # the resume message itself was never delivered
    assert [
        e.extra_data["full_message"]["message"]["body"]
        for e in events
        if e.event == EventName.NEW_MESSAGE
    ] == ["hello", "thanks, human"]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_three_parallel_breakpoints_resolved_in_two_resumes(
    make_runtime: Any, user_message: Any, fmt: str
) -> None:
    rt, supervisor = breakpoint_swarm(
        make_runtime,
        fmt,
        [
            tc("ask_human", call_id="bp1", question="q1"),
            tc("ask_human", call_id="bp2", question="q2"),
            tc("ask_human", call_id="bp3", question="q3"),
        ],
    )
    paused = await rt.submit_and_wait(user_message("hello", "t-bp3"), timeout=10)
    assert paused["message"]["subject"] == "::breakpoint_tool_call::"
    assert json.loads(paused["message"]["body"]) == [
        pending_call("bp1", {"question": "q1"}),
        pending_call("bp2", {"question": "q2"}),
        pending_call("bp3", {"question": "q3"}),
    ]
    bp_event = next(e for e in rt.get_events("t-bp3") if e.event == "breakpoint_tool_call")
    assert bp_event.description == (
        "agent supervisor used breakpoint tools ask_human, ask_human, ask_human with args: "
        '{"question": "q1"}, {"question": "q2"}, {"question": "q3"}'
    )

    partial = await rt.submit_and_wait(
        user_message("", "t-bp3"),
        resume_from="breakpoint_tool_call",
        breakpoint_tool_call_result=[
            {"call_id": "bp1", "content": "a1"},
            {"call_id": "bp3", "content": "a3"},
        ],
        timeout=10,
    )
    assert partial["message"]["subject"] == "::breakpoint_tool_call::"
    assert json.loads(partial["message"]["body"]) == [pending_call("bp2", {"question": "q2"})]
    task = rt.get_task("t-bp3")
    assert task.state is TaskState.WAITING_BREAKPOINT
    assert supervisor.invocations == 1  # not re-prompted while a call is still pending
    completes = [e for e in rt.get_events("t-bp3") if e.event == "breakpoint_action_complete"]
    assert [e.description for e in completes] == [
        "breakpoint action complete (caller = supervisor):\na1",
        "breakpoint action complete (caller = supervisor):\na3",
    ]

    final = await rt.submit_and_wait(
        user_message("", "t-bp3"),
        resume_from="breakpoint_tool_call",
        breakpoint_tool_call_result=[{"call_id": "bp2", "content": "a2"}],
        timeout=10,
    )
    assert final["message"]["body"] == "thanks, human"
    assert task.state is TaskState.COMPLETED
    history, _ = supervisor.calls[1]
    assert history[-3:] == [
        tool_result(fmt, "bp1", "ask_human", "a1"),
        tool_result(fmt, "bp3", "ask_human", "a3"),
        tool_result(fmt, "bp2", "ask_human", "a2"),
    ]
    assert supervisor.invocations == 2


async def test_non_breakpoint_calls_of_the_same_turn_still_run(
    make_runtime: Any, user_message: Any
) -> None:
    rt, _ = breakpoint_swarm(
        make_runtime,
        "responses",
        [
            tc("ignore_broadcast", call_id="other", reason="side"),
            tc("ask_human", call_id="bp1", question="q"),
        ],
    )
    paused = await rt.submit_and_wait(user_message("hi", "t-bp-mixed"), timeout=10)
    assert json.loads(paused["message"]["body"]) == [pending_call("bp1", {"question": "q"})]
    assert [e.event for e in rt.get_events("t-bp-mixed")] == [
        "new_message",
        "tool_call",
        "tool_call",
        "broadcast_ignored",
        "breakpoint_tool_call",
        "task_complete",
    ]
    assert {
        "type": "function_call_output",
        "call_id": "other",
        "output": "SUCCESS: broadcast ignored",
    } in rt.agent_histories["t-bp-mixed::supervisor"]


# --- bad resumes ----------------------------------------------------------------------


async def paused_with_two(make_runtime: Any, user_message: Any) -> tuple[Any, ScriptedAgent]:
    rt, supervisor = breakpoint_swarm(
        make_runtime,
        "responses",
        [
            tc("ask_human", call_id="bp1", question="q1"),
            tc("ask_human", call_id="bp2", question="q2"),
        ],
    )
    paused = await rt.submit_and_wait(user_message("hello", "t-bad"), timeout=10)
    assert paused["message"]["subject"] == "::breakpoint_tool_call::"
    return rt, supervisor


BAD_RESULTS = {
    "unknown_call_id": ([{"call_id": "nope", "content": "x"}], InvalidMessageError),
    "dict_without_content": ({"answer": "x"}, InvalidMessageError),
    "bare_content_with_two_pending": (json.dumps({"content": "x"}), InvalidMessageError),
    "item_without_content": ([{"call_id": "bp1"}], InvalidMessageError),
    "duplicate_call_id": (
        [{"call_id": "bp1", "content": "x"}, {"call_id": "bp1", "content": "y"}],
        InvalidMessageError,
    ),
}


@pytest.mark.parametrize("case", list(BAD_RESULTS))
async def test_bad_breakpoint_result_is_rejected_before_anything_runs(
    make_runtime: Any, user_message: Any, case: str
) -> None:
    rt, supervisor = await paused_with_two(make_runtime, user_message)
    task = rt.get_task("t-bad")
    before = task.log.last_seq
    result, error = BAD_RESULTS[case]
    with pytest.raises(error):
        await rt.submit_and_wait(
            user_message("", "t-bad"),
            resume_from="breakpoint_tool_call",
            breakpoint_tool_call_result=result,
            timeout=5,
        )
    assert task.state is TaskState.WAITING_BREAKPOINT
    assert sorted(task.pending_breakpoints) == ["bp1", "bp2"]
    assert task.log.last_seq == before
    assert supervisor.invocations == 1
    # the task can still be resumed properly afterwards
    final = await rt.submit_and_wait(
        user_message("", "t-bad"),
        resume_from="breakpoint_tool_call",
        breakpoint_tool_call_result=[
            {"call_id": "bp1", "content": "a1"},
            {"call_id": "bp2", "content": "a2"},
        ],
        timeout=10,
    )
    assert final["message"]["body"] == "thanks, human"


async def test_resume_without_breakpoint_result_is_rejected(
    make_runtime: Any, user_message: Any
) -> None:
    rt, supervisor = await paused_with_two(make_runtime, user_message)
    before = rt.get_task("t-bad").log.last_seq
    with pytest.raises(InvalidMessageError, match="breakpoint_tool_call_result"):
        await rt.submit_and_wait(
            user_message("", "t-bad"), resume_from="breakpoint_tool_call", timeout=5
        )
    assert rt.get_task("t-bad").state is TaskState.WAITING_BREAKPOINT
    assert rt.get_task("t-bad").log.last_seq == before
    assert supervisor.invocations == 1


async def test_resume_for_unknown_caller_is_rejected(make_runtime: Any, user_message: Any) -> None:
    rt, _ = await paused_with_two(make_runtime, user_message)
    with pytest.raises(InvalidMessageError, match="breakpoint_tool_caller"):
        await rt.submit_and_wait(
            user_message("", "t-bad"),
            resume_from="breakpoint_tool_call",
            breakpoint_tool_call_result="x",
            breakpoint_tool_caller="nobody",
            timeout=5,
        )
    assert rt.get_task("t-bad").state is TaskState.WAITING_BREAKPOINT


async def test_user_response_while_paused_on_breakpoint_is_rejected(
    make_runtime: Any, user_message: Any
) -> None:
    rt, supervisor = await paused_with_two(make_runtime, user_message)
    with pytest.raises(TaskStateError):
        await rt.submit_and_wait(
            user_message("more", "t-bad"), resume_from="user_response", timeout=5
        )
    assert rt.get_task("t-bad").state is TaskState.WAITING_BREAKPOINT
    assert supervisor.invocations == 1


async def test_breakpoint_resume_of_a_task_that_is_not_paused(
    make_runtime: Any, user_message: Any
) -> None:
    supervisor = ScriptedAgent(rule=lambda _: tc("task_complete", finish_message="done"))
    rt = make_runtime(
        {"supervisor": AgentCore(supervisor, [], enable_entrypoint=True, can_complete_tasks=True)},
        breakpoint_tools=["ask_human"],
    )
    await rt.submit_and_wait(user_message("hi", "t-done"), timeout=10)
    before = rt.get_task("t-done").log.last_seq
    with pytest.raises(TaskStateError):
        await rt.submit_and_wait(
            user_message("", "t-done"),
            resume_from="breakpoint_tool_call",
            breakpoint_tool_call_result=json.dumps({"content": "x"}),
            timeout=5,
        )
    assert rt.get_task("t-done").state is TaskState.COMPLETED
    assert rt.get_task("t-done").log.last_seq == before
    assert supervisor.invocations == 1


async def test_breakpoint_resume_of_an_unknown_task(make_runtime: Any, user_message: Any) -> None:
    supervisor = ScriptedAgent(rule=lambda _: tc("task_complete", finish_message="done"))
    rt = make_runtime(
        {"supervisor": AgentCore(supervisor, [], enable_entrypoint=True, can_complete_tasks=True)},
        breakpoint_tools=["ask_human"],
    )
    with pytest.raises(TaskNotFoundError):
        await rt.submit_and_wait(
            user_message("", "t-ghost"),
            resume_from="breakpoint_tool_call",
            breakpoint_tool_call_result=json.dumps({"content": "x"}),
            timeout=5,
        )
    assert rt.get_task("t-ghost") is None  # no stray task record
    assert supervisor.invocations == 0
