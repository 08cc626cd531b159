"""``/ui/*``: bearer auth in production, the loopback development identity in debug mode,
``/ui/message`` streaming by default and refusing bad input, ``/ui/dump-events`` writing the
caller's own events into the data directory, for admins only outside debug mode (CONTRACT
1.3, 1.5, decision 5; security 15.10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.server.conftest import Running, Start, make_config, read_stream, shared

from mail.api import MAILAgentTemplate, MAILSwarmTemplate
from mail.testing import ScriptedAgent

pytestmark = pytest.mark.timeout(30)

UI_GETS = ["/ui/agents", "/ui/tasks", "/ui/task/t-ui", "/ui/task-summary/t-ui", "/ui/dump-events"]


@pytest.fixture
async def with_task(offline: Running) -> Running:
    response = await (await offline.user()).post(
        "/message", json={"body": "what is 6*7?", "task_id": "t-ui"}
    )
    assert response.status_code == 200
    return offline


@pytest.fixture
async def debug_server(start: Start, tmp_path: Path) -> Running:
    return await start(make_config(tmp_path, debug=True))


@shared
@pytest.mark.parametrize("path", [*UI_GETS, "/ui/message"])
async def test_ui_routes_need_a_token_without_debug(shared_offline: Running, path: str) -> None:
    anon = await shared_offline.anon()

    response = await (
        anon.post(path, json={"body": "hi"}) if path == "/ui/message" else anon.get(path)
    )

    assert response.status_code == 401
    assert response.json() == {"detail": "no API key provided"}


@shared
@pytest.mark.parametrize("path", [*UI_GETS, "/ui/message"])
async def test_ui_routes_refuse_agents(shared_offline: Running, path: str) -> None:
    agent = await shared_offline.agent()

    response = await (
        agent.post(path, json={"body": "hi"}) if path == "/ui/message" else agent.get(path)
    )

    assert (response.status_code, response.json()) == (
        401,
        {"detail": "invalid role: this route needs admin or user"},
    )


@shared
@pytest.mark.parametrize("path", [p for p in UI_GETS if p != "/ui/dump-events"])
async def test_ui_routes_work_with_a_user_token(shared_offline: Running, path: str) -> None:
    user = await shared_offline.user()
    if (await user.get("/task", params={"task_id": "t-ui"})).status_code == 404:
        created = await user.post("/message", json={"body": "what is 6*7?", "task_id": "t-ui"})
        assert created.status_code == 200

    response = await user.get(path)

    assert response.status_code == 200


async def test_ui_agents_shape(offline: Running) -> None:
    response = await (await offline.user()).get("/ui/agents")
    actions = {a.name: a.description for a in offline.state.template.actions}

    assert response.json() == {
        "agents": [
            {
                "name": "supervisor",
                "comm_targets": ["weather", "math"],
                "enable_entrypoint": True,
                "can_complete_tasks": True,
                "enable_interswarm": False,
                "actions": [],
                "prompt": None,
            },
            {
                "name": "weather",
                "comm_targets": ["supervisor"],
                "enable_entrypoint": False,
                "can_complete_tasks": False,
                "enable_interswarm": False,
                "actions": [
                    {"name": "get_weather_forecast", "description": actions["get_weather_forecast"]}
                ],
                "prompt": None,
            },
            {
                "name": "math",
                "comm_targets": ["supervisor"],
                "enable_entrypoint": False,
                "can_complete_tasks": False,
                "enable_interswarm": False,
                "actions": [
                    {"name": "calculate_expression", "description": actions["calculate_expression"]}
                ],
                "prompt": None,
            },
        ],
        "entrypoint": "supervisor",
        "breakpoint_tools": [],
    }


async def test_ui_agents_tell_the_prompt_to_admins_only(start: Start) -> None:
    # the agent's system prompt may be the swarm's secret: users see null
    agent = MAILAgentTemplate(
        "solo",
        lambda **_params: ScriptedAgent(),
        [],
        [],
        {"system": "You answer in haiku."},
        enable_entrypoint=True,
        can_complete_tasks=True,
    )
    running = await start(template=MAILSwarmTemplate("poet", "1.0.0", [agent], [], "solo"))

    as_admin = (await (await running.admin()).get("/ui/agents")).json()
    as_user = (await (await running.user()).get("/ui/agents")).json()

    assert as_admin["agents"][0]["prompt"] == "You answer in haiku."
    assert as_user["agents"][0]["prompt"] is None


async def test_ui_tasks_task_and_summary(with_task: Running) -> None:
    user = await with_task.user()
    await user.post("/message", json={"body": "what is 1+1?", "task_id": "t-ui-2"})

    tasks = (await user.get("/ui/tasks")).json()
    task = (await user.get("/ui/task/t-ui")).json()
    summary = (await user.get("/ui/task-summary/t-ui")).json()

    assert [t["task_id"] for t in tasks] == ["t-ui-2", "t-ui"]  # newest first
    first = tasks[1]
    assert set(first) == {
        "task_id",
        "task_owner",
        "is_running",
        "completed",
        "start_time",
        "event_count",
        "title",
    }
    assert first["task_owner"] == "user:u1@offline"
    assert first["event_count"] == len(task["events"])
    assert first["title"] == "what is 6*7?"
    assert set(task) == {
        "task_id",
        "task_owner",
        "is_running",
        "completed",
        "start_time",
        "title",
        "events",
    }
    assert task["events"][0]["event"] == "new_message"
    assert isinstance(task["events"][0]["data"], dict)  # parsed, unlike /task
    assert summary == {"task_id": "t-ui", "title": "what is 6*7?"}


@pytest.mark.parametrize("path", ["/ui/task/t-ui", "/ui/task-summary/t-ui"])
async def test_ui_task_of_someone_else_is_404(with_task: Running, path: str) -> None:
    response = await (await with_task.user2()).get(path)

    assert response.status_code == 404
    assert response.json() == {"detail": "task 't-ui' not found"}


# --- debug mode ------------------------------------------------------------------------------


async def test_debug_loopback_without_token_is_the_ui_dev_user(debug_server: Running) -> None:
    anon = await debug_server.anon()

    async with anon.stream("POST", "/ui/message", json={"body": "what is 6*7?"}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
        stream = await read_stream(response)
    task_id = stream[-1].data["task_id"]

    assert stream[-1].event == "task_complete"
    assert "42" in stream[-1].data["response"]
    sender = stream[0].data["extra_data"]["full_message"]["message"]["sender"]
    assert sender == {"address_type": "user", "address": "ui-dev-user"}
    tasks = (await anon.get("/ui/tasks")).json()
    assert [(t["task_id"], t["task_owner"]) for t in tasks] == [
        (task_id, "user:ui-dev-user@offline")
    ]
    for path in ("/ui/agents", f"/ui/task/{task_id}", f"/ui/task-summary/{task_id}"):
        assert (await anon.get(path)).status_code == 200, path


KEYLESS = '<meta name="mail-keyless" content="{}">'


async def test_the_page_tells_whether_it_may_come_in_without_a_key(
    debug_server: Running, offline: Running
) -> None:
    debug_page = await (await debug_server.anon()).get("/ui")
    page = await (await offline.anon()).get("/ui/")

    assert debug_page.status_code == page.status_code == 200
    assert KEYLESS.format("true") in debug_page.text
    assert KEYLESS.format("false") in page.text and KEYLESS.format("true") not in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'self'")


async def test_debug_does_not_open_other_routes(debug_server: Running) -> None:
    anon = await debug_server.anon()

    for method, path in (("GET", "/whoami"), ("GET", "/tasks"), ("POST", "/message")):
        response = await anon.request(method, path, json={"body": "hi"})
        assert response.status_code == 401, path


async def test_debug_with_a_token_still_checks_it(debug_server: Running) -> None:
    bad = await debug_server.client("nope")
    user = await debug_server.user()

    rejected = await bad.get("/ui/tasks")
    mine = await user.post("/ui/message", json={"body": "what is 6*7?", "stream": False})

    assert (rejected.status_code, rejected.json()) == (401, {"detail": "invalid API key"})
    assert mine.status_code == 200
    tasks = (await user.get("/ui/tasks")).json()
    assert [t["task_owner"] for t in tasks] == ["user:u1@offline"]
    assert (await (await debug_server.anon()).get("/ui/tasks")).json() == []


async def test_ui_message_without_stream_includes_events(debug_server: Running) -> None:
    """CONTRACT 1.5: a non-streamed /ui/message answer always carries the task's events."""
    response = await (await debug_server.anon()).post(
        "/ui/message", json={"body": "what is 6*7?", "stream": False}
    )

    assert response.status_code == 200
    body = response.json()
    assert "42" in body["response"]
    assert isinstance(body["events"], list)
    assert body["events"]
    assert body["events"][-1]["event"] == "task_complete"


