"""``POST /message`` and ``/chat`` as JSON: answers, events, every validation error, limits,
and failed tasks (CONTRACT 1.5, 14, 15.7)."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.server.conftest import (
    Running,
    Start,
    gated_swarm,
    make_config,
    scripted_template,
    shared,
)

from mail.testing import ScriptedAgent, tc

pytestmark = pytest.mark.timeout(30)

_SSE_OBJECT_KEYS = {"data", "event", "id", "retry", "comment", "_sep"}
_DATA_KEYS = {"timestamp", "description", "task_id", "extra_data"}


@shared
async def test_offline_swarm_answers_arithmetic(shared_offline: Running) -> None:
    response = await (await shared_offline.user()).post("/message", json={"body": "what is 6*7?"})

    assert response.status_code == 200
    body = response.json()
    assert "42" in body["response"]
    assert body["events"] is None
    assert body["status"] == "completed"
    assert uuid.UUID(body["task_id"])


async def test_subject_defaults_and_task_id_is_echoed(offline: Running) -> None:
    user = await offline.user()

    default = (
        await user.post("/message", json={"body": "what is 2+3?", "show_events": True})
    ).json()
    named = (
        await user.post(
            "/message",
            json={
                "body": "what is 2+3?",
                "subject": "Sums",
                "task_id": "my-task-1",
                "show_events": True,
            },
        )
    ).json()

    first = default["events"][0]["data"]["extra_data"]["full_message"]["message"]
    assert first["subject"] == "New Message"
    assert first["sender"] == {"address_type": "user", "address": "u1"}
    assert named["task_id"] == "my-task-1"
    assert named["events"][0]["data"]["extra_data"]["full_message"]["message"]["subject"] == "Sums"
    assert {e["data"]["task_id"] for e in named["events"]} == {"my-task-1"}


@shared
async def test_show_events_returns_sse_objects_with_contiguous_ids(shared_offline: Running) -> None:
    response = await (await shared_offline.user()).post(
        "/message", json={"body": "what is 6*7?", "show_events": True}
    )

    body = response.json()
    events = body["events"]
    assert len(events) >= 12
    for event in events:
        assert set(event) == _SSE_OBJECT_KEYS
        assert set(event["data"]) == _DATA_KEYS
        assert event["retry"] is None
        assert event["comment"] is None
        assert event["_sep"] == "\r\n"
        assert event["data"]["task_id"] == body["task_id"]
        assert isinstance(event["data"]["extra_data"], dict)
    assert [e["id"] for e in events] == [str(i) for i in range(1, len(events) + 1)]
    assert events[0]["event"] == "new_message"
    assert events[-1]["event"] == "task_complete"
    assert events[-1]["data"]["description"] == f"response: '{body['response']}'"


@shared
@pytest.mark.parametrize("entrypoint", ["nosuch", "math"])
async def test_entrypoint_must_be_an_entrypoint_agent(
    shared_offline: Running, entrypoint: str
) -> None:
    response = await (await shared_offline.user()).post(
        "/message", json={"body": "what is 6*7?", "entrypoint": entrypoint}
    )

    assert response.status_code == 400
    assert response.json() == {
        "detail": f"entrypoint: '{entrypoint}' is not an entrypoint of swarm offline; use one of supervisor"
    }


@shared
async def test_explicit_entrypoint_is_accepted(shared_offline: Running) -> None:
    response = await (await shared_offline.user()).post(
        "/message", json={"body": "what is 6*7?", "entrypoint": " supervisor "}
    )

    assert response.status_code == 200
    assert "42" in response.json()["response"]


@shared
@pytest.mark.parametrize(
    ("payload", "detail"),
    [
        ({"body": "x", "msg_type": 3}, "msg_type must be a string, got int"),
        ({"body": "x", "msg_type": "bogus"}, "invalid message type: bogus"),
        (
            {"body": "x", "msg_type": "response"},
            "msg_type 'response' cannot be sent to /message; use request or broadcast",
        ),
        (
            {"body": "x", "msg_type": "interrupt"},
            "msg_type 'interrupt' cannot be sent to /message; use request or broadcast",
        ),
        ({}, "no message provided"),
        ({"body": ""}, "no message provided"),
        ({"body": 5}, "body must be a string, got int"),
        ({"body": "x", "subject": ["a"]}, "subject must be a string, got list"),
        ({"body": "x", "stream": "yes"}, 'stream must be true or false, got "yes"'),
        ({"body": "x", "show_events": 1}, "show_events must be true or false, got 1"),
        ({"body": "x", "kwargs": [1]}, "kwargs must be an object, got list"),
        (
            {"body": "x", "kwargs": {"subject": "s"}},
            "kwargs may not contain subject: send them as top-level fields",
        ),
        (
            {"body": "x", "kwargs": {"task_id": "t", "stream": True}},
            "kwargs may not contain stream, task_id: send them as top-level fields",
        ),
        (
            {"body": "x", "kwargs": {"timeout": -1}},
            "kwargs.timeout must be a positive number of seconds, got -1",
        ),
        (
            {"body": "x", "kwargs": {"timeout": "soon"}},
            'kwargs.timeout must be a positive number of seconds, got "soon"',
        ),
        (
            {"body": "x", "kwargs": {"max_steps": 0}},
            "kwargs.max_steps: must be a positive integer or null",
        ),
        (
            {"body": "x", "resume_from": "bogus"},
            "resume_from must be 'user_response', 'breakpoint_tool_call' or null, got \"bogus\"",
        ),
    ],
    ids=lambda v: None if isinstance(v, str) else repr(v)[:40],
)
async def test_bad_message_fields_are_400(
    shared_offline: Running, payload: dict[str, object], detail: str
) -> None:
    response = await (await shared_offline.user()).post("/message", json=payload)

    assert response.status_code == 400
    assert response.json() == {"detail": detail}


@shared
async def test_malformed_json_is_400(shared_offline: Running) -> None:
    response = await (await shared_offline.user()).post(
        "/message", content=b"{bad", headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 400
    assert response.json()["detail"].startswith("error parsing request")


@shared
@pytest.mark.parametrize(("raw", "kind"), [(b"[1, 2]", "list"), (b'"hi"', "str"), (b"7", "int")])
async def test_body_that_is_not_an_object_is_400(
    shared_offline: Running, raw: bytes, kind: str
) -> None:
    response = await (await shared_offline.user()).post("/message", content=raw)

    assert response.status_code == 400
    assert response.json() == {
        "detail": f"error parsing request: expected a JSON object, got {kind}"
    }


@shared
@pytest.mark.parametrize(
    ("who", "detail"),
    [("anon", "no API key provided"), ("agent", "invalid role: this route needs admin or user")],
)
async def test_malformed_json_without_a_valid_caller_is_401(
    shared_offline: Running, who: str, detail: str
) -> None:
    # FastAPI parses the body before the caller dependency runs; the caller still comes first
    client = await (shared_offline.anon() if who == "anon" else shared_offline.agent())

    response = await client.post(
        "/message", content=b"{bad", headers={"Content-Type": "application/json"}
    )

    assert (response.status_code, response.json()) == (401, {"detail": detail})


@shared
async def test_a_json_object_of_another_media_type_is_400(shared_offline: Running) -> None:
    response = await (await shared_offline.user()).post(
        "/message", content=b'{"body": "hi"}', headers={"Content-Type": "text/plain"}
    )

    assert response.status_code == 400
    assert response.json() == {"detail": "error parsing request: send the body as application/json"}


@shared
async def test_every_problem_of_a_body_is_named(shared_offline: Running) -> None:
    response = await (await shared_offline.user()).post(
        "/message", json={"body": 5, "stream": "yes"}
    )

    assert response.status_code == 400
    assert response.json() == {
        "detail": 'body must be a string, got int; stream must be true or false, got "yes"'
    }


@shared
async def test_resuming_an_unknown_task_is_404(shared_offline: Running) -> None:
    response = await (await shared_offline.user()).post(
        "/message", json={"body": "more", "task_id": "nope", "resume_from": "user_response"}
    )

    assert response.status_code == 404
    assert response.json() == {"detail": "task 'nope' not found"}


async def test_reusing_a_finished_task_id_without_resume_from_is_409(offline: Running) -> None:
    user = await offline.user()
    first = await user.post("/message", json={"body": "what is 6*7?", "task_id": "t-reuse"})
    assert first.status_code == 200

    again = await user.post("/message", json={"body": "what is 1+1?", "task_id": "t-reuse"})

    assert again.status_code == 409
    assert "resume_from" in again.json()["detail"]
    assert "t-reuse" in again.json()["detail"]


async def test_follow_up_with_user_response_continues_the_task(offline: Running) -> None:
    user = await offline.user()
    first = await user.post("/message", json={"body": "what is 6*7?", "task_id": "t-multi"})
    assert first.status_code == 200

    second = await user.post(
        "/message",
        json={"body": "what is 10+5?", "task_id": "t-multi", "resume_from": "user_response"},
    )

    assert second.status_code == 200
    assert second.json()["task_id"] == "t-multi"
    assert "15" in second.json()["response"]
    assert "42" not in second.json()["response"]  # not the previous turn's answer (15.1)


async def test_message_role_and_token_checks(offline: Running) -> None:
    agent, anon = await offline.agent(), await offline.anon()
    payload = {"body": "what is 6*7?"}

    as_agent = await agent.post("/message", json=payload)
    as_anon = await anon.post("/message", json=payload)

    assert (as_agent.status_code, as_agent.json()) == (
        401,
        {"detail": "invalid role: this route needs admin or user"},
    )
    assert (as_anon.status_code, as_anon.json()) == (401, {"detail": "no API key provided"})
    assert len(offline.state.swarms) == 0  # nothing was built for them


async def test_admin_may_send_messages(offline: Running) -> None:
    response = await (await offline.admin()).post(
        "/message", json={"body": "what is 6*7?", "show_events": True}
    )

    assert response.status_code == 200
    sender = response.json()["events"][0]["data"]["extra_data"]["full_message"]["message"]
    assert sender["sender"] == {"address_type": "admin", "address": "admin1"}


@shared
async def test_chat_alias_accepts_message_field(shared_offline: Running) -> None:
    response = await (await shared_offline.user()).post("/chat", json={"message": "what is 6*7?"})

    assert response.status_code == 200
    assert "42" in response.json()["response"]
    assert response.json()["status"] == "completed"


@shared
async def test_chat_needs_an_admin_or_user_token(shared_offline: Running) -> None:
    payload = {"message": "what is 6*7?"}

    anon = await (await shared_offline.anon()).post("/chat", json=payload)
    agent = await (await shared_offline.agent()).post("/chat", json=payload)

    assert (anon.status_code, anon.json()) == (401, {"detail": "no API key provided"})
    assert (agent.status_code, agent.json()) == (
        401,
        {"detail": "invalid role: this route needs admin or user"},
    )


# --- body size --------------------------------------------------------------------------------


@pytest.fixture
async def small_bodies(start: Start, tmp_path: Path) -> Running:
    return await start(make_config(tmp_path, max_body_bytes=2048))


async def test_oversized_body_is_413(small_bodies: Running) -> None:
    user = await small_bodies.user()

    response = await user.post("/message", json={"body": "x" * 4096})

    assert response.status_code == 413
    assert response.json() == {"detail": "request body is larger than 2048 bytes"}
    assert len(small_bodies.state.swarms) == 0
    ok = await user.post("/message", json={"body": "what is 6*7?"})
    assert ok.status_code == 200


async def test_oversized_chunked_body_is_413(small_bodies: Running) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"body": "'
        for _ in range(8):
            yield b"y" * 512
        yield b'"}'

    response = await (await small_bodies.user()).post(
        "/message", content=chunks(), headers={"Content-Type": "application/json"}
    )

    assert "content-length" not in response.request.headers
    assert response.status_code == 413
    assert response.json() == {"detail": "request body is larger than 2048 bytes"}


# --- failed tasks -----------------------------------------------------------------------------


async def test_failing_agent_gives_a_failed_task_not_a_healthy_answer(start: Start) -> None:
    boom = RuntimeError("boom")
    supervisor = ScriptedAgent(
        [boom, boom], rule=lambda _m: tc("task_complete", finish_message="all good")
    )
    server = await start(template=scripted_template({"supervisor": supervisor}))

    response = await (await server.user()).post(
        "/message", json={"body": "hello", "show_events": True}
    )

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "failed"
    assert "all good" not in body["response"]
    assert re.search(r"error|fail", body["response"], re.IGNORECASE)
    assert "boom" in body["response"]
    names = [e["event"] for e in body["events"]]
    assert "task_error" in names
    assert "task_complete" not in names
    task = (await (await server.user()).get("/task", params={"task_id": body["task_id"]})).json()
    assert task["state"] == "failed"
    assert task["is_running"] is False


async def test_timeout_fails_the_task_with_a_clear_answer(start: Start) -> None:
    gate = asyncio.Event()
    template, _worker = gated_swarm(gate)
    server = await start(template=template)
    try:
        response = await (await server.user()).post(
            "/message", json={"body": "job", "task_id": "t-slow", "kwargs": {"timeout": 0.2}}
        )
    finally:
        gate.set()  # let the worker finish so the server stops promptly

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "failed"
    assert "timed out" in body["response"]
    assert "done:" not in body["response"]
