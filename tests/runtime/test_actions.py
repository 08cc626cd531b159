"""Actions at runtime: permissions, failures and action_override (CONTRACT 4.6)."""

from __future__ import annotations

from typing import Any

import pytest

from mail.core.actions import ActionCore
from mail.core.agents import AgentCore
from mail.core.events import MAILEvent
from mail.core.tools import AgentToolCall
from mail.testing import ScriptedAgent, tc


class Recorder:
    """An action that records its arguments and answers (or raises)."""

    def __init__(self, answer: str = "ok", error: Exception | None = None) -> None:
        self.answer = answer
        self.error = error
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, args: dict[str, Any]) -> str:
        self.calls.append(args)
        if self.error is not None:
            raise self.error
        return self.answer


def output_of(rt: Any, task_id: str, call_id: str) -> str:
    [output] = [
        item["output"]
        for item in rt.agent_histories[f"{task_id}::supervisor"]
        if item.get("type") == "function_call_output" and item.get("call_id") == call_id
    ]
    assert isinstance(output, str)
    return output


def new_message_subjects(events: list[MAILEvent]) -> list[str]:
    return [
        e.extra_data["full_message"]["message"]["subject"]
        for e in events
        if e.event == "new_message"
    ]


def action_swarm(
    make_runtime: Any,
    call: Any,
    agent_actions: list[str],
    actions: dict[str, Recorder],
    **kw: Any,
) -> tuple[Any, ScriptedAgent]:
    sup = ScriptedAgent(
        [call, lambda inc: tc("task_complete", finish_message=f"{inc.subject}|{inc.body}")]
    )
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                sup, [], actions=agent_actions, enable_entrypoint=True, can_complete_tasks=True
            )
        },
        {name: ActionCore(fn, name, {}) for name, fn in actions.items()},
        **kw,
    )
    return rt, sup


