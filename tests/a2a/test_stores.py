"""A2A tasks in every store the server keeps tasks in (SQLite, PostgreSQL, memory without
a store), and cancels that reach the MAIL task wherever it waits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from a2a.types import CancelTaskRequest, GetTaskRequest, ListTasksRequest, TaskState
from tests.a2a.conftest import Start, connect, send, text_message
from tests.a2a.test_serve import QUESTION, mail_events
from tests.db.conftest import postgres_admin_url, postgres_url
from tests.server.conftest import ask_human_action, make_config, scripted_template

from mail.testing import ScriptedAgent, tc

__all__ = ["postgres_admin_url", "postgres_url"]  # the fixtures the PostgreSQL runs use

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "memory"])
async def test_tasks_are_kept_in_each_store(
    a2a_start: Start, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    database: dict[str, Any] = {
        "sqlite": {},
        "postgres": {"url": request.getfixturevalue("postgres_url")}
        if backend == "postgres"
        else {},
        "memory": {"persist": False},
    }[backend]
    url = await a2a_start(config=make_config(tmp_path, database=database))
    async with connect(url) as client:
        [first] = await send(client, text_message(QUESTION))
        context = first.task.context_id
        [second] = await send(client, text_message("And 2+2?", context_id=context))
        read = await client.get_task(GetTaskRequest(id=first.task.id))
        listed = await client.list_tasks(ListTasksRequest(context_id=context))

    assert read.status.state == TaskState.TASK_STATE_COMPLETED
    assert read.artifacts[0].parts[0].text == first.task.artifacts[0].parts[0].text
    assert [t.id for t in listed.tasks] == [second.task.id, first.task.id]  # newest first


async def test_cancelling_a_task_waiting_for_input_cancels_the_mail_task(
    a2a_start: Start,
) -> None:
    supervisor = ScriptedAgent([tc("ask_human", call_id="bp-1", question="Name?")])
    template = scripted_template(
        {"supervisor": supervisor}, breakpoint_tools=["ask_human"], actions=[ask_human_action()]
    )
    url = await a2a_start(template=template)
    async with connect(url) as client:
        [paused] = await send(client, text_message("hello"))
        cancelled = await client.cancel_task(CancelTaskRequest(id=paused.task.id))

    assert paused.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    events = await mail_events(url, paused.task.context_id)
    assert events[-1]["event"] == "task_error"
    assert "cancel" in events[-1]["data"]["description"]
