"""``POST /tasks/{task_id}/cancel``: a running or paused task ends ``cancelled``, every open
stream of it gets the final ``task_error`` (``status: cancelled``), and it can be resumed;
unknown, foreign and finished tasks, and wrong roles, are refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from tests.server.conftest import (
    Frame,
    Running,
    Start,
    ask_human_action,
    frames,
    gated_swarm,
    scripted_template,
    shared,
    within,
)

from mail.testing import ScriptedAgent, tc

pytestmark = pytest.mark.timeout(30)


async def _collect(response: httpx.Response, seen: asyncio.Event | None = None) -> list[Frame]:
    got: list[Frame] = []
    async for frame in frames(response):
        got.append(frame)
        if seen is not None and frame.event == "new_message" and "worker" in str(frame.data):
            seen.set()
    return got


async def test_cancel_a_running_task_ends_every_stream(start: Start) -> None:
    gate = asyncio.Event()
    template, _worker = gated_swarm(gate)
    server = await start(template=template)
    user = await server.user()
    at_worker = asyncio.Event()

    async with (
        user.stream(
            "POST", "/message", json={"body": "job", "stream": True, "task_id": "t-c"}
        ) as posted,
        user.stream("GET", "/tasks/t-c/events") as followed,
    ):
        readers = [
            asyncio.create_task(_collect(posted, at_worker)),
            asyncio.create_task(_collect(followed)),
        ]
        await within(at_worker.wait())  # the worker's turn waits at its gate
        cancelled = await user.post("/tasks/t-c/cancel")
        streams = await within(asyncio.gather(*readers))

    assert (cancelled.status_code, cancelled.json()) == (
        200,
        {"task_id": "t-c", "status": "cancelled"},
    )
    for stream in streams:
        final = stream[-1]
        assert (final.event, final.data["status"]) == ("task_error", "cancelled")
        assert final.data["response"] == "The task was cancelled by its owner."
    task = (await user.get("/task", params={"task_id": "t-c"})).json()
    assert (task["state"], task["is_running"]) == ("cancelled", False)
    again = await user.post("/tasks/t-c/cancel")
    assert (again.status_code, again.json()) == (409, {"detail": "task 't-c' is already cancelled"})

    # resumable like a failed task; the cancelled worker turn left nothing behind
    gate.set()
    resumed = await user.post(
        "/message", json={"body": "again", "task_id": "t-c", "resume_from": "user_response"}
    )
    assert (resumed.status_code, resumed.json()["response"]) == (200, "done: worked")


async def test_cancel_a_task_paused_on_a_breakpoint(start: Start) -> None:
    supervisor = ScriptedAgent([tc("ask_human", call_id="bp-1", question="Your name?")])
    template = scripted_template(
        {"supervisor": supervisor}, breakpoint_tools=["ask_human"], actions=[ask_human_action()]
    )
    server = await start(template=template)
    user = await server.user()
    paused = await user.post("/message", json={"body": "hi", "task_id": "t-bp"})
    assert paused.json()["status"] == "waiting_breakpoint"

    cancelled = await user.post("/tasks/t-bp/cancel")

    assert cancelled.json() == {"task_id": "t-bp", "status": "cancelled"}
    assert (await user.get("/task", params={"task_id": "t-bp"})).json()["state"] == "cancelled"
    async with user.stream("GET", "/tasks/t-bp/events") as response:
        final = (await within(_collect(response)))[-1]
    assert (final.event, final.data["status"]) == ("task_error", "cancelled")
    resume = await user.post(
        "/message",
        json={
            "task_id": "t-bp",
            "resume_from": "breakpoint_tool_call",
            "kwargs": {"breakpoint_tool_call_result": "Ada"},
        },
    )
    assert resume.status_code == 409  # its breakpoint was dropped with it


async def test_cancel_a_finished_task_is_409(offline: Running) -> None:
    user = await offline.user()
    assert (await user.post("/message", json={"body": "hi", "task_id": "t-f"})).status_code == 200

    response = await user.post("/tasks/t-f/cancel")

    assert (response.status_code, response.json()) == (
        409,
        {"detail": "task 't-f' is already completed"},
    )


@shared
@pytest.mark.parametrize("who", ["user", "admin"])
async def test_cancel_an_unknown_task_is_404(shared_offline: Running, who: str) -> None:
    client = await getattr(shared_offline, who)()
    response = await client.post("/tasks/t-nope/cancel")
    assert (response.status_code, response.json()) == (404, {"detail": "task 't-nope' not found"})


async def test_cancel_another_callers_task_is_404(start: Start) -> None:
    gate = asyncio.Event()
    template, _worker = gated_swarm(gate)
    server = await start(template=template)
    user = await server.user()
    async with user.stream(
        "POST", "/message", json={"body": "job", "stream": True, "task_id": "t-u1"}
    ) as posted:
        stream = frames(posted)
        await within(anext(stream))  # the task runs
        response = await (await server.user2()).post("/tasks/t-u1/cancel")
        gate.set()
        rest = await within(_drain(stream))
    assert (response.status_code, response.json()) == (404, {"detail": "task 't-u1' not found"})
    assert rest[-1].event == "task_complete"


async def _drain(stream: AsyncIterator[Frame]) -> list[Frame]:
    return [frame async for frame in stream]


@shared
@pytest.mark.parametrize(
    ("who", "detail"),
    [
        ("agent", "invalid role: this route needs admin or user"),
        ("anon", "no API key provided"),
    ],
)
async def test_cancel_refuses_other_roles(shared_offline: Running, who: str, detail: str) -> None:
    client = await getattr(shared_offline, who)()
    response = await client.post("/tasks/t-any/cancel")
    assert (response.status_code, response.json()) == (401, {"detail": detail})
