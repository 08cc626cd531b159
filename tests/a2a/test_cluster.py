"""The A2A façade in cluster mode: two real replicas on one PostgreSQL database and Redis.
A task sent to one is read, listed and followed up on the other (the MAIL task goes on
where its lease is). Skipped, with the reason, without PostgreSQL or Redis (see
tests/server/test_cluster.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from a2a.types import GetTaskRequest, ListTasksRequest, Task, TaskState
from tests.a2a.conftest import connect, send, text_message
from tests.server.test_cluster import running_replicas

pytestmark = pytest.mark.timeout(180)


async def _on_a_then_b(a: str, b: str, user: str) -> tuple[Task, Task, Task, list[Task]]:
    async with connect(a, user) as on_a:
        [first] = await send(on_a, text_message("What is 12*(3+4)?"))
    context = first.task.context_id
    async with connect(b, user) as on_b:
        read = await on_b.get_task(GetTaskRequest(id=first.task.id))
        [second] = await send(on_b, text_message("And 2+2?", context_id=context))
        listed = await on_b.list_tasks(ListTasksRequest(context_id=context))
    return first.task, read, second.task, list(listed.tasks)


def test_a_task_sent_to_a_is_read_and_followed_up_on_b(tmp_path: Path) -> None:
    # not a coroutine: the replicas' fixture runs its own event loop
    with running_replicas(tmp_path, ("a", "b")) as cluster:
        a, b = cluster.replicas
        keys = json.loads((a.data / "credentials.json").read_text(encoding="utf-8"))["keys"]
        user = next(k["key"] for k in keys if k["role"] == "user")
        first, read, second, listed = asyncio.run(_on_a_then_b(a.url, b.url, user))

    assert first.status.state == TaskState.TASK_STATE_COMPLETED
    assert read.artifacts[0].parts[0].text == first.artifacts[0].parts[0].text
    assert second.status.state == TaskState.TASK_STATE_COMPLETED
    assert "2+2 = 4" in second.artifacts[0].parts[0].text
    assert {t.id for t in listed} == {first.id, second.id}
