"""A2A tasks live in our store: a real ``mail server`` (SQLite in its data directory)
stopped and started again still serves them, and a follow-up in their context continues
the MAIL task."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

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
from tests.persistence.conftest import eventually
from tests.server.conftest import KEYS, WAIT, gated_swarm, make_config, scripted_template

from mail.core.tools import AgentToolCall
from mail.server import create_app
from mail.testing import Incoming, ScriptedAgent, ScriptedCall, StaticAuth, tc

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


class Entering(ScriptedAgent):
    """A scripted agent that tells when a turn of it began."""

    def __init__(self, entered: asyncio.Event, **options: Any) -> None:
        super().__init__(**options)
        self.entered = entered

    async def __call__(
        self, messages: list[dict[str, Any]], tool_choice: str | dict[str, Any] = "required"
    ) -> tuple[str | None, list[AgentToolCall]]:
        self.entered.set()
        return await super().__call__(messages, tool_choice)


async def test_a_send_not_streamed_cut_by_the_server_stopping_ends_failed(
    tmp_path: Path,
) -> None:
    entered = asyncio.Event()

    def supervise(incoming: Incoming) -> ScriptedCall:
        return tc("send_request", target="worker", subject="job", body=incoming.body)

    # the worker waits for a gate never set: the turn runs until the server stops
    worker = Entering(entered, gate=asyncio.Event())
    template = scripted_template({"supervisor": ScriptedAgent(rule=supervise), "worker": worker})
    config = make_config(tmp_path)
    context = "t-blocking-stop"

    def app() -> FastAPI:
        return create_app(config, template=template, authenticator=StaticAuth(KEYS))

    async with serve(app()) as url, connect(url) as client:
        sending = asyncio.create_task(send(client, text_message("job", context_id=context)))
        await asyncio.wait_for(entered.wait(), WAIT)
    await asyncio.gather(sending, return_exceptions=True)  # the connection went with the server
    async with serve(app()) as url, connect(url) as client:
        listed = await client.list_tasks(ListTasksRequest(context_id=context))

    [task] = listed.tasks
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert "shutting down" in task.status.message.parts[0].text


def _slow_swarm(path: Path) -> Path:
    """swarms.json with one swarm: the offline supervisor taking a minute a turn."""
    swarm = {
        "name": "slow",
        "version": "1.0.0",
        "entrypoint": "supervisor",
        "agents": [
            {
                "name": "supervisor",
                "factory": "python::mail.examples.offline.agents:OfflineSupervisorFunction",
                "comm_targets": [],
                "enable_entrypoint": True,
                "can_complete_tasks": True,
                "agent_params": {"turn_seconds": 60},
            }
        ],
        "actions": [],
    }
    path.write_text(json.dumps([swarm]), encoding="utf-8")
    return path


async def _stored(path: Path, task_id: str) -> bool:
    def read() -> bool:
        if not path.exists():
            return False
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            row = conn.execute("SELECT state FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
        return row is not None

    return await asyncio.to_thread(read)


async def test_a_turn_cut_by_a_crash_reads_failed_after_the_restart(tmp_path: Path) -> None:
    server = start_server(
        "slow", _slow_swarm(tmp_path / "swarms.json"), clean_env(), tmp_path / "data"
    )
    request = SendMessageRequest(
        message=text_message("What is 2+2?", message_id="m-crash"),
        configuration=SendMessageConfiguration(return_immediately=True),
    )
    with server:
        key = server.keys["user"]
        async with connect(server.url, key) as client:
            [started] = [r async for r in client.send_message(request)]
        await eventually(
            lambda: _stored(tmp_path / "data" / "mail.db", started.task.context_id),
            timeout=WAIT,
            what="the MAIL task in the store",
        )
        server.kill()  # mid-turn (stored running): nothing ends the A2A task
        server.start()
        async with connect(server.url, key) as client:
            read = await client.get_task(GetTaskRequest(id=started.task.id))
            listed = await client.list_tasks(ListTasksRequest())

    assert started.task.status.state in (
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
    )
    # its MAIL task came back interrupted: the A2A task says its turn failed, and why
    assert read.status.state == TaskState.TASK_STATE_FAILED
    assert "the server stopped while this task was running" in read.status.message.parts[0].text
    assert [t.status.state for t in listed.tasks] == [TaskState.TASK_STATE_FAILED]
