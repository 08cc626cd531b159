"""Agent failures, empty turns and misaddressed messages (CONTRACT 4.5 step 7, 4.11)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from mail.core.agents import AgentCore
from mail.core.events import EventName, MAILEvent
from mail.core.tasks import TaskState
from mail.testing import Incoming, ScriptedAgent, tc


def solo(make_runtime: Any, script: list[Any], **kw: Any) -> tuple[Any, ScriptedAgent]:
    sup = ScriptedAgent(script)
    rt = make_runtime(
        {"supervisor": AgentCore(sup, [], enable_entrypoint=True, can_complete_tasks=True)}, **kw
    )
    return rt, sup


def full(event: MAILEvent) -> dict[str, Any]:
    message: dict[str, Any] = event.extra_data["full_message"]
    return message


FAILURE_EVENTS = ["new_message", "agent_error", "new_message", "agent_error", "task_error"]


async def test_agent_raising_on_the_user_message_is_retried_once_then_fails(
    make_runtime: Any, user_message: Any
) -> None:
    rt, sup = solo(make_runtime, [RuntimeError("boom"), RuntimeError("boom again")])
    final = await rt.submit_and_wait(user_message("hi", "t-raise"), timeout=10)

    assert final["msg_type"] == "broadcast_complete"
    assert final["message"]["subject"] == "::task_error::"
    assert final["message"]["body"] == (
        "The task encountered an error: agent supervisor raised RuntimeError: boom again."
    )
    assert rt.get_task("t-raise").state is TaskState.FAILED
    events = rt.get_events("t-raise")
    assert [e.event for e in events] == FAILURE_EVENTS
    assert events[1].description == "agent supervisor raised RuntimeError: boom"
    retry = full(events[2])
    assert retry["message"]["subject"] == "::agent_error::"
    assert retry["message"]["sender"] == {"address_type": "system", "address": "demo"}
    assert retry["message"]["recipient"] == {"address_type": "agent", "address": "supervisor"}
    assert "boom" in retry["message"]["body"]
    assert events[3].description == "agent supervisor raised RuntimeError: boom again"
    assert (
        events[4].description == "error for task: agent supervisor raised RuntimeError: boom again"
    )
    assert sup.invocations == 2
    retry_history, _ = sup.calls[1]
    assert "<subject>::agent_error::</subject>" in retry_history[-1]["content"]
    assert rt.get_response_message("t-raise") == final


async def test_agent_recovering_on_the_retry_completes(
    make_runtime: Any, user_message: Any
) -> None:
    rt, sup = solo(
        make_runtime, [RuntimeError("flaky"), tc("task_complete", finish_message="fine now")]
    )
    final = await rt.submit_and_wait(user_message("hi", "t-flaky"), timeout=10)
    assert final["message"]["body"] == "fine now"
    assert rt.get_task("t-flaky").state is TaskState.COMPLETED
    assert [e.event for e in rt.get_events("t-flaky")] == [
        "new_message",
        "agent_error",
        "new_message",
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    assert sup.invocations == 2


async def test_agent_failure_streams_a_final_task_error(
    make_runtime: Any, user_message: Any
) -> None:
    rt, _ = solo(make_runtime, [RuntimeError("boom"), RuntimeError("boom again")])
    stream = await rt.submit_and_stream(user_message("hi", "t-raise-stream"))

    async def drain() -> list[MAILEvent]:
        async with contextlib.aclosing(stream) as events:
            return [e async for e in events]

    events = await asyncio.wait_for(drain(), 10)
    assert [e.event for e in events] == [*FAILURE_EVENTS, "task_error"]
    stored_end, last = events[-2], events[-1]
    assert last.seq is None
    assert last.data() == {
        "timestamp": stored_end.timestamp,
        "task_id": "t-raise-stream",
        "response": "The task encountered an error: agent supervisor raised RuntimeError: boom again.",
        "seq": stored_end.seq,
        "status": "failed",
    }


async def test_agent_raising_on_a_request_reports_to_the_requester(
    make_runtime: Any, user_message: Any
) -> None:
    def supervisor(incoming: Incoming) -> Any:
        if incoming.sender_type == "user":
            return tc("send_request", target="worker", subject="job", body="do it")
        return tc("task_complete", finish_message=f"{incoming.subject}: {incoming.body}")

    worker = ScriptedAgent([RuntimeError("kaput")])
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                ScriptedAgent(rule=supervisor),
                ["worker"],
                enable_entrypoint=True,
                can_complete_tasks=True,
            ),
            "worker": AgentCore(worker, ["supervisor"]),
        }
    )
    final = await rt.submit_and_wait(user_message("hi", "t-worker-raise"), timeout=10)
    assert final["message"]["body"] == (
        "::agent_error::: Agent 'worker' failed to process your message 'job': "
        "agent worker raised RuntimeError: kaput"
    )
    assert rt.get_task("t-worker-raise").state is TaskState.COMPLETED
    events = rt.get_events("t-worker-raise")
    assert [e.event for e in events] == [
        "new_message",
        "tool_call",
        "new_message",
        "agent_error",
        "new_message",  # ::agent_error:: -> supervisor
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    assert events[3].description == "agent worker raised RuntimeError: kaput"
    notice = full(events[4])
    assert notice["msg_type"] == "response"
    assert notice["message"]["recipient"] == {"address_type": "agent", "address": "supervisor"}
    assert worker.invocations == 1  # no retry for a failure on another agent's request


async def test_agent_returning_no_tool_calls_is_an_agent_error(
    make_runtime: Any, user_message: Any
) -> None:
    rt, sup = solo(make_runtime, [[], tc("task_complete", finish_message="ok")])
    final = await rt.submit_and_wait(user_message("hi", "t-empty"), timeout=10)
    assert final["message"]["body"] == "ok"
    events = rt.get_events("t-empty")
    assert [e.event for e in events] == [
        "new_message",
        "agent_error",
        "new_message",
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    assert "returned no tool calls" in events[1].description
    assert events[1].description == "agent supervisor returned no tool calls"
    assert full(events[2])["message"]["subject"] == "::agent_error::"
    assert sup.invocations == 2


# --- misaddressed messages ------------------------------------------------------------


def misaddressing_swarm(
    make_runtime: Any, target: str, comm_targets: list[str]
) -> tuple[Any, ScriptedAgent, ScriptedAgent]:
    def supervisor(incoming: Incoming) -> Any:
        if incoming.sender_type == "user":
            return tc("send_request", target=target, subject="hello", body="are you there?")
        return tc("task_complete", finish_message=f"{incoming.subject} {incoming.body}")

    sup = ScriptedAgent(rule=supervisor)
    other = ScriptedAgent(rule=lambda _: tc("ignore_broadcast", reason="unreachable"))
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                sup, comm_targets, enable_entrypoint=True, can_complete_tasks=True
            ),
            "a": AgentCore(ScriptedAgent(), ["supervisor"]),
            "x": AgentCore(other, ["supervisor"]),
        }
    )
    return rt, sup, other


BOUNCE_EVENTS = [
    "new_message",
    "tool_call",
    "agent_error",
    "new_message",  # the runtime's answer to the supervisor
    "tool_call",
    "task_complete_call",
    "new_message",
    "task_complete",
]


async def test_message_to_a_disallowed_recipient_is_refused(
    make_runtime: Any, user_message: Any
) -> None:
    rt, sup, x = misaddressing_swarm(make_runtime, "x", ["a"])
    final = await rt.submit_and_wait(user_message("hi", "t-disallowed"), timeout=10)
    events = rt.get_events("t-disallowed")
    assert [e.event for e in events] == BOUNCE_EVENTS
    assert events[2].description == "agent attempted to contact disallowed recipients: x"
    notice = full(events[3])
    assert notice["msg_type"] == "response"
    assert notice["message"]["subject"] == "::invalid_recipient::"
    assert notice["message"]["recipient"] == {"address_type": "agent", "address": "supervisor"}
    assert final["message"]["body"].startswith("::invalid_recipient:: ")
    assert x.invocations == 0  # nothing was delivered
    assert "x" not in {
        a.rsplit("::", 1)[1] for a in rt.agent_histories if a.startswith("t-disallowed::")
    }
    assert sup.invocations == 2


async def test_message_to_an_unknown_agent_is_bounced(make_runtime: Any, user_message: Any) -> None:
    rt, _, _ = misaddressing_swarm(make_runtime, "ghost", ["ghost"])
    final = await rt.submit_and_wait(user_message("hi", "t-ghost"), timeout=10)
    events = rt.get_events("t-ghost")
    assert [e.event for e in events] == BOUNCE_EVENTS
    assert events[2].description == (
        "agent ghost is unknown; message from supervisor cannot be delivered to it"
    )
    notice = full(events[3])
    assert notice["message"]["subject"] == "::agent_error::"
    assert "ghost" in notice["message"]["body"]
    assert final["message"]["body"].startswith("::agent_error:: ")
    assert rt.get_task("t-ghost").state is TaskState.COMPLETED


async def test_message_to_the_user_is_an_improper_response(
    make_runtime: Any, user_message: Any
) -> None:
    rt, _, _ = misaddressing_swarm(make_runtime, "u1", ["u1"])
    final = await rt.submit_and_wait(user_message("hi", "t-to-user"), timeout=10)
    events = rt.get_events("t-to-user")
    assert [e.event for e in events] == BOUNCE_EVENTS
    assert events[2].description == "agent supervisor attempted to send a message to the user"
    notice = full(events[3])
    assert notice["message"]["subject"] == "::improper_response_to_user::"
    assert notice["message"]["recipient"] == {"address_type": "agent", "address": "supervisor"}
    assert "task_complete" in notice["message"]["body"]
    assert final["message"]["body"].startswith("::improper_response_to_user:: ")


async def test_message_to_the_swarm_name_ends_the_task(
    make_runtime: Any, user_message: Any
) -> None:
    rt, sup, _ = misaddressing_swarm(make_runtime, "demo", ["demo"])
    final = await rt.submit_and_wait(user_message("hi", "t-to-swarm"), timeout=10)
    assert final["msg_type"] == "broadcast_complete"
    assert final["message"]["subject"] == "::runtime_error::"
    assert final["message"]["sender"] == {"address_type": "system", "address": "demo"}
    assert rt.get_task("t-to-swarm").state is TaskState.FAILED
    events = rt.get_events("t-to-swarm")
    assert [e.event for e in events] == ["new_message", "tool_call", "task_error"]
    assert events[2].description == (
        "agent demo is the swarm name; message from supervisor cannot be delivered to it"
    )
    assert sup.invocations == 1


async def test_user_message_to_an_unknown_entrypoint_fails_the_task(
    make_runtime: Any, user_message: Any
) -> None:
    rt, sup, _ = misaddressing_swarm(make_runtime, "a", ["a"])
    final = await rt.submit_and_wait(
        user_message("hi", "t-bad-entry", recipient="nobody"), timeout=10
    )
    assert final["msg_type"] == "broadcast_complete"
    assert rt.get_task("t-bad-entry").state is TaskState.FAILED
    events = rt.get_events("t-bad-entry")
    assert [e.event for e in events] == ["task_error"]
    assert (
        events[0].description
        == "agent nobody is unknown; message from u1 cannot be delivered to it"
    )
    assert sup.invocations == 0


async def test_remote_address_without_interswarm_tells_the_sender(
    make_runtime: Any, user_message: Any
) -> None:
    rt, _, _ = misaddressing_swarm(make_runtime, "x@elsewhere", ["x@elsewhere"])
    final = await rt.submit_and_wait(user_message("hi", "t-remote"), timeout=10)
    events = rt.get_events("t-remote")
    names = [e.event for e in events]
    assert names == [
        "new_message",
        "tool_call",
        EventName.INTERSWARM_MESSAGE_ERROR,
        "new_message",
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    assert "x@elsewhere" in events[2].description
    assert full(events[3])["message"]["subject"] == "::agent_error::"
    assert final["message"]["body"].startswith("::agent_error:: Your message was not delivered")
