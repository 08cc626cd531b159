"""Breakpoint tools over HTTP: pause, the JSON array answer, resume, bad resumes (CONTRACT 4.7)."""

from __future__ import annotations

import json

import pytest
from tests.server.conftest import Running, Start, ask_human_action, read_stream, scripted_template

from mail.testing import ScriptedAgent, tc

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
async def paused_swarm(start: Start) -> Running:
    supervisor = ScriptedAgent(
        [
            tc("ask_human", call_id="bp-1", question="What is your name?"),
            lambda incoming: tc("task_complete", finish_message="thanks, human"),
        ]
    )
    template = scripted_template(
        {"supervisor": supervisor}, breakpoint_tools=["ask_human"], actions=[ask_human_action()]
    )
    return await start(template=template)


PENDING = [
    {
        "arguments": json.dumps({"question": "What is your name?"}),
        "call_id": "bp-1",
        "name": "ask_human",
        "type": "function_call",
        "id": "fc_bp-1",
        "status": "completed",
    }
]


async def test_breakpoint_pauses_then_resumes(paused_swarm: Running) -> None:
    user = await paused_swarm.user()

    paused = await user.post("/message", json={"body": "hello", "task_id": "t-bp"})

    assert paused.status_code == 200
    body = paused.json()
    assert body["status"] == "waiting_breakpoint"
    assert body["task_id"] == "t-bp"
    assert json.loads(body["response"]) == PENDING
    task = (await user.get("/task", params={"task_id": "t-bp"})).json()
    assert task["state"] == "waiting_breakpoint"
    assert task["is_running"] is False

    resumed = await user.post(
        "/message",
        json={
            "task_id": "t-bp",
            "resume_from": "breakpoint_tool_call",
            "kwargs": {"breakpoint_tool_call_result": "Ada"},
            "show_events": True,
        },
    )

    assert resumed.status_code == 200
    answer = resumed.json()
    assert answer["response"] == "thanks, human"
    assert answer["status"] == "completed"
    names = [e["event"] for e in answer["events"]]
    assert names[:4] == ["new_message", "tool_call", "breakpoint_tool_call", "task_complete"]
    assert "breakpoint_action_complete" in names
    done = next(e for e in answer["events"] if e["event"] == "breakpoint_action_complete")
    assert done["data"]["description"] == "breakpoint action complete (caller = supervisor):\nAda"


async def test_breakpoint_over_a_stream(paused_swarm: Running) -> None:
    user = await paused_swarm.user()

    async with user.stream(
        "POST", "/message", json={"body": "hello", "task_id": "t-bps", "stream": True}
    ) as response:
        first = await read_stream(response)
    async with user.stream(
        "POST",
        "/message",
        json={
            "task_id": "t-bps",
            "resume_from": "breakpoint_tool_call",
            "kwargs": {"breakpoint_tool_call_result": "Ada"},
            "stream": True,
        },
    ) as response:
        second = await read_stream(response)

    assert [f.event for f in first] == [
        "new_message",
        "tool_call",
        "breakpoint_tool_call",
        "task_complete",
    ]
    assert json.loads(first[-1].data["response"]) == PENDING
    # the resumed stream starts after what the first one showed and the paused turn's
    # stored task_complete, which the first stream's final stood for
    assert second[0].event == "breakpoint_action_complete"
    assert second[0].id == first[-2].id + 2  # type: ignore[operator]
    assert second[-1].event == "task_complete"
    assert second[-1].data["response"] == "thanks, human"


async def test_resume_without_result_is_400(paused_swarm: Running) -> None:
    user = await paused_swarm.user()
    await user.post("/message", json={"body": "hello", "task_id": "t-bp2"})

    response = await user.post(
        "/message", json={"task_id": "t-bp2", "resume_from": "breakpoint_tool_call"}
    )

    assert response.status_code == 400
    assert response.json() == {
        "detail": "kwargs.breakpoint_tool_call_result: is required to resume from a breakpoint tool call"
    }
    task = (await user.get("/task", params={"task_id": "t-bp2"})).json()
    assert task["state"] == "waiting_breakpoint"  # still paused, still resumable


async def test_resuming_a_task_that_is_not_paused_is_409(paused_swarm: Running) -> None:
    user = await paused_swarm.user()
    await user.post("/message", json={"body": "hello", "task_id": "t-bp3"})
    resume = {
        "task_id": "t-bp3",
        "resume_from": "breakpoint_tool_call",
        "kwargs": {"breakpoint_tool_call_result": "Ada"},
    }
    assert (await user.post("/message", json=resume)).status_code == 200

    again = await user.post("/message", json=resume)

    assert again.status_code == 409
    assert again.json() == {
        "detail": "task 't-bp3' has no breakpoint tool calls waiting for results"
    }


async def test_user_response_on_a_paused_task_is_409(paused_swarm: Running) -> None:
    user = await paused_swarm.user()
    await user.post("/message", json={"body": "hello", "task_id": "t-bp4"})

    response = await user.post(
        "/message", json={"body": "hi", "task_id": "t-bp4", "resume_from": "user_response"}
    )

    assert response.status_code == 409
    assert "resume_from='breakpoint_tool_call'" in response.json()["detail"]


async def test_breakpoint_resume_of_unknown_task_is_404(paused_swarm: Running) -> None:
    response = await (await paused_swarm.user()).post(
        "/message",
        json={
            "task_id": "nope",
            "resume_from": "breakpoint_tool_call",
            "kwargs": {"breakpoint_tool_call_result": "Ada"},
        },
    )

    assert response.status_code == 404
    assert response.json() == {"detail": "task 'nope' not found"}
