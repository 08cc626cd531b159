"""``GET /``, ``/health`` (GET and POST), ``/whoami`` and ``/status`` (CONTRACT 1.5, 14)."""

from __future__ import annotations

from datetime import datetime

import pytest
from tests.server.conftest import Running, shared

from mail.version import PROTOCOL_VERSION

pytestmark = pytest.mark.timeout(30)


async def test_root_describes_server_and_swarm(offline: Running) -> None:
    anon = await offline.anon()

    response = await anon.get("/")

    assert response.status_code == 200
    info = response.json()
    uptime = info.pop("uptime")
    assert isinstance(uptime, float)
    assert uptime >= 0
    assert info == {
        "name": "mail",
        "protocol_version": "1.3",
        "version": "1.3",
        "swarm": {
            "name": "offline",
            "version": "1.3.0",
            "description": (
                "Scripted agents, no LLM: weather questions go to 'weather', arithmetic to "
                "'math'; the supervisor combines the answers."
            ),
            "entrypoint": "supervisor",
            "keywords": ["demo", "offline", "weather", "math"],
            "public": True,
            "breakpoint_tools": [],
        },
        "status": "running",
    }
    assert PROTOCOL_VERSION == "1.3"


@shared
async def test_get_health_needs_no_token(shared_offline: Running) -> None:
    response = await (await shared_offline.anon()).get("/health")

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"status", "swarm_name", "timestamp", "storage", "unsaved_tasks"}
    assert body["status"] == "healthy"
    assert body["storage"] == "ok"  # the task store (SQLite in the data directory) works
    assert isinstance(body["unsaved_tasks"], int) and body["unsaved_tasks"] >= 0
    assert body["swarm_name"] == "offline"
    assert body["timestamp"].endswith("+00:00")
    datetime.fromisoformat(body["timestamp"])


async def test_post_health_as_admin_sets_the_status(offline: Running) -> None:
    admin, anon = await offline.admin(), await offline.anon()
    before = (await anon.get("/health")).json()

    response = await admin.post("/health", json={"status": "degraded"})

    assert response.status_code == 200
    assert response.json()["status"] == "degraded"
    after = (await anon.get("/health")).json()
    assert after["status"] == "degraded"
    assert after["swarm_name"] == "offline"
    assert datetime.fromisoformat(after["timestamp"]) >= datetime.fromisoformat(before["timestamp"])


async def test_post_health_answers_as_get_health_does(offline: Running) -> None:
    admin = await offline.admin()

    posted = (await admin.post("/health", json={"status": "maintenance"})).json()

    got = (await admin.get("/health")).json()
    assert posted == got  # storage and unsaved_tasks too, not null
    assert posted["storage"] == "ok"
    assert posted["status"] == "maintenance"


async def test_health_timestamp_is_the_last_change(offline: Running) -> None:
    admin = await offline.admin()
    changed = (await admin.post("/health", json={"status": "healthy"})).json()["timestamp"]

    later = (await admin.get("/health")).json()["timestamp"]

    assert later == changed  # not the time of the answer


@shared
@pytest.mark.parametrize("body", [{}, {"status": ""}, {"status": "   "}, None], ids=repr)
async def test_post_health_without_status_is_400(shared_offline: Running, body: object) -> None:
    admin = await shared_offline.admin()

    response = await (admin.post("/health") if body is None else admin.post("/health", json=body))

    assert response.status_code == 400
    assert response.json() == {"detail": "status is required"}
    assert (await admin.get("/health")).json()["status"] == "healthy"


@shared
async def test_post_health_status_of_wrong_type_is_400(shared_offline: Running) -> None:
    response = await (await shared_offline.admin()).post("/health", json={"status": 3})

    assert response.status_code == 400
    assert response.json() == {"detail": "status must be a string, got int"}


@shared
@pytest.mark.parametrize(
    ("who", "detail"),
    [
        ("user", "invalid role: this route needs admin"),
        ("agent", "invalid role: this route needs admin"),
        ("anon", "no API key provided"),
    ],
)
async def test_post_health_refuses_non_admins(
    shared_offline: Running, who: str, detail: str
) -> None:
    client = await getattr(shared_offline, who)()

    response = await client.post("/health", json={"status": "down"})

    assert response.status_code == 401
    assert response.json() == {"detail": detail}
    assert (await client.get("/health")).json()["status"] == "healthy"


@shared
@pytest.mark.parametrize(("who", "id_"), [("admin", "admin1"), ("user", "u1"), ("user2", "u2")])
async def test_whoami(shared_offline: Running, who: str, id_: str) -> None:
    client = await getattr(shared_offline, who)()

    response = await client.get("/whoami")

    assert response.status_code == 200
    role = "admin" if who == "admin" else "user"
    assert response.json() == {"id": id_, "role": role, "username": id_}


@shared
@pytest.mark.parametrize(
    ("headers", "detail"),
    [
        ({"Authorization": "Bearer agent-key"}, "invalid role: this route needs admin or user"),
        ({}, "no API key provided"),
        ({"Authorization": "user-key"}, "invalid API key format"),
        ({"Authorization": "Basic dXNlcjpwdw=="}, "invalid API key format"),
        ({"Authorization": "Bearer"}, "invalid API key format"),
        ({"Authorization": "Bearer nope"}, "invalid API key"),
    ],
    ids=["agent", "no-token", "no-scheme", "basic", "bare-scheme", "unknown"],
)
async def test_whoami_rejections_are_401(
    shared_offline: Running, headers: dict[str, str], detail: str
) -> None:
    client = await shared_offline.client(headers=headers)

    response = await client.get("/whoami")

    assert response.status_code == 401
    assert response.json() == {"detail": detail}


async def test_status_before_and_after_a_message(offline: Running) -> None:
    user, user2, admin = await offline.user(), await offline.user2(), await offline.admin()

    first = await user.get("/status")

    assert first.status_code == 200
    assert first.json() == {
        "swarm": {"name": "offline", "status": "ready"},
        "active_users": 0,
        "user_mail_ready": False,
        "user_task_running": False,
    }
    assert (await user.post("/message", json={"body": "what is 1+1?"})).status_code == 200
    assert (await admin.post("/message", json={"body": "what is 1+2?"})).status_code == 200
    mine = (await user.get("/status")).json()
    assert mine["user_mail_ready"] is True
    assert mine["user_task_running"] is True
    assert mine["active_users"] == 1  # admins are not users
    other = (await user2.get("/status")).json()
    assert other["user_mail_ready"] is False
    assert other["user_task_running"] is False
    assert other["active_users"] == 1


@shared
@pytest.mark.parametrize(
    ("who", "detail"),
    [("agent", "invalid role: this route needs admin or user"), ("anon", "no API key provided")],
)
async def test_status_refuses_agents_and_anonymous(
    shared_offline: Running, who: str, detail: str
) -> None:
    response = await (await getattr(shared_offline, who)()).get("/status")

    assert response.status_code == 401
    assert response.json() == {"detail": detail}