async def test_dump_events_writes_into_the_data_dir(
    debug_server: Running, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    elsewhere = tmp_path_factory.mktemp("cwd")
    monkeypatch.chdir(elsewhere)
    anon = await debug_server.anon()
    await anon.post("/ui/message", json={"body": "what is 6*7?", "stream": False})

    response = await anon.get("/ui/dump-events")

    assert response.status_code == 200
    body = response.json()
    dump = tmp_path / "events_dump.jsonl"
    assert dump.is_file()
    assert list(elsewhere.iterdir()) == []
    assert body["event_count"] == len(body["events"]) > 0
    assert body["message"] == f"Dumped {body['event_count']} events to {dump}"
    lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    assert lines == body["events"]
    for row in lines:
        assert set(row) == {"task_id", "event_type", "event_id", "data"}
    assert [r["event_id"] for r in lines] == list(range(1, len(lines) + 1))


# --- /ui/dump-events: a file written on the server ---------------------------------------------


def dump_file(server: Running) -> Path:
    return Path(server.state.config.server.data_dir) / "events_dump.jsonl"


async def test_dump_events_is_admin_only_outside_debug_mode(with_task: Running) -> None:
    """Decision 5: in production a user may not make the server write a file (the original
    served the route in debug mode only)."""
    user, admin = await with_task.user(), await with_task.admin()

    refused = await user.get("/ui/dump-events")

    assert (refused.status_code, refused.json()) == (
        401,
        {"detail": "invalid role: this route needs admin (or a server in debug mode)"},
    )
    assert not dump_file(with_task).exists()
    mine = await admin.post("/message", json={"body": "what is 2+2?", "task_id": "t-admin"})
    assert mine.status_code == 200

    dumped = await admin.get("/ui/dump-events")

    assert dumped.status_code == 200
    rows = dumped.json()["events"]
    assert {r["task_id"] for r in rows} == {"t-admin"}  # not the user's t-ui
    lines = dump_file(with_task).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == rows


async def test_dump_events_has_only_the_callers_events(debug_server: Running) -> None:
    user, user2 = await debug_server.user(), await debug_server.user2()
    for client, task_id in ((user, "t-mine"), (user2, "t-theirs")):
        answer = await client.post("/message", json={"body": "what is 6*7?", "task_id": task_id})
        assert answer.status_code == 200

    mine = (await user.get("/ui/dump-events")).json()
    theirs = (await user2.get("/ui/dump-events")).json()
    dev = (await (await debug_server.anon()).get("/ui/dump-events")).json()

    assert {r["task_id"] for r in mine["events"]} == {"t-mine"}
    assert {r["task_id"] for r in theirs["events"]} == {"t-theirs"}
    assert (dev["event_count"], dev["events"]) == (0, [])


# --- bad input -------------------------------------------------------------------------------


@shared
@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"body": 42}, "body must be a string, got int"),
        ({"subject": "no body"}, "no message provided"),
        ({"body": "hi", "msg_type": "nope"}, "invalid message type: nope"),
        (
            {"body": "hi", "msg_type": "response"},
            "msg_type 'response' cannot be sent to /message; use request or broadcast",
        ),
        ({"body": "hi", "stream": "yes"}, 'stream must be true or false, got "yes"'),
        (
            {"body": "hi", "resume_from": "later"},
            "resume_from must be 'user_response', 'breakpoint_tool_call' or null, got \"later\"",
        ),
        ({"body": "hi", "kwargs": ["timeout"]}, "kwargs must be an object, got list"),
    ],
)
async def test_ui_message_bad_input_is_400_with_detail(
    shared_offline: Running, body: dict[str, Any], detail: str
) -> None:
    response = await (await shared_offline.user()).post("/ui/message", json=body)

    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"detail": detail}


