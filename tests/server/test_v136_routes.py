"""v1.3.6's module-level route functions (``mail.server.whoami(request)``, ...): each
answers what its HTTP route answers, called with a real request of the running app."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi import FastAPI, HTTPException
from starlette.requests import Request
from starlette.types import Message
from tests.server.conftest import Running, shared

import mail.server

pytestmark = pytest.mark.timeout(30)


def _request(
    app: FastAPI, method: str, path: str, key: str | None = None, body: Any = None
) -> Request:
    """A request of ``app`` as the server would hand a route, with ``key`` as bearer."""
    content = b"" if body is None else json.dumps(body).encode()
    headers = [(b"content-type", b"application/json")]
    if key is not None:
        headers.append((b"authorization", f"Bearer {key}".encode()))
    scope = {
        "type": "http",
        "app": app,
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "scheme": "http",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
        "http_version": "1.1",
    }

    async def receive() -> Message:
        return {"type": "http.request", "body": content, "more_body": False}

    return Request(scope, receive)


@shared
async def test_whoami_and_status_answer_as_the_routes(shared_offline: Running) -> None:
    user = await shared_offline.user()
    app = shared_offline.app

    assert (
        await mail.server.whoami(_request(app, "GET", "/whoami", "user-key"))
        == (await user.get("/whoami")).json()
    )
    status = await mail.server.status(_request(app, "GET", "/status", "user-key"))
    assert status.keys() == (await user.get("/status")).json().keys()


@shared
async def test_a_refused_request_raises_the_routes_status(shared_offline: Running) -> None:
    anon = await shared_offline.anon()
    expected = await anon.get("/whoami")

    with pytest.raises(HTTPException) as refused:
        await mail.server.whoami(_request(shared_offline.app, "GET", "/whoami"))

    assert refused.value.status_code == expected.status_code == 401
    assert refused.value.detail == expected.json()["detail"]
    user = await shared_offline.user()
    not_admin = await user.post("/health", json={"status": "down"})
    with pytest.raises(HTTPException) as wrong_role:
        await mail.server.health_post(
            _request(shared_offline.app, "POST", "/health", "user-key", {"status": "down"})
        )
    assert wrong_role.value.status_code == not_admin.status_code
    assert wrong_role.value.detail == not_admin.json()["detail"]


async def test_message_then_get_task_and_get_tasks(offline: Running) -> None:
    user = await offline.user()
    app = offline.app
    body = {"body": "what is 6*7?", "task_id": "t-v136"}

    answer = await mail.server.message(_request(app, "POST", "/message", "user-key", body))

    assert answer["task_id"] == "t-v136"
    task = await mail.server.get_task(
        _request(app, "GET", "/task", "user-key", {"task_id": "t-v136"})
    )
    assert task == (await user.request("GET", "/task", json={"task_id": "t-v136"})).json()
    tasks = await mail.server.get_tasks(_request(app, "GET", "/tasks", "user-key"))
    assert tasks == (await user.get("/tasks")).json()
    with pytest.raises(HTTPException) as theirs:
        await mail.server.get_task(
            _request(app, "GET", "/task", "user2-key", {"task_id": "t-v136"})
        )
    assert theirs.value.status_code == 404


async def test_lifespan_runs_the_apps_state(offline: Running) -> None:
    app = mail.server.create_app(offline.state.config, authenticator=offline.auth)

    async with mail.server.lifespan(app):
        assert app.state.mail.template.name == offline.state.template.name


def test_logger_is_the_servers() -> None:
    assert mail.server.logger.name == "mail.server"