async def test_action_not_listed_by_the_agent_is_an_action_error(
    make_runtime: Any, user_message: Any
) -> None:
    secret = Recorder("classified")
    rt, _ = action_swarm(make_runtime, tc("get_secret", call_id="a1"), [], {"get_secret": secret})
    final = await rt.submit_and_wait(user_message("go", "t-perm"), timeout=10)
    events = rt.get_events("t-perm")
    assert [e.event for e in events] == [
        "new_message",
        "tool_call",
        "action_error",
        "new_message",  # ::action_error:: -> supervisor
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    assert events[2].description.startswith("agent ")
    assert events[2].description.endswith(" cannot access action get_secret")
    assert events[2].extra_data == {
        "tool_name": "get_secret",
        "tool_call_id": "a1",
        "tool_args": {},
        "error": "agent supervisor cannot access action get_secret",
    }
    notice = events[3].extra_data["full_message"]
    assert notice["msg_type"] == "response"
    assert notice["message"]["subject"] == "::action_error::"
    assert notice["message"]["body"].startswith("Error: get_secret\n")
    assert final["message"]["body"].startswith("::action_error::|Error: get_secret")
    assert output_of(rt, "t-perm", "a1") == "ERROR: agent cannot access action"
    assert secret.calls == []


async def test_unknown_action_is_an_action_error(make_runtime: Any, user_message: Any) -> None:
    rt, _ = action_swarm(make_runtime, tc("teleport", call_id="a1"), ["teleport"], {})
    await rt.submit_and_wait(user_message("go", "t-unknown-action"), timeout=10)
    events = rt.get_events("t-unknown-action")
    assert [e.event for e in events][:4] == [
        "new_message",
        "tool_call",
        "action_error",
        "new_message",
    ]
    assert events[2].description == "action teleport not found"
    assert new_message_subjects(events)[1] == "::action_error::"
    assert output_of(rt, "t-unknown-action", "a1") == "ERROR: action not found"


async def test_action_errors_are_reported_once_per_turn(
    make_runtime: Any, user_message: Any
) -> None:
    ok = Recorder("fine")
    rt, _ = action_swarm(
        make_runtime,
        [tc("missing_one"), tc("works", call_id="w"), tc("missing_two")],
        ["works", "missing_one", "missing_two"],
        {"works": ok},
    )
    final = await rt.submit_and_wait(user_message("go", "t-two-errors"), timeout=10)
    events = rt.get_events("t-two-errors")
    subjects = new_message_subjects(events)
    assert subjects.count("::action_error::") == 1
    assert "::action_complete::" not in subjects  # errors win over the completion notice
    body = final["message"]["body"]
    assert "Error: missing_one\naction missing_one not found" in body
    assert "Error: missing_two\naction missing_two not found" in body
    assert output_of(rt, "t-two-errors", "w") == "SUCCESS: fine"
    assert ok.calls == [{}]


async def test_raising_action_completes_with_a_failure_text(
    make_runtime: Any, user_message: Any
) -> None:
    broken = Recorder(error=ValueError("kaboom"))
    rt, _ = action_swarm(
        make_runtime,
        tc("explode", call_id="x1", power=3),
        ["explode"],
        {"explode": broken},
    )
    final = await rt.submit_and_wait(user_message("go", "t-raise-action"), timeout=10)
    events = rt.get_events("t-raise-action")
    assert [e.event for e in events] == [
        "new_message",
        "tool_call",
        "action_call",
        "action_complete",
        "new_message",  # ::action_complete:: -> supervisor
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    assert events[2].description == (
        'agent supervisor executing action tool: explode with args: {"power":3}'
    )
    assert events[3].description == (
        "action complete (caller = supervisor):\nfailed to execute action tool: kaboom"
    )
    assert output_of(rt, "t-raise-action", "x1") == "ERROR: failed to execute action tool: kaboom"
    assert final["message"]["body"] == "::action_complete::|Action completed successfully"
    assert broken.calls == [{"power": 3}]


@pytest.mark.parametrize(
    ("returns", "expected"),
    [
        ("overridden text", "SUCCESS: overridden text"),
        ({"content": "overridden dict", "extra": 1}, "SUCCESS: overridden dict"),
        ({"no_content": True}, "ERROR: action override returned a dict without 'content'"),
        (
            RuntimeError("override broke"),
            "ERROR: failed to execute action override tool: override broke",
        ),
    ],
)
async def test_action_override_replaces_the_actions(
    make_runtime: Any, user_message: Any, returns: Any, expected: str
) -> None:
    original = Recorder("original")
    seen: list[AgentToolCall] = []

    async def override(call: AgentToolCall) -> Any:
        seen.append(call)
        if isinstance(returns, Exception):
            raise returns
        return returns

    rt, _ = action_swarm(
        make_runtime,
        tc("lookup", call_id="o1", key="k"),
        ["lookup"],
        {"lookup": original},
        action_override=override,
    )
    final = await rt.submit_and_wait(user_message("go", "t-override"), timeout=10)
    assert final["message"]["subject"] == "::task_complete::"
    assert output_of(rt, "t-override", "o1") == expected
    assert original.calls == []
    assert [(c.tool_name, c.tool_args, c.tool_call_id) for c in seen] == [
        ("lookup", {"key": "k"}, "o1")
    ]
    complete = next(e for e in rt.get_events("t-override") if e.event == "action_complete")
    assert complete.description == (
        "action complete (caller = supervisor):\n" + expected.split(": ", 1)[1]
    )


async def test_sync_action_functions_are_accepted(make_runtime: Any, user_message: Any) -> None:
    sup = ScriptedAgent(
        [tc("add", call_id="s1", a=2, b=3), tc("task_complete", finish_message="done")]
    )
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                sup, [], actions=["add"], enable_entrypoint=True, can_complete_tasks=True
            )
        },
        {"add": ActionCore(lambda args: str(args["a"] + args["b"]), "add", {})},
    )
    await rt.submit_and_wait(user_message("go", "t-sync"), timeout=10)
    assert output_of(rt, "t-sync", "s1") == "SUCCESS: 5"
