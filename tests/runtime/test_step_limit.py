"""The step limit: ::maximum_steps_reached:: and the forced task_complete (CONTRACT 4.9)."""

from __future__ import annotations

from typing import Any

import pytest

from mail.core.agents import AgentCore
from mail.core.events import EventName
from mail.core.tasks import TaskState
from mail.errors import InvalidMessageError
from mail.testing import Incoming, ScriptedAgent, tc

FORCED = {
    "responses": {"type": "function", "name": "task_complete"},
    "completions": {"type": "function", "function": {"name": "task_complete"}},
}


def ping_pong(make_runtime: Any, fmt: str, **kw: Any) -> tuple[Any, ScriptedAgent, ScriptedAgent]:
    def supervisor(incoming: Incoming) -> Any:
        if incoming.subject == "::maximum_steps_reached::":
            return tc("task_complete", finish_message="stopped by the step limit")
        return tc("send_request", target="worker", subject="ping", body="again")

    sup = ScriptedAgent(rule=supervisor, tool_format=fmt)
    worker = ScriptedAgent(
        rule=lambda _: tc("send_response", target="supervisor", subject="pong", body="back"),
        tool_format=fmt,
    )
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                sup,
                ["worker"],
                enable_entrypoint=True,
                can_complete_tasks=True,
                tool_format=fmt,
            ),
            "worker": AgentCore(worker, ["supervisor"], tool_format=fmt),
        },
        **kw,
    )
    return rt, sup, worker


@pytest.mark.parametrize("fmt", ["responses", "completions"])
@pytest.mark.parametrize("source", ["start", "kwargs"])
async def test_step_limit_forces_task_complete(
    make_runtime: Any, user_message: Any, fmt: str, source: str
) -> None:
    limit = 4
    if source == "start":
        rt, sup, worker = ping_pong(make_runtime, fmt, max_steps=limit)
        final = await rt.submit_and_wait(user_message("go", "t-steps"), timeout=10)
    else:
        rt, sup, worker = ping_pong(make_runtime, fmt)
        final = await rt.submit_and_wait(user_message("go", "t-steps"), timeout=10, max_steps=limit)
    assert final["message"]["body"] == "stopped by the step limit"
    assert rt.get_task("t-steps").state is TaskState.COMPLETED

    deliveries = [
        e.extra_data["full_message"]
        for e in rt.get_events("t-steps")
        if e.event == EventName.NEW_MESSAGE
    ]
    # user->sup, sup->worker, worker->sup, sup->worker, then the 5th step is replaced
    assert [m["message"]["subject"] for m in deliveries] == [
        "New Message",
        "ping",
        "pong",
        "ping",
        "::maximum_steps_reached::",
        "::task_complete::",
    ]
    limit_msg = deliveries[4]
    assert limit_msg["msg_type"] == "response"
    assert limit_msg["message"]["sender"] == {"address_type": "system", "address": "demo"}
    assert limit_msg["message"]["recipient"] == {"address_type": "agent", "address": "supervisor"}
    body = limit_msg["message"]["body"]
    assert body.startswith(
        "The swarm has reached the maximum number of steps allowed. You must now call "
        "`task_complete`"
    )
    assert "--- Event 1 ---" in body
    assert '"event": "new_message"' in body

    # every turn ran with "required", except the one forced towards task_complete
    choices = [choice for _, choice in sup.calls]
    assert choices[:-1] == ["required"] * (len(choices) - 1)
    assert choices[-1] == FORCED[fmt]
    assert {choice for _, choice in worker.calls} == {"required"}
    assert (sup.invocations, worker.invocations) == (3, 2)


async def test_per_task_max_steps_overrides_the_runtime_limit(
    make_runtime: Any, user_message: Any
) -> None:
    rt, sup, worker = ping_pong(make_runtime, "responses", max_steps=100)
    final = await rt.submit_and_wait(user_message("go", "t-override"), timeout=10, max_steps=2)
    assert final["message"]["body"] == "stopped by the step limit"
    assert (sup.invocations, worker.invocations) == (2, 1)


async def test_step_counter_resets_on_a_followup(make_runtime: Any, user_message: Any) -> None:
    rt, sup, _ = ping_pong(make_runtime, "responses", max_steps=2)
    await rt.submit_and_wait(user_message("go", "t-reset"), timeout=10)
    assert sup.invocations == 2
    final = await rt.submit_and_wait(
        user_message("go again", "t-reset"), resume_from="user_response", timeout=10
    )
    assert final["message"]["body"] == "stopped by the step limit"
    # the follow-up got the same two steps again
    assert sup.invocations == 4


@pytest.mark.parametrize("bad", [0, -1, "3", 2.5, True])
async def test_invalid_max_steps_is_rejected(
    make_runtime: Any, user_message: Any, bad: Any
) -> None:
    rt, sup, _ = ping_pong(make_runtime, "responses")
    with pytest.raises(InvalidMessageError, match="max_steps"):
        await rt.submit_and_wait(user_message("go", "t-bad-steps"), timeout=5, max_steps=bad)
    assert sup.invocations == 0


async def test_rejected_max_steps_leaves_no_task_behind(
    make_runtime: Any, user_message: Any
) -> None:
    rt, _, _ = ping_pong(make_runtime, "responses")
    with pytest.raises(InvalidMessageError):
        await rt.submit_and_wait(user_message("go", "t-stray"), timeout=5, max_steps=0)
    assert rt.get_task("t-stray") is None
    # the same task id can then be submitted properly
    final = await rt.submit_and_wait(user_message("go", "t-stray"), timeout=10, max_steps=2)
    assert final["message"]["body"] == "stopped by the step limit"
