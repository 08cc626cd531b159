"""Broadcasts (to all, to explicit targets), acknowledge/ignore, and interrupt priority."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from mail.core.agents import AgentCore
from mail.core.events import EventName, MAILEvent
from mail.core.tasks import TaskState
from mail.testing import Incoming, ScriptedAgent, parse_incoming, tc


def nth(predicate: Callable[[MAILEvent], bool], n: int) -> Callable[[MAILEvent], bool]:
    """A predicate true for the n-th event matching ``predicate``."""
    seen = 0

    def check(event: MAILEvent) -> bool:
        nonlocal seen
        if predicate(event):
            seen += 1
        return seen >= n

    return check


def called(agent: str, tool: str) -> Callable[[MAILEvent], bool]:
    return lambda e: (
        e.event == EventName.TOOL_CALL and e.description == f"agent {agent} called {tool}"
    )


def body_of(event: MAILEvent) -> str:
    body: str = event.extra_data["full_message"]["message"]["body"]
    return body


def broadcast_swarm(make_runtime: Any, targets: list[str]) -> tuple[Any, dict[str, ScriptedAgent]]:
    def supervisor(incoming: Incoming) -> Any:
        if incoming.body == "wrap up":
            return tc("task_complete", finish_message="everyone was told")
        return tc("send_broadcast", subject="News", body="deploy at noon", targets=targets)

    agents = {
        "supervisor": ScriptedAgent(rule=supervisor),
        "a": ScriptedAgent(rule=lambda _: tc("acknowledge_broadcast", note="noted")),
        "b": ScriptedAgent(rule=lambda _: tc("ignore_broadcast", reason="not mine")),
        "c": ScriptedAgent(rule=lambda _: tc("acknowledge_broadcast", note=None)),
    }
    everyone = list(agents)
    cores = {
        name: AgentCore(
            fn,
            [o for o in everyone if o != name],
            enable_entrypoint=name == "supervisor",
            can_complete_tasks=name == "supervisor",
        )
        for name, fn in agents.items()
    }
    return make_runtime(cores), agents


async def test_broadcast_to_all_reaches_every_other_agent(
    make_runtime: Any, user_message: Any, wait_event: Any
) -> None:
    rt, agents = broadcast_swarm(make_runtime, ["all"])
    await rt.submit(user_message("announce", "t-bc-all"))
    for agent, tool in (
        ("a", "acknowledge_broadcast"),
        ("b", "ignore_broadcast"),
        ("c", "acknowledge_broadcast"),
    ):
        await wait_event(rt, "t-bc-all", called(agent, tool))
    final = await rt.submit_and_wait(
        user_message("wrap up", "t-bc-all"), resume_from="user_response", timeout=10
    )
    assert final["message"]["body"] == "everyone was told"

    events = rt.get_events("t-bc-all")
    names = [e.event for e in events]
    assert names[:5] == ["new_message", "tool_call", "new_message", "new_message", "new_message"]
    # the receivers' turns: two acknowledgements (no event) and one ignore
    assert sorted(names[5:9]) == sorted(
        ["tool_call", "tool_call", "tool_call", "broadcast_ignored"]
    )
    assert names[9:] == [
        "new_message",
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    broadcast = events[2].extra_data["full_message"]
    assert broadcast["msg_type"] == "broadcast"
    assert broadcast["message"]["recipients"] == [{"address_type": "agent", "address": "all"}]
    assert all(e.extra_data["full_message"] == broadcast for e in events[2:5])
    ignored = next(e for e in events if e.event == EventName.BROADCAST_IGNORED)
    assert ignored.description == "agent b called ignore_broadcast"
    assert ignored.extra_data == {}
    # every other agent got it once; the sender did not get its own broadcast
    assert [agents[n].invocations for n in ("supervisor", "a", "b", "c")] == [2, 1, 1, 1]
    for name, result in (
        ("a", "SUCCESS: broadcast acknowledged"),
        ("b", "SUCCESS: broadcast ignored"),
        ("c", "SUCCESS: broadcast acknowledged"),
    ):
        outputs = [h.get("output") for h in rt.agent_histories[f"t-bc-all::{name}"]]
        assert outputs[-1] == result


async def test_broadcast_to_explicit_targets_reaches_only_them(
    make_runtime: Any, user_message: Any, wait_event: Any
) -> None:
    rt, agents = broadcast_swarm(make_runtime, ["a", "b"])
    await rt.submit(user_message("announce", "t-bc-ab"))
    await wait_event(rt, "t-bc-ab", called("a", "acknowledge_broadcast"))
    await wait_event(rt, "t-bc-ab", called("b", "ignore_broadcast"))
    final = await rt.submit_and_wait(
        user_message("wrap up", "t-bc-ab"), resume_from="user_response", timeout=10
    )
    assert final["message"]["body"] == "everyone was told"

    events = rt.get_events("t-bc-ab")
    deliveries = [
        e
        for e in events
        if e.event == EventName.NEW_MESSAGE
        and e.extra_data["full_message"]["msg_type"] == "broadcast"
    ]
    assert len(deliveries) == 2
    assert deliveries[0].extra_data["full_message"]["message"]["recipients"] == [
        {"address_type": "agent", "address": "a"},
        {"address_type": "agent", "address": "b"},
    ]
    assert agents["c"].invocations == 0
    assert (agents["a"].invocations, agents["b"].invocations) == (1, 1)
    assert [e.event for e in events].count("broadcast_ignored") == 1


async def test_acknowledge_broadcast_on_a_request_is_a_tool_error(
    make_runtime: Any, user_message: Any
) -> None:
    supervisor = ScriptedAgent(
        rule=lambda inc: (
            tc("send_request", target="a", subject="Q", body="status?")
            if inc.sender_type == "user"
            else tc("task_complete", finish_message="a said: " + inc.body)
        )
    )
    a = ScriptedAgent(
        [
            tc("acknowledge_broadcast", call_id="ack1", note="n"),
            tc("send_response", target="supervisor", subject="Re: Q", body="green"),
        ]
    )
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                supervisor, ["a"], enable_entrypoint=True, can_complete_tasks=True
            ),
            "a": AgentCore(a, ["supervisor"]),
        }
    )
    final = await rt.submit_and_wait(user_message("go", "t-ack"), timeout=10)
    assert final["message"]["body"] == "a said: green"

    events = rt.get_events("t-ack")
    assert [e.event for e in events] == [
        "new_message",
        "tool_call",
        "new_message",
        "tool_call",  # acknowledge_broadcast
        "agent_error",
        "new_message",  # ::tool_call_error:: -> a
        "tool_call",  # send_response
        "new_message",
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    error = events[5].extra_data["full_message"]
    assert error["msg_type"] == "response"
    assert error["message"]["subject"] == "::tool_call_error::"
    assert error["message"]["recipient"] == {"address_type": "agent", "address": "a"}
    assert "improper use of `acknowledge_broadcast`" in error["message"]["body"]
    assert "improper use of `acknowledge_broadcast`" in events[4].description
    assert {
        "type": "function_call_output",
        "call_id": "ack1",
        "output": "ERROR: improper use of `acknowledge_broadcast`",
    } in rt.agent_histories["t-ack::a"]


# --- interrupts ---------------------------------------------------------------------


def interrupt_swarm(
    make_runtime: Any, probe: Any, go_turn: list[Any]
) -> tuple[Any, Any, asyncio.Event]:
    """supervisor: 'start' -> r0 to worker; 'go' -> ``go_turn``; 'now' -> interrupt; 'finish'."""

    def supervisor(incoming: Incoming) -> Any:
        match incoming.body:
            case "start":
                return tc("send_request", target="worker", subject="job", body="r0")
            case "go":
                return go_turn
            case "now":
                return tc("send_interrupt", target="worker", subject="halt", body="stop")
            case _:
                return tc("task_complete", finish_message="finished")

    gate = asyncio.Event()
    worker = probe(
        ScriptedAgent(rule=lambda inc: tc("ignore_broadcast", reason=inc.body), gate=gate)
    )
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
    return rt, worker, gate


def delivered_to_worker(body: str) -> Callable[[MAILEvent], bool]:
    return lambda e: (
        e.event == EventName.NEW_MESSAGE
        and e.extra_data["full_message"]["message"]["sender"]["address"] == "supervisor"
        and body_of(e) == body
    )


async def run_interrupt_scenario(
    rt: Any,
    worker: Any,
    gate: asyncio.Event,
    user_message: Any,
    wait_event: Any,
    steps: list[tuple[str, str]],
    expected_batches: list[list[str]],
) -> list[str]:
    """Hold the worker on r0, send each (user body, last delivery to wait for), release.

    ``expected_batches`` lists the bodies each step sends to the worker.
    """
    await rt.submit(user_message("start", "t-int"))
    assert await worker.next_entry() == "r0"
    for user_body, last_delivery in steps:
        await rt.submit(user_message(user_body, "t-int"), resume_from="user_response")
        await wait_event(rt, "t-int", delivered_to_worker(last_delivery))
    assert worker.inner.running == 1  # still parked on r0: everything else is queued
    gate.set()
    turns = 1 + sum(len(go) for go in expected_batches)
    await wait_event(rt, "t-int", nth(lambda e: e.event == EventName.BROADCAST_IGNORED, turns))
    final = await rt.submit_and_wait(
        user_message("finish", "t-int"), resume_from="user_response", timeout=10
    )
    assert final["message"]["body"] == "finished"
    assert rt.get_task("t-int").state is TaskState.COMPLETED
    assert worker.inner.max_running == 1
    return [parse_incoming(history).body for history, _ in worker.inner.calls]


async def test_interrupt_queued_with_requests_is_delivered_first(
    make_runtime: Any, user_message: Any, wait_event: Any, probe: Any
) -> None:
    go_turn = [
        tc("send_request", target="worker", subject="job", body="r1"),
        tc("send_request", target="worker", subject="job", body="r2"),
        tc("send_request", target="worker", subject="job", body="r3"),
        tc("send_interrupt", target="worker", subject="halt", body="stop"),
    ]
    rt, worker, gate = interrupt_swarm(make_runtime, probe, go_turn)
    order = await run_interrupt_scenario(
        rt, worker, gate, user_message, wait_event, [("go", "r3")], [["r1", "r2", "r3", "stop"]]
    )
    # priority 3 (interrupt) beats priority 5 (requests) although it was sent last
    assert order == ["r0", "stop", "r1", "r2", "r3"]
    deliveries = [
        e.extra_data["full_message"]
        for e in rt.get_events("t-int")
        if e.event == EventName.NEW_MESSAGE
        and e.extra_data["full_message"]["message"]["sender"]["address"] == "supervisor"
        and e.extra_data["full_message"]["msg_type"] != "broadcast_complete"
    ]
    assert [m["message"]["body"] for m in deliveries] == ["r0", "stop", "r1", "r2", "r3"]
    interrupt = deliveries[1]
    assert interrupt["msg_type"] == "interrupt"
    assert interrupt["message"]["recipients"] == [{"address_type": "agent", "address": "worker"}]


async def test_interrupt_overtakes_requests_already_waiting_for_a_busy_agent(
    make_runtime: Any, user_message: Any, wait_event: Any, probe: Any
) -> None:
    go_turn = [
        tc("send_request", target="worker", subject="job", body="r1"),
        tc("send_request", target="worker", subject="job", body="r2"),
    ]
    rt, worker, gate = interrupt_swarm(make_runtime, probe, go_turn)
    order = await run_interrupt_scenario(
        rt,
        worker,
        gate,
        user_message,
        wait_event,
        [("go", "r2"), ("now", "stop")],
        [["r1", "r2"], ["stop"]],
    )
    # r1 and r2 wait for the busy worker; the interrupt arrives later but must run first
    assert order == ["r0", "stop", "r1", "r2"]


@pytest.mark.parametrize("targets", [["all"], ["a", "b"]])
async def test_broadcast_is_not_restricted_by_comm_targets(
    make_runtime: Any, user_message: Any, wait_event: Any, targets: list[str]
) -> None:
    supervisor = ScriptedAgent(
        rule=lambda inc: (
            tc("task_complete", finish_message="ok")
            if inc.body == "wrap up"
            else tc("send_broadcast", subject="s", body="b", targets=targets)
        )
    )
    a = ScriptedAgent(rule=lambda _: tc("ignore_broadcast", reason="x"))
    b = ScriptedAgent(rule=lambda _: tc("ignore_broadcast", reason="y"))
    rt = make_runtime(
        {
            # supervisor may not *request* anything from b, but broadcasts are exempt
            "supervisor": AgentCore(
                supervisor, ["a"], enable_entrypoint=True, can_complete_tasks=True
            ),
            "a": AgentCore(a, ["supervisor"]),
            "b": AgentCore(b, ["supervisor"]),
        }
    )
    await rt.submit(user_message("go", "t-bc-ct"))
    await wait_event(rt, "t-bc-ct", nth(lambda e: e.event == EventName.BROADCAST_IGNORED, 2))
    assert (a.invocations, b.invocations) == (1, 1)
    assert "agent_error" not in [e.event for e in rt.get_events("t-bc-ct")]