@shared
async def test_ui_message_malformed_json_is_400(shared_offline: Running) -> None:
    response = await (await shared_offline.user()).post(
        "/ui/message", content=b"{not json", headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 400
    assert response.json()["detail"].startswith("error parsing request: ")


@shared
async def test_ui_message_to_a_non_entrypoint_is_400_not_a_stream(shared_offline: Running) -> None:
    # /ui/message streams by default: the error must still be an HTTP error, not a stream
    user = await shared_offline.user()
    async with user.stream(
        "POST", "/ui/message", json={"body": "hi", "entrypoint": "math"}
    ) as response:
        await response.aread()

    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "detail": "entrypoint: 'math' is not an entrypoint of swarm offline; use one of supervisor"
    }


async def test_task_summary_force_regen_must_be_a_boolean(with_task: Running) -> None:
    user = await with_task.user()

    bad = await user.get("/ui/task-summary/t-ui", params={"force_regen": "sometimes"})
    regenerated = await user.get("/ui/task-summary/t-ui", params={"force_regen": "true"})

    assert bad.status_code == 400
    assert bad.json()["detail"].startswith("query.force_regen: ")
    assert "boolean" in bad.json()["detail"]
    assert regenerated.status_code == 200
    assert regenerated.json() == {"task_id": "t-ui", "title": "what is 6*7?"}
