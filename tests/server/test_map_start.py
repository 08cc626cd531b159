"""``mail/create`` with ``startTask`` and conversations following their task's state, on a
real server over SQLite and PostgreSQL: the initial turn is the intercepted message,
``paused`` mirrors a breakpoint, a failed or cancelled task makes the conversation
``failed`` (R8), with their events on ``GET /map/events``."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.db.conftest import postgres_admin_url, postgres_url
from tests.server.conftest import (
    Running,
    Start,
    ask_human_action,
    gated_swarm,
    make_config,
    scripted_template,
)
from tests.server.test_map_events import subscribe, take
from tests.server.test_map_rpc import rpc
from tests.server.test_map_send import sent_message_ids, turns

from mail.config import MAILConfig
from mail.testing import ScriptedAgent, tc

__all__ = ["postgres_admin_url", "postgres_url"]  # the fixtures the PostgreSQL runs use

pytestmark = pytest.mark.timeout(60)

BACKENDS = pytest.mark.parametrize("backend", ["sqlite", "postgres"])


def config_for(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest, **server: Any
) -> MAILConfig:
    """The test configuration on SQLite in ``tmp_path`` or on the test PostgreSQL database
    (skipped, with the reason, without ``MAIL_TEST_POSTGRES_URL``)."""
    if backend == "postgres":
        server["database"] = {"url": request.getfixturevalue("postgres_url")}
    return make_config(tmp_path, **server)


def unique(prefix: str) -> str:
    """A task id no other test uses (the PostgreSQL database is shared by the session)."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def hello(text: str = "hello", **turn: Any) -> dict[str, Any]:
    return {"contentType": "text", "content": {"text": text}, **turn}


async def started(user: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    answer = await rpc(user, "mail/create", {"startTask": True, "initialTurn": hello(), **params})
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


@BACKENDS
async def test_start_task_sends_the_initial_turn_and_binds_the_task(
    start: Start, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    running = await start(config_for(tmp_path, backend, request))
    user = await running.user()
    sid = await subscribe(user, {"eventTypes": ["mail.turn.added"]})
    expected = (await user.post("/message", json={"body": "hello"})).json()["response"]
    created = await started(user, subject="weather")
    task, conv, initial = created["task"], created["conversation"], created["initialTurn"]
    assert task["status"] == "completed" and task["response"] == expected
    assert (conv["taskId"], conv["status"], conv["subject"]) == (
        task["taskId"],
        "active",
        "weather",
    )
    assert created["participant"]["role"] == "initiator"
    # the initial turn is the intercepted message: one turn for one message
    assert initial["source"] == {
        "type": "intercepted",
        "messageId": sent_message_ids(running, task["taskId"])[0],
    }
    assert (initial["participantId"], initial["content"]["text"]) == ("user:u1", "hello")
    recorded = await turns(user, conv["id"])
    assert recorded[0] == initial
    assert [t for t in recorded if t["participantId"] == "user:u1"] == [initial]
    assert len(recorded) > 1  # the agents' turns too: the task runs bound
    async with user.stream("GET", f"/map/events?subscription={sid}") as stream:
        (first,) = await take(stream, 1)
    assert first["event"]["data"]["turn"] == initial
    stored = await user.get("/task", params={"task_id": task["taskId"]})
    assert stored.status_code == 200


async def test_start_task_with_a_task_id_and_a_visibility(offline: Running) -> None:
    user = await offline.user()
    task_id = unique("chosen")
    created = await started(
        user, taskId=task_id, initialTurn=hello("just me", visibility={"type": "private"})
    )
    assert created["task"]["taskId"] == created["conversation"]["taskId"] == task_id
    assert created["initialTurn"]["visibility"] == {"type": "private"}
    again = await rpc(
        user, "mail/create", {"startTask": True, "taskId": task_id, "initialTurn": hello()}
    )
    error = again["error"]
    assert error["code"] == -32602 and "already exists" in error["message"]


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"startTask": True}, "needs an initialTurn"),
        ({"startTask": True, "initialTurn": {"contentType": "data", "content": {}}}, "text"),
        ({"startTask": True, "initialTurn": hello("  ")}, "non-empty"),
        ({"startTask": True, "initialTurn": hello(threadId="thread-1")}, "threadId"),
        ({"startTask": "yes", "initialTurn": hello()}, "true or an object"),
        ({"startTask": {"agent": "x"}, "initialTurn": hello()}, "only entrypoint"),
        ({"startTask": True, "initialTurn": hello(), "taskId": 5}, "taskId"),
    ],
)
async def test_bad_start_task_params_are_invalid_params(
    offline: Running, params: dict[str, Any], says: str
) -> None:
    user = await offline.user()
    error = (await rpc(user, "mail/create", params))["error"]
    assert error["code"] == -32602 and says in error["message"], error
    listed = (await rpc(user, "mail/list", {}))["result"]["conversations"]
    assert listed == []  # nothing was created


