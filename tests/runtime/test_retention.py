"""Bounded memory: finished tasks and their histories leave memory (CONTRACT 15 item 14)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mail.core.agents import AgentCore
from mail.core.tasks import TaskState
from mail.errors import TaskNotFoundError
from mail.testing import Incoming, ScriptedAgent, tc


def delegating_swarm(make_runtime: Any, **kw: Any) -> Any:
    def supervisor(incoming: Incoming) -> Any:
        if incoming.subject == "ask":
            return tc("ask_human", question="?")
        if incoming.sender_type == "user":
            return tc("send_request", target="worker", subject="job", body=incoming.body)
        return tc("task_complete", finish_message="done " + incoming.body)

    worker = ScriptedAgent(
        rule=lambda inc: tc("send_response", target="supervisor", subject="re", body=inc.body),
        record=False,
    )
    return make_runtime(
        {
            "supervisor": AgentCore(
                ScriptedAgent(rule=supervisor, record=False),
                ["worker"],
                enable_entrypoint=True,
                can_complete_tasks=True,
            ),
            "worker": AgentCore(worker, ["supervisor"]),
        },
        **kw,
    )


@pytest.mark.parametrize("concurrent", [False, True])
async def test_only_the_newest_finished_tasks_stay_in_memory(
    make_runtime: Any, user_message: Any, concurrent: bool
) -> None:
    rt = delegating_swarm(make_runtime, max_finished_tasks=5)
    ids = [f"t-{i:02d}" for i in range(20)]
    if concurrent:
        finals = await asyncio.wait_for(
            asyncio.gather(*(rt.submit_and_wait(user_message(t, t), timeout=10) for t in ids)), 20
        )
    else:
        finals = [await rt.submit_and_wait(user_message(t, t), timeout=10) for t in ids]
    assert [f["message"]["body"] for f in finals] == [f"done {t}" for t in ids]

    kept = [task.task_id for task in rt.tasks]
    assert len(kept) == 5
    assert all(rt.get_task(t).state is TaskState.COMPLETED for t in kept)
    if not concurrent:
        assert kept == ids[-5:]
    assert set(rt.agent_histories) == {f"{t}::{a}" for t in kept for a in ("supervisor", "worker")}
    for task_id in set(ids) - set(kept):
        assert rt.get_task(task_id) is None
        with pytest.raises(TaskNotFoundError):
            rt.get_events(task_id)
        with pytest.raises(TaskNotFoundError):
            await rt.submit_and_wait(
                user_message("again", task_id), resume_from="user_response", timeout=5
            )


async def test_tasks_paused_on_a_breakpoint_are_never_evicted(
    make_runtime: Any, user_message: Any
) -> None:
    rt = delegating_swarm(make_runtime, max_finished_tasks=2, breakpoint_tools=["ask_human"])
    paused = await rt.submit_and_wait(user_message("?", "t-paused", subject="ask"), timeout=10)
    assert paused["message"]["subject"] == "::breakpoint_tool_call::"
    for i in range(6):
        await rt.submit_and_wait(user_message("x", f"t-{i}"), timeout=10)
    assert rt.get_task("t-paused").state is TaskState.WAITING_BREAKPOINT
    assert "t-paused::supervisor" in rt.agent_histories
    assert sorted(t.task_id for t in rt.tasks) == ["t-4", "t-5", "t-paused"]
