"""A server stopped (SIGTERM) while its tasks wait on a peer (issue 20): a waiting
``POST /message`` gets a JSON 503 and a stream a final ``task_error``, both saying how to
resume, and the tasks are stored as they were."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from tests.interswarm.conftest import FakePeer, ack, within
from tests.interswarm.peer_process import PeerProcess
from tests.persistence.server_process import read_line

pytestmark = pytest.mark.timeout(60)


async def _final_of_stream(client: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    frame: dict[str, Any] = {}
    body = {"body": "Osaka", "task_id": task_id, "stream": True}
    async with client.stream("POST", "/message", json=body) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            done = read_line(frame, line)
            if done is not None and "id" not in done and done["event"] != "ping":
                return done
    raise AssertionError("the stream was cut without a final event")


def _resume_hint(task_id: str) -> str:
    return (
        f"the server is shutting down; task '{task_id}' is stored as it is now: once the "
        f'server is back, resume it with POST /message {{"task_id": "{task_id}", '
        '"resume_from": "user_response", "body": "..."}'
    )


async def test_sigterm_answers_waiting_clients_and_stores_their_tasks(tmp_path: Path) -> None:
    forwarded: asyncio.Queue[str] = asyncio.Queue()

    async def accept(request: web.Request, body: Any) -> web.Response:
        forwarded.put_nowait(body["message"]["payload"]["task_id"])
        return await ack(request, body)  # and never replies

    alpha = PeerProcess.alpha(tmp_path / "alpha")
    try:
        async with FakePeer("beta", behaviour=accept) as beta:
            alpha.start()
            await alpha.link("beta", beta.url, "alpha-to-beta")
            async with alpha.user() as client:
                waiting = asyncio.create_task(
                    client.post("/message", json={"body": "Tokyo", "task_id": "t-json"})
                )
                streaming = asyncio.create_task(_final_of_stream(client, "t-stream"))
                both = {await within(forwarded.get()), await within(forwarded.get())}
                assert both == {"t-json", "t-stream"}

                alpha.signal(signal.SIGTERM)
                response = await within(waiting)
                final = await within(streaming)
        assert alpha.process is not None
        status = await asyncio.to_thread(alpha.process.wait, 20)

        assert response.status_code == 503, response.text
        assert response.headers["content-type"] == "application/json"
        assert response.json() == {"detail": _resume_hint("t-json")}
        assert final["event"] == "task_error"
        assert final["data"]["task_id"] == "t-stream"
        assert final["data"]["response"] == _resume_hint("t-stream")
        # a clean stop: uvicorn re-raises the signal it caught once it is done
        assert status == -signal.SIGTERM, alpha.output()
        assert "Application shutdown complete" in alpha.output()

        # stored as they were when the server stopped, and resumable
        alpha.start()
        async with alpha.user() as client:
            for task_id in ("t-json", "t-stream"):
                task = (await client.get("/task", params={"task_id": task_id})).json()
                assert task["state"] == "cancelled", task
                assert task["remote_swarms"] == ["beta"]
                assert "interswarm_message_sent" in [e["event"] for e in task["events"]]
    finally:
        alpha.stop()
