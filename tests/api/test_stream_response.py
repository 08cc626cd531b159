"""``MAILSwarm.post_message_stream`` returns an ``EventSourceResponse`` a user's own FastAPI
route returns, framed as the server's streams (issue 22, item 3); ``post_message_events``
is the iterator."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx
from fastapi import FastAPI
from sse_starlette import EventSourceResponse
from tests._servers import serve

from mail import MAILAgentTemplate, MAILSwarmTemplate
from mail.api import MAILSwarm
from mail.testing import Incoming, ScriptedAgent, tc

_FRAME = re.compile(r"(?:id: (\d+)\r\n)?event: ([a-z_]+)\r\ndata: ([^\r\n]*)\r\n")


def _supervise(incoming: Incoming) -> Any:
    if incoming.sender == "worker":
        return tc("task_complete", finish_message=f"done: {incoming.body} / ok")
    return tc("send_request", target="worker", subject="job", body=incoming.body)


def _work(incoming: Incoming) -> Any:
    return tc("send_response", target="supervisor", subject="re", body=f"worked on {incoming.body}")


def _swarm() -> MAILSwarm:
    agents = {"supervisor": ScriptedAgent(rule=_supervise), "worker": ScriptedAgent(rule=_work)}
    template = MAILSwarmTemplate(
        "streamed",
        "1.0.0",
        [
            MAILAgentTemplate(
                name,
                lambda _agent=agent, **_params: _agent,
                [n for n in agents if n != name],
                [],
                {},
                enable_entrypoint=name == "supervisor",
                can_complete_tasks=name == "supervisor",
            )
            for name, agent in agents.items()
        ],
        [],
        "supervisor",
    )
    return template.instantiate({}, user_id="alice")


def _frames(raw: bytes) -> list[tuple[int | None, str, dict[str, Any], str]]:
    text = raw.decode("ascii")  # compact JSON is ASCII only
    assert text.endswith("\r\n\r\n")
    frames = []
    for chunk in text[: -len("\r\n\r\n")].split("\r\n\r\n"):
        match = _FRAME.fullmatch(chunk + "\r\n")
        assert match is not None, f"malformed frame {chunk!r}"
        seq, name, data = match.groups()
        frames.append((int(seq) if seq else None, name, json.loads(data), data))
    return frames


async def test_post_message_stream_served_from_a_users_own_route() -> None:
    swarm = _swarm()
    app = FastAPI()

    @app.post("/ask")
    async def ask(body: dict[str, str]) -> EventSourceResponse:
        return await swarm.post_message_stream(body["q"], task_id=body["task_id"])

    try:
        async with serve(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as http:
            response = await http.post("/ask", json={"q": "a/b é", "task_id": "t-own-route"})
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["cache-control"] == "no-cache"
            assert response.headers["x-accel-buffering"] == "no"
            frames = _frames(response.content)
    finally:
        await swarm.shutdown()
    names = [name for _, name, _, _ in frames]
    assert names[0] == "new_message"
    assert names[-1] == "task_complete"
    stored = [seq for seq, _, _, _ in frames[:-1]]
    assert stored == sorted(stored) and None not in stored  # id: lines, in order
    _, _, final, final_text = frames[-1]
    assert final["task_id"] == "t-own-route"
    assert final["response"] == "done: worked on a/b é / ok"
    assert "\\/" in final_text and "\\u00e9" in final_text  # compact, escaped JSON
    assert ", " not in final_text and '": ' not in final_text


async def test_post_message_events_is_the_iterator() -> None:
    swarm = _swarm()
    try:
        events = await swarm.post_message_events("x", task_id="t-iter")
        names = [e.event async for e in events]
    finally:
        await swarm.shutdown()
    assert names[0] == "new_message" and names[-1] == "task_complete"


async def test_post_message_stream_pings_while_the_swarm_works() -> None:
    swarm = _swarm()
    app = FastAPI()

    @app.post("/ask")
    async def ask() -> EventSourceResponse:
        return await swarm.post_message_stream("x", task_id="t-ping", ping_interval=0.05)

    gate = asyncio.Event()
    worker = swarm.runtime.agents["worker"].function
    assert isinstance(worker, ScriptedAgent)
    worker.gate = gate
    try:
        async with serve(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as http:
            async with http.stream("POST", "/ask") as response:
                seen = b""
                async for chunk in response.aiter_raw():
                    seen += chunk
                    if b"event: ping\r\n" in seen:
                        gate.set()
            frames = _frames(seen)
    finally:
        await swarm.shutdown()
    assert "ping" in [name for _, name, _, _ in frames]
    assert frames[-1][1] == "task_complete"
