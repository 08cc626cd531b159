"""``GET /tasks`` and ``GET /task`` (query parameter or JSON body) and caller isolation
(CONTRACT 1.5, 14.6)."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from tests.server.conftest import Running, shared

pytestmark = pytest.mark.timeout(30)

_RECORD_KEYS = {
    "task_id",
    "task_owner",
    "task_contributors",
    "start_time",
    "events",
    "is_running",
    "task_message_queue",
    "remote_swarms",
    "completed",
    "title",
    "state",
}


@pytest.fixture
async def u1_task(offline: Running) -> Running:
    response = await (await offline.user()).post(
        "/message", json={"body": "what is 6*7?", "task_id": "t-u1"}
    )
    assert response.status_code == 200
    return offline


def check_record(record: dict[str, object], task_id: str, owner: str) -> None:
    assert set(record) >= _RECORD_KEYS
    assert record["task_id"] == task_id
    assert record["task_owner"] == owner
    assert record["task_contributors"] == [owner]
    assert isinstance(record["start_time"], str)
    assert datetime.fromisoformat(record["start_time"]).tzinfo is not None
    assert record["is_running"] is False
    assert record["completed"] is True
    assert record["state"] == "completed"
    assert record["task_message_queue"] == []
    assert record["remote_swarms"] == []
    assert record["title"] is None or isinstance(record["title"], str)
    events = record["events"]
    assert isinstance(events, list)
    assert events
    for event in events:
        assert set(event) == {"data", "event", "id", "retry", "comment", "_sep"}
        assert isinstance(event["data"], str)  # a JSON string here, unlike /message events
        data = json.loads(event["data"])
        assert set(data) == {"timestamp", "description", "task_id", "extra_data"}
        assert data["task_id"] == task_id
        assert event["_sep"] == "\r\n"
    assert [e["id"] for e in events] == [str(i) for i in range(1, len(events) + 1)]
    assert events[-1]["event"] == "task_complete"


async def test_tasks_lists_the_callers_tasks_by_id(u1_task: Running) -> None:
    user = await u1_task.user()
    assert (await user.post("/message", json={"body": "what is 1+1?", "task_id": "t-2"})).is_success

    response = await user.get("/tasks")

    assert response.status_code == 200
    tasks = response.json()
    assert set(tasks) == {"t-u1", "t-2"}  # no pseudo-tasks "*" or "null" (15.9)
    check_record(tasks["t-u1"], "t-u1", "user:u1@offline")


async def test_tasks_of_a_caller_without_a_runtime_is_empty(offline: Running) -> None:
    response = await (await offline.user2()).get("/tasks")

    assert response.status_code == 200
    assert response.json() == {}
    assert len(offline.state.swarms) == 0  # reading does not build a runtime


async def test_admin_tasks_are_owned_by_the_admin(offline: Running) -> None:
    admin = await offline.admin()
    await admin.post("/message", json={"body": "what is 6*7?", "task_id": "t-adm"})

    tasks = (await admin.get("/tasks")).json()

    check_record(tasks["t-adm"], "t-adm", "admin:admin1@offline")


async def test_task_by_query_parameter(u1_task: Running) -> None:
    user = await u1_task.user()

    response = await user.get("/task", params={"task_id": "t-u1"})

    assert response.status_code == 200
    check_record(response.json(), "t-u1", "user:u1@offline")
    assert response.json() == (await user.get("/tasks")).json()["t-u1"]


async def test_task_by_json_body(u1_task: Running) -> None:
    response = await (await u1_task.user()).request("GET", "/task", json={"task_id": "t-u1"})

    assert response.status_code == 200
    check_record(response.json(), "t-u1", "user:u1@offline")


@shared
@pytest.mark.parametrize(
    ("kwargs", "status", "detail"),
    [
        ({}, 400, "task_id is required"),
        ({"json": {}}, 400, "task_id is required"),
        ({"json": {"task_id": 7}}, 400, "task_id must be a string"),
        ({"json": {"task_id": None}}, 400, "task_id is required"),
        ({"json": {"task_id": "nope"}}, 404, "task 'nope' not found"),
        ({"params": {"task_id": "nope"}}, 404, "task 'nope' not found"),
        ({"content": b"{oops"}, 400, None),
    ],
    ids=["nothing", "empty-body", "int", "null", "unknown-body", "unknown-query", "bad-json"],
)
async def test_task_errors(
    shared_offline: Running, kwargs: dict[str, object], status: int, detail: str | None
) -> None:
    response = await (await shared_offline.user()).request("GET", "/task", **kwargs)  # type: ignore[arg-type]

    assert response.status_code == status
    if detail is None:
        assert response.json()["detail"].startswith("error parsing request")
    else:
        assert response.json() == {"detail": detail}


@shared
@pytest.mark.parametrize("path", ["/tasks", "/task?task_id=t-u1"])
async def test_tasks_need_admin_or_user(shared_offline: Running, path: str) -> None:
    anon = await (await shared_offline.anon()).get(path)
    agent = await (await shared_offline.agent()).get(path)

    assert (anon.status_code, anon.json()) == (401, {"detail": "no API key provided"})
    assert (agent.status_code, agent.json()) == (
        401,
        {"detail": "invalid role: this route needs admin or user"},
    )


async def test_another_user_cannot_see_or_resume_the_task(u1_task: Running) -> None:
    other = await u1_task.user2()
    not_found = {"detail": "task 't-u1' not found"}

    task = await other.get("/task", params={"task_id": "t-u1"})
    events = await other.get("/tasks/t-u1/events")
    resume = await other.post(
        "/message", json={"body": "and 2+2?", "task_id": "t-u1", "resume_from": "user_response"}
    )
    listing = await other.get("/tasks")

    assert (task.status_code, task.json()) == (404, not_found)
    assert (events.status_code, events.json()) == (404, not_found)
    assert (resume.status_code, resume.json()) == (404, not_found)
    assert "t-u1" not in listing.json()
    # and u1's task is untouched
    mine = (await (await u1_task.user()).get("/task", params={"task_id": "t-u1"})).json()
    assert mine["state"] == "completed"
    assert "2+2" not in json.dumps(mine["events"])


async def test_two_users_may_use_the_same_task_id(u1_task: Running) -> None:
    other = await u1_task.user2()

    response = await other.post("/message", json={"body": "what is 2+2?", "task_id": "t-u1"})

    assert response.status_code == 200
    assert "4" in response.json()["response"]
    theirs = (await other.get("/task", params={"task_id": "t-u1"})).json()
    assert theirs["task_owner"] == "user:u2@offline"
    mine = (await (await u1_task.user()).get("/task", params={"task_id": "t-u1"})).json()
    assert mine["task_owner"] == "user:u1@offline"
    assert "42" in json.loads(mine["events"][-1]["data"])["description"]