async def test_a_refused_task_fails_its_new_conversation(offline: Running) -> None:
    user = await offline.user()
    refused = await user.post("/message", json={"body": "hello", "entrypoint": "nobody"})
    answer = await rpc(
        user,
        "mail/create",
        {"startTask": {"entrypoint": "nobody"}, "initialTurn": hello()},
    )
    error = answer["error"]
    assert error["code"] == -32000 and error["data"]["name"] == "TASK_NOT_STARTED"
    assert error["data"]["status"] == refused.status_code == 400  # as POST /message answers
    assert "nobody" in error["message"]
    cid = error["data"]["conversationId"]
    conv = (await rpc(user, "mail/get", {"conversationId": cid}))["result"]["conversation"]
    assert conv["status"] == "failed" and "did not start" in conv["closeReason"]


async def test_mail_off_refuses_start_task(start: Start, tmp_path: Path) -> None:
    running = await start(make_config(tmp_path, map={"enabled": False}))
    user = await running.user()
    error = (await rpc(user, "mail/create", {"startTask": True, "initialTurn": hello()}))["error"]
    assert error["code"] == 10010


# --- status following (R8) -----------------------------------------------------------------


def breakpoint_template() -> Any:
    """A supervisor that asks the human on every turn: the task pauses, resumes, pauses."""
    supervisor = ScriptedAgent(
        rule=lambda _incoming: tc("ask_human", call_id=unique("bp"), question="name?")
    )
    return scripted_template(
        {"supervisor": supervisor}, breakpoint_tools=["ask_human"], actions=[ask_human_action()]
    )


STATUS_EVENTS = {"eventTypes": ["x-mail.status.changed", "mail.closed"]}


@BACKENDS
async def test_paused_follows_a_breakpoint_and_cancel_fails(
    start: Start, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    running = await start(config_for(tmp_path, backend, request), template=breakpoint_template())
    user = await running.user()
    sid = await subscribe(user, STATUS_EVENTS)
    created = await started(user, taskId=unique("bp"))
    task_id, cid = created["task"]["taskId"], created["conversation"]["id"]
    assert created["task"]["status"] == "waiting_breakpoint"
    assert created["conversation"]["status"] == "paused"
    assert json.loads(created["task"]["response"])[0]["name"] == "ask_human"
    resumed = await user.post(
        "/message",
        json={
            "task_id": task_id,
            "resume_from": "breakpoint_tool_call",
            "kwargs": {"breakpoint_tool_call_result": "Ada"},
        },
    )
    assert resumed.json()["status"] == "waiting_breakpoint", resumed.text  # asks again
    cancelled = await user.post(f"/tasks/{task_id}/cancel")
    assert cancelled.status_code == 200
    async with user.stream("GET", f"/map/events?subscription={sid}") as stream:
        events = await take(stream, 4)
    assert [(e["event"]["type"], e["event"]["data"].get("status")) for e in events] == [
        ("x-mail.status.changed", "paused"),
        ("x-mail.status.changed", "active"),
        ("x-mail.status.changed", "paused"),
        ("mail.closed", "failed"),
    ]
    assert events[0]["event"]["data"] == {
        "conversationId": cid,
        "status": "paused",
        "previousStatus": "active",
        "taskId": task_id,
    }
    assert events[3]["event"]["data"] == {
        "conversationId": cid,
        "closedBy": "system",
        "reason": f"task {task_id!r} was cancelled",
        "status": "failed",
    }
    conv = (await rpc(user, "mail/get", {"conversationId": cid}))["result"]["conversation"]
    assert (conv["status"], conv["closedBy"]) == ("failed", "system")
    refused = await rpc(
        user, "mail/turn", {"conversationId": cid, "contentType": "text", "content": {}}
    )
    assert refused["error"]["code"] == 10001


async def test_a_task_that_fails_fails_its_conversation(start: Start) -> None:
    gate_never_opens = asyncio.Event()
    template, _ = gated_swarm(gate_never_opens)
    running = await start(template=template)
    user = await running.user()
    task_id = unique("slow")
    cid = (await rpc(user, "mail/create", {"taskId": task_id}))["result"]["conversation"]["id"]
    sid = await subscribe(user, {"eventTypes": ["mail.closed"]})
    answer = await user.post(
        "/message", json={"body": "work", "task_id": task_id, "kwargs": {"timeout": 0.2}}
    )
    assert answer.json()["status"] == "failed"
    async with user.stream("GET", f"/map/events?subscription={sid}") as stream:
        (closed,) = await take(stream, 1)
    assert closed["event"]["data"]["reason"] == f"task {task_id!r} failed"
    got = (await rpc(user, "mail/get", {"conversationId": cid}))["result"]["conversation"]
    assert got["status"] == "failed"
    gate_never_opens.set()  # the worker's turn ends with the test


async def test_a_completed_task_leaves_its_conversation_active(offline: Running) -> None:
    user = await offline.user()
    created = await started(user)
    follow = await user.post(
        "/message",
        json={
            "body": "more",
            "task_id": created["task"]["taskId"],
            "resume_from": "user_response",
        },
    )
    assert follow.json()["status"] == "completed"
    await offline.state.map_status.drain()  # type: ignore[union-attr]
    cid = created["conversation"]["id"]
    conv = (await rpc(user, "mail/get", {"conversationId": cid}))["result"]["conversation"]
    assert conv["status"] == "active"
