"""Per-(task, agent) serialization and many concurrent tasks (CONTRACT 4.1, 15 item 3)."""

from __future__ import annotations

import asyncio
from typing import Any

from mail.core.agents import AgentCore
from mail.core.events import EventName
from mail.core.tasks import TaskState
from mail.testing import Incoming, ScriptedAgent, tc


async def test_same_agent_never_runs_twice_at_once_in_one_task_contract_15_3(
    make_runtime: Any, user_message: Any, wait_event: Any, probe: Any
) -> None:
    """Regression: concurrent turns of one agent in one task corrupted its history."""
    answers: list[str] = []

    def supervisor(incoming: Incoming) -> Any:
        if incoming.sender_type == "user":
            return [
                tc("send_request", target="worker", subject="job", body="first"),
                tc("send_request", target="worker", subject="job", body="second"),
            ]
        answers.append(incoming.body)
        if len(answers) == 2:
            return tc("task_complete", finish_message=" + ".join(answers))
        return tc("await_message", reason="one more answer")

    gate = asyncio.Event()
    inner = ScriptedAgent(
        rule=lambda inc: tc("send_response", target="supervisor", subject="done", body=inc.body),
        gate=gate,
    )
    worker = probe(inner)
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
    pending = asyncio.ensure_future(rt.submit_and_wait(user_message("go", "t-serial"), timeout=10))
    assert await worker.next_entry() == "first"
    # the second request has been delivered while the first turn is still running...
    await wait_event(
        rt,
        "t-serial",
        lambda e: (
            e.event == EventName.NEW_MESSAGE
            and e.extra_data["full_message"]["message"]["body"] == "second"
        ),
    )
    # ...but waits for it
    assert (inner.running, inner.invocations) == (1, 1)
    assert worker.entered.empty()
    gate.set()
    final = await asyncio.wait_for(pending, 10)

    assert final["message"]["body"] == "first + second"
    assert inner.max_running == 1
    assert inner.invocations == 2
    # the worker's history is consistent: turn 1 (message, call, result), then turn 2
    history = rt.agent_histories["t-serial::worker"]
    kinds = ["user" if item.get("role") == "user" else item.get("type", "?") for item in history]
    assert kinds == [
        "user",
        "function_call",
        "function_call_output",
        "user",
        "function_call",
        "function_call_output",
    ]
    assert "<body>first</body>" in history[0]["content"]
    assert "<body>second</body>" in history[3]["content"]
    second_prompt, _ = inner.calls[1]
    assert second_prompt == history[:4]


async def test_same_agent_runs_concurrently_across_tasks(
    make_runtime: Any, user_message: Any, probe: Any
) -> None:
    gate = asyncio.Event()
    inner = ScriptedAgent(
        rule=lambda inc: tc("task_complete", finish_message="done " + inc.body), gate=gate
    )
    agent = probe(inner)
    rt = make_runtime(
        {"supervisor": AgentCore(agent, [], enable_entrypoint=True, can_complete_tasks=True)}
    )
    waits = [
        asyncio.ensure_future(rt.submit_and_wait(user_message(f"q{i}", f"t-par-{i}"), timeout=10))
        for i in range(3)
    ]
    entered = {await agent.next_entry() for _ in range(3)}
    assert entered == {"q0", "q1", "q2"}
    assert inner.running == 3  # three turns of the same agent in flight at once
    gate.set()
    finals = await asyncio.wait_for(asyncio.gather(*waits), 10)
    assert [f["message"]["body"] for f in finals] == ["done q0", "done q1", "done q2"]
    assert inner.max_running == 3


async def test_hundred_concurrent_tasks_do_not_cross_talk(
    make_runtime: Any, user_message: Any, probe: Any
) -> None:
    count = 100

    def supervisor(incoming: Incoming) -> Any:
        if incoming.sender_type == "user":
            return tc("send_request", target="worker", subject="q", body=incoming.body)
        return tc("task_complete", finish_message="answer: " + incoming.body)

    gate = asyncio.Event()
    inner = ScriptedAgent(
        rule=lambda inc: tc(
            "send_response", target="supervisor", subject="a", body=f"{inc.body} solved"
        ),
        gate=gate,
        record=False,
    )
    worker = probe(inner)
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                ScriptedAgent(rule=supervisor, record=False),
                ["worker"],
                enable_entrypoint=True,
                can_complete_tasks=True,
            ),
            "worker": AgentCore(worker, ["supervisor"]),
        }
    )
    ids = [f"task-{i:03d}" for i in range(count)]
    waits = [
        asyncio.ensure_future(rt.submit_and_wait(user_message(f"question {tid}", tid), timeout=30))
        for tid in ids
    ]
    for _ in range(count):
        await worker.next_entry()
    assert inner.running == count  # all hundred tasks are mid-flight together
    gate.set()
    finals = await asyncio.wait_for(asyncio.gather(*waits), 30)

    for tid, final in zip(ids, finals, strict=True):
        assert final["message"]["task_id"] == tid
        assert final["message"]["body"] == f"answer: question {tid} solved"
        assert rt.get_task(tid).state is TaskState.COMPLETED
        events = rt.get_events(tid)
        assert [e.event for e in events] == [
            "new_message",
            "tool_call",
            "new_message",
            "tool_call",
            "new_message",
            "tool_call",
            "task_complete_call",
            "new_message",
            "task_complete",
        ]
        assert {e.task_id for e in events} == {tid}
        for event in events:
            if event.event == EventName.NEW_MESSAGE:
                message = event.extra_data["full_message"]
                assert message["message"]["task_id"] == tid
                assert tid in message["message"]["body"]
        for agent in ("supervisor", "worker"):
            history = rt.agent_histories[f"{tid}::{agent}"]
            texts = [item["content"] for item in history if item.get("role") == "user"]
            assert texts
            assert all(tid in text for text in texts)
