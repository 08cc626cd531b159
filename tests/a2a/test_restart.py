"""A2A tasks live in our store: a real ``mail server`` (SQLite in its data directory)
stopped and started again still serves them, and a follow-up in their context continues
the MAIL task."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from a2a.types import (
    GetTaskRequest,
    ListTasksRequest,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)
from fastapi import FastAPI
from tests._servers import clean_env, serve, start_server
from tests.a2a.conftest import connect, send, text_message
from tests.server.conftest import KEYS, gated_swarm, make_config

from mail.server import create_app
from mail.testing import StaticAuth

pytestmark = pytest.mark.timeout(120)

SWARMS_JSON = Path(__file__).resolve().parents[2] / "swarms.json"


async def test_a2a_tasks_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = start_server("offline", SWARMS_JSON, clean_env(), data)
    with server:
        key = server.keys["user"]
        async with connect(server.url, key, streaming=True) as client:
            events = await send(client, text_message("What is 12*(3+4)?"))
        task_id, context = events[0].task.id, events[0].task.context_id
        server.stop()
        server.start()
        async with connect(server.url, key) as client:
            read = await client.get_task(GetTaskRequest(id=task_id))
            [follow_up] = await send(client, text_message("And 2+2?", context_id=context))
            listed = await client.list_tasks(ListTasksRequest(context_id=context))

    assert read.status.state == TaskState.TASK_STATE_COMPLETED
    assert "84" in read.artifacts[0].parts[0].text
    assert follow_up.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert "2+2 = 4" in follow_up.task.artifacts[0].parts[0].text
    assert {t.id for t in listed.tasks} == {task_id, follow_up.task.id}


async def test_a_turn_cut_by_the_server_stopping_ends_failed(tmp_path: Path) -> None:
    gate = asyncio.Event()  # never set: the turn runs until the server stops
    template, _worker = gated_swarm(gate)
    request = SendMessageRequest(
        message=text_message("job", message_id="m-stop"),
        configuration=SendMessageConfiguration(return_immediately=True),
    )
    config = make_config(tmp_path)

    def app() -> FastAPI:
        return create_app(config, template=template, authenticator=StaticAuth(KEYS))

    async with serve(app()) as url, connect(url) as client:
        [started] = [r async for r in client.send_message(request)]
    # stopped while the worker waits; started again on the same store
    async with serve(app()) as url, connect(url) as client:
        read = await client.get_task(GetTaskRequest(id=started.task.id))

    assert read.status.state == TaskState.TASK_STATE_FAILED
