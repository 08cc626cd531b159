"""MAIL tools at runtime: help, await_message, can_complete_tasks, exclude_tools (CONTRACT 4.5)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mail.core.actions import ActionCore
from mail.core.agents import AgentCore
from mail.core.events import EventName, MAILEvent
from mail.core.tasks import TaskState
from mail.testing import Incoming, ScriptedAgent, tc


def output_of(rt: Any, task_id: str, agent: str, call_id: str) -> str:
    [output] = [
        item["output"]
        for item in rt.agent_histories[f"{task_id}::{agent}"]
        if item.get("type") == "function_call_output" and item.get("call_id") == call_id
    ]
    assert isinstance(output, str)
    return output


def full(event: MAILEvent) -> dict[str, Any]:
    message: dict[str, Any] = event.extra_data["full_message"]
    return message


def solo(make_runtime: Any, script: list[Any], **kw: Any) -> tuple[Any, ScriptedAgent]:
    sup = ScriptedAgent(script)
    rt = make_runtime(
        {"supervisor": AgentCore(sup, ["worker"], enable_entrypoint=True, can_complete_tasks=True)},
        **kw,
    )
    return rt, sup


# --- help -----------------------------------------------------------------------------


async def test_help_sends_the_requested_sections(make_runtime: Any, user_message: Any) -> None:
    rt, sup = solo(
        make_runtime,
        [
            tc(
                "help",
                call_id="h1",
                get_summary=True,
                get_identity=True,
                get_tool_help=["send_request"],
                get_full_protocol=False,
            ),
            lambda inc: tc("task_complete", finish_message=inc.body),
        ],
    )
    final = await rt.submit_and_wait(user_message("help me", "t-help"), timeout=10)
    events = rt.get_events("t-help")
    assert [e.event for e in events] == [
        "new_message",
        "tool_call",
        "help_called",
        "new_message",  # ::help:: -> supervisor
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    assert events[2].description == "agent supervisor called help"
    assert events[2].extra_data == {}
    help_msg = full(events[3])
    assert help_msg["msg_type"] == "broadcast"
    assert help_msg["message"]["subject"] == "::help::"
    assert help_msg["message"]["sender"] == {"address_type": "system", "address": "demo"}
    assert help_msg["message"]["recipients"] == [{"address_type": "agent", "address": "supervisor"}]
    body = help_msg["message"]["body"]
    assert "===== SUMMARY =====" in body
    assert "===== YOUR IDENTITY =====" in body
    assert "name: supervisor" in body
    assert "===== TOOL HELP =====" in body
    assert "send_request(target, subject, body)" in body
    assert "===== FULL MAIL PROTOCOL SPECIFICATION =====" not in body
    assert final["message"]["body"] == body  # the agent was re-prompted with the help text
    assert output_of(rt, "t-help", "supervisor", "h1") == (
        "SUCCESS: help string generated; will be sent to you in a subsequent prompt"
    )
    assert sup.invocations == 2


async def test_help_defaults_to_the_summary_only(make_runtime: Any, user_message: Any) -> None:
    rt, _ = solo(
        make_runtime,
        [tc("help"), lambda inc: tc("task_complete", finish_message=inc.body)],
    )
    final = await rt.submit_and_wait(user_message("help me", "t-help2"), timeout=10)
    body = final["message"]["body"]
    assert "===== SUMMARY =====" in body
    assert "===== YOUR IDENTITY =====" not in body
    assert "===== TOOL HELP =====" not in body


async def test_help_full_protocol_includes_the_specification(
    make_runtime: Any, user_message: Any
) -> None:
    rt, _ = solo(
        make_runtime,
        [
            tc("help", get_summary=False, get_full_protocol=True),
            lambda inc: tc("task_complete", finish_message=inc.body),
        ],
    )
    final = await rt.submit_and_wait(user_message("help me", "t-help3"), timeout=10)
    body = final["message"]["body"]
    assert body.startswith("===== FULL MAIL PROTOCOL SPECIFICATION =====\n")
    spec = body.removeprefix("===== FULL MAIL PROTOCOL SPECIFICATION =====\n")
    assert "not available" not in spec
    assert "MAIL" in spec
    assert len(spec) > 1000


# --- await_message --------------------------------------------------------------------


async def test_await_message_with_nothing_outstanding_is_an_error(
    make_runtime: Any, user_message: Any
) -> None:
    rt, sup = solo(
        make_runtime,
        [
            [
                tc("await_message", call_id="w1", reason="nothing to wait for"),
                tc("task_complete", call_id="tc1", finish_message="too early"),
            ],
            tc("task_complete", call_id="tc2", finish_message="after the error"),
        ],
    )
    final = await rt.submit_and_wait(user_message("hi", "t-await-err"), timeout=10)
    assert final["message"]["body"] == "after the error"
    events = rt.get_events("t-await-err")
    assert [e.event for e in events] == [
        "new_message",
        "tool_call",
        "tool_call",
        "agent_error",
        "new_message",  # ::tool_call_error:: -> supervisor
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    assert "no outstanding requests and message queue is empty" in events[3].description
    notice = full(events[4])
    assert notice["msg_type"] == "response"
    assert notice["message"]["subject"] == "::tool_call_error::"
    assert output_of(rt, "t-await-err", "supervisor", "w1") == (
        "ERROR: no outstanding requests and message queue is empty"
    )
    assert output_of(rt, "t-await-err", "supervisor", "tc1").startswith("ERROR: not executed")
    assert sup.invocations == 2


async def test_await_message_after_an_earlier_request_waits(
    make_runtime: Any, user_message: Any, wait_event: Any, probe: Any
) -> None:
    def supervisor(incoming: Incoming) -> Any:
        if incoming.sender_type == "user":
            return [
                tc("send_request", target="worker", subject="slow", body="slow job"),
                tc("send_request", target="helper", subject="fast", body="fast job"),
            ]
        if incoming.sender == "helper":
            return tc("await_message", call_id="wait1", reason="waiting for worker")
        return tc("task_complete", finish_message="all in")

    gate = asyncio.Event()
    worker = probe(
        ScriptedAgent(
            rule=lambda _: tc("send_response", target="supervisor", subject="s", body="slow done"),
            gate=gate,
        )
    )
    helper = ScriptedAgent(
        rule=lambda _: tc("send_response", target="supervisor", subject="f", body="fast done")
    )
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                ScriptedAgent(rule=supervisor),
                ["worker", "helper"],
                enable_entrypoint=True,
                can_complete_tasks=True,
            ),
            "worker": AgentCore(worker, ["supervisor"]),
            "helper": AgentCore(helper, ["supervisor"]),
        }
    )
    task = await rt.submit(user_message("go", "t-await"))
    turn = task.turn
    event = await wait_event(rt, "t-await", lambda e: e.event == EventName.AWAIT_MESSAGE)
    assert event.extra_data == {"reason": "waiting for worker"}
    assert event.description == "agent 'supervisor' is awaiting a new message: waiting for worker"
    assert output_of(rt, "t-await", "supervisor", "wait1") == (
        "SUCCESS: waiting for a new message (reason: 'waiting for worker')"
    )
    assert "agent_error" not in [e.event for e in rt.get_events("t-await")]
    gate.set()
    final = await asyncio.wait_for(turn, 10)
    assert final["message"]["body"] == "all in"


async def test_calls_after_await_message_in_the_same_turn_are_not_executed(
    make_runtime: Any, user_message: Any
) -> None:
    sup = ScriptedAgent(
        [
            [
                tc("noop", call_id="act"),
                tc("send_request", call_id="req", target="worker", subject="s", body="b"),
                tc("await_message", call_id="wait", reason=None),
                tc("task_complete", call_id="skipped", finish_message="never"),
            ],
            tc("task_complete", call_id="real", finish_message="worker answered"),
        ]
    )
    worker = ScriptedAgent(
        rule=lambda _: tc("send_response", target="supervisor", subject="re", body="ok")
    )
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                sup, ["worker"], actions=["noop"], enable_entrypoint=True, can_complete_tasks=True
            ),
            "worker": AgentCore(worker, ["supervisor"]),
        },
        {"noop": ActionCore(lambda _: "did nothing", "noop", {})},
    )
    final = await rt.submit_and_wait(user_message("go", "t-await-skip"), timeout=10)
    assert final["message"]["body"] == "worker answered"
    events = rt.get_events("t-await-skip")
    assert [e.event for e in events] == [
        "new_message",
        "tool_call",  # noop
        "tool_call",  # send_request
        "tool_call",  # await_message
        "tool_call",  # task_complete (not executed)
        "action_call",
        "action_complete",
        "await_message",
        "new_message",  # supervisor -> worker; no ::action_complete:: for the supervisor
        "tool_call",
        "new_message",
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    assert events[7].extra_data == {}
    assert events[7].description == "agent 'supervisor' is awaiting a new message"
    assert output_of(rt, "t-await-skip", "supervisor", "act") == "SUCCESS: did nothing"
    assert output_of(rt, "t-await-skip", "supervisor", "req") == "SUCCESS: message sent"
    assert (
        output_of(rt, "t-await-skip", "supervisor", "wait") == "SUCCESS: waiting for a new message"
    )
    assert output_of(rt, "t-await-skip", "supervisor", "skipped") == (
        "ERROR: not executed: the turn ended with await_message"
    )
    subjects = [full(e)["message"]["subject"] for e in events if e.event == EventName.NEW_MESSAGE]
    assert "::action_complete::" not in subjects


# --- enforcement ------------------------------------------------------------------------


async def test_agent_without_can_complete_tasks_cannot_complete(
    make_runtime: Any, user_message: Any
) -> None:
    sup = ScriptedAgent(
        rule=lambda inc: (
            tc("send_request", target="worker", subject="job", body="work")
            if inc.sender_type == "user"
            else tc("task_complete", finish_message="supervisor: " + inc.body)
        )
    )
    worker = ScriptedAgent(
        [
            tc("task_complete", call_id="wtc", finish_message="worker hijacks the answer"),
            tc("send_response", target="supervisor", subject="re", body="worked"),
        ]
    )
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                sup, ["worker"], enable_entrypoint=True, can_complete_tasks=True
            ),
            "worker": AgentCore(worker, ["supervisor"], can_complete_tasks=False),
        }
    )
    final = await rt.submit_and_wait(user_message("go", "t-cct"), timeout=10)
    assert final["message"]["body"] == "supervisor: worked"
    assert final["message"]["sender"] == {"address_type": "agent", "address": "supervisor"}
    events = rt.get_events("t-cct")
    assert [e.event for e in events] == [
        "new_message",
        "tool_call",
        "new_message",
        "tool_call",  # worker's task_complete
        "agent_error",
        "new_message",  # ::tool_call_error:: -> worker
        "tool_call",
        "new_message",
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    assert "cannot complete tasks" in events[4].description
    assert full(events[5])["message"]["subject"] == "::tool_call_error::"
    assert full(events[5])["message"]["recipient"] == {"address_type": "agent", "address": "worker"}
    assert output_of(rt, "t-cct", "worker", "wtc").startswith("ERROR: ")
    assert [e.event for e in events].count("task_complete_call") == 1


@pytest.mark.parametrize("level", ["swarm", "agent"])
async def test_excluded_tool_is_refused(make_runtime: Any, user_message: Any, level: str) -> None:
    sup = ScriptedAgent(
        [
            tc("send_interrupt", call_id="int1", target="worker", subject="s", body="stop"),
            lambda inc: tc("task_complete", finish_message=inc.subject),
        ]
    )
    worker = ScriptedAgent(rule=lambda _: tc("ignore_broadcast", reason="x"))
    agent_excludes = ["send_interrupt"] if level == "agent" else None
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                sup,
                ["worker"],
                enable_entrypoint=True,
                can_complete_tasks=True,
                exclude_tools=agent_excludes,
            ),
            "worker": AgentCore(worker, ["supervisor"]),
        },
        exclude_tools=["send_interrupt"] if level == "swarm" else None,
    )
    final = await rt.submit_and_wait(user_message("go", "t-excl"), timeout=10)
    assert final["message"]["body"] == "::tool_call_error::"
    assert rt.get_task("t-excl").state is TaskState.COMPLETED
    events = rt.get_events("t-excl")
    assert [e.event for e in events] == [
        "new_message",
        "tool_call",
        "agent_error",
        "new_message",
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    assert "send_interrupt" in events[2].description
    assert output_of(rt, "t-excl", "supervisor", "int1").startswith("ERROR: ")
    assert "send_interrupt" in output_of(rt, "t-excl", "supervisor", "int1")
    assert worker.invocations == 0
