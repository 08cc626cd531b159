"""``mail/list`` with ``filter.taskId`` (our extension, used by the web UI to find a task's
conversation) against a real server: only the caller's conversations bound to that task,
oldest first, paged, on each conversation store; a bad value is -32602."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.db.conftest import postgres_admin_url, postgres_url
from tests.server.conftest import Running, Start, make_config
from tests.server.test_map_rpc import rpc

__all__ = ["postgres_admin_url", "postgres_url"]  # the fixtures the postgres case uses


async def create(client: httpx.AsyncClient, **params: Any) -> str:
    answer = await rpc(client, "mail/create", params)
    cid: str = answer["result"]["conversation"]["id"]
    return cid


async def listed(client: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    answer = await rpc(client, "mail/list", params)
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


@pytest.mark.parametrize("backend", ["memory", "sqlite", "postgres"])
async def test_filter_task_id_lists_the_conversations_bound_to_that_task(
    start: Start, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    database: dict[str, Any] | None = {"persist": False} if backend == "memory" else None
    if backend == "postgres":  # skipped, with the reason, without MAIL_TEST_POSTGRES_URL
        database = {"url": request.getfixturevalue("postgres_url")}
    running = await start(make_config(tmp_path, database=database))
    user, other = await running.user(), await running.user2()
    first = await create(user, subject="first", taskId="task-a")
    await create(user, subject="unbound")
    await create(user, subject="elsewhere", taskId="task-b")
    second = await create(user, subject="second", taskId="task-a")
    await create(other, subject="not yours", taskId="task-a")

    found = await listed(user, filter={"taskId": "task-a"})
    assert [c["id"] for c in found["conversations"]] == [first, second]
    assert {c["taskId"] for c in found["conversations"]} == {"task-a"}
    assert found["nextCursor"] is None
    assert (await listed(user, filter={"taskId": "task-none"}))["conversations"] == []
    assert len((await listed(user))["conversations"]) == 4  # without the filter: all of u1's

    # paged, and combined with the seed's filters
    page = await listed(user, filter={"taskId": "task-a"}, limit=1)
    assert [c["id"] for c in page["conversations"]] == [first]
    rest = await listed(user, filter={"taskId": "task-a"}, limit=1, cursor=page["nextCursor"])
    assert [c["id"] for c in rest["conversations"]] == [second]
    assert rest["nextCursor"] is None
    await rpc(user, "mail/close", {"conversationId": first})
    active = await listed(user, filter={"taskId": "task-a", "status": ["active"]})
    assert [c["id"] for c in active["conversations"]] == [second]


async def test_a_bad_task_id_filter_is_invalid_params(offline: Running) -> None:
    user = await offline.user()
    for bad, got in (({"taskId": 5}, "5"), ({"taskId": ""}, "''")):
        error = (await rpc(user, "mail/list", {"filter": bad}))["error"]
        assert error["code"] == -32602
        assert error["message"] == f"params.filter.taskId: must be a non-empty string, got {got}"
    error = (await rpc(user, "mail/list", {"filter": ["taskId"]}))["error"]
    assert error == {
        "code": -32602,
        "message": "params.filter: must be an object, got a list",
        "data": error["data"],
    }
    assert error["data"]["field"] == "filter"
