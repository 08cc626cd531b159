"""The server's own authentication, end to end: remote mode against a real loopback auth
service (:class:`FakeAuthService`) and the embedded credentials file (CONTRACT 1.2, 15.13)."""

from __future__ import annotations

import json
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.server.conftest import Running, Start, make_config

from mail.testing import FakeAuthService

pytestmark = pytest.mark.timeout(30)

USERS = {
    "alice-key": ("user", "alice"),
    "bob-key": ("user", "bob"),
    "root-key": ("admin", "root"),
    "peer-key": ("agent", "peer"),
}


@pytest.fixture
async def auth_service() -> AsyncIterator[FakeAuthService]:
    async with FakeAuthService(USERS) as service:
        yield service


@pytest.fixture
async def remote(start: Start, tmp_path: Path, auth_service: FakeAuthService) -> Running:
    config = make_config(
        tmp_path,
        auth={
            "auth_endpoint": auth_service.auth_endpoint,
            "token_info_endpoint": auth_service.token_info_endpoint,
        },
    )
    assert config.auth.mode == "remote"
    return await start(config, authenticator=None)


async def test_remote_whoami_with_a_valid_key(remote: Running) -> None:
    response = await (await remote.client("alice-key")).get("/whoami")

    assert response.status_code == 200
    assert response.json() == {"id": "alice", "role": "user", "username": "alice"}
    assert not (Path(remote.state.config.server.data_dir) / "credentials.json").exists()


async def test_remote_unknown_key_is_401(remote: Running, auth_service: FakeAuthService) -> None:
    response = await (await remote.client("nobody-key")).get("/whoami")

    assert (response.status_code, response.json()) == (401, {"detail": "invalid API key"})
    assert auth_service.calls["login"] == 1
    assert auth_service.calls["token_info"] == 0


async def test_remote_wrong_role_is_401(remote: Running) -> None:
    response = await (await remote.client("peer-key")).get("/whoami")

    assert (response.status_code, response.json()) == (
        401,
        {"detail": "invalid role: this route needs admin or user"},
    )


LOGIN_FAILED = {"detail": "failed to authenticate user or agent with API key"}
INFO_FAILED = {"detail": "failed to get token info"}


async def test_remote_login_failure_is_500_with_the_documented_detail(
    remote: Running, auth_service: FakeAuthService, caplog: pytest.LogCaptureFixture
) -> None:
    """CONTRACT 1.2: a login answer other than 200 or 401 is a 500 whose body says nothing
    internal; the cause is in the log."""
    auth_service.login_status = 502

    response = await (await remote.client("alice-key")).get("/whoami")

    assert (response.status_code, response.json()) == (500, LOGIN_FAILED)
    assert "answered HTTP 502" in caplog.text


async def test_remote_token_info_failure_is_500_with_the_documented_detail(
    remote: Running, auth_service: FakeAuthService, caplog: pytest.LogCaptureFixture
) -> None:
    auth_service.token_info_status = 500

    response = await (await remote.client("alice-key")).get("/whoami")

    assert (response.status_code, response.json()) == (500, INFO_FAILED)
    assert "answered HTTP 500" in caplog.text


async def test_remote_failures_are_not_cached(
    remote: Running, auth_service: FakeAuthService
) -> None:
    client = await remote.client("alice-key")
    auth_service.login_status = 500
    assert (await client.get("/whoami")).status_code == 500

    auth_service.login_status = None

    assert (await client.get("/whoami")).status_code == 200


async def test_remote_service_down_is_500_with_the_documented_detail(
    remote: Running, auth_service: FakeAuthService, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint = auth_service.auth_endpoint
    await auth_service.close()

    response = await (await remote.client("alice-key")).get("/whoami")

    assert (response.status_code, response.json()) == (500, LOGIN_FAILED)
    assert f"POST {endpoint} failed" in caplog.text  # the cause, for the operator


async def test_remote_lookups_are_cached_across_messages(
    remote: Running, auth_service: FakeAuthService
) -> None:
    client = await remote.client("alice-key")

    for i in range(10):
        response = await client.post("/message", json={"body": f"what is {i}+1?"})
        assert response.status_code == 200
        assert str(i + 1) in response.json()["response"]

    assert auth_service.calls["login"] == 1
    assert auth_service.calls["token_info"] == 1


async def test_remote_keys_are_distinct_callers(remote: Running) -> None:
    alice, bob = await remote.client("alice-key"), await remote.client("bob-key")
    await alice.post("/message", json={"body": "what is 6*7?", "task_id": "t-alice"})

    theirs = await bob.get("/task", params={"task_id": "t-alice"})
    mine = await alice.get("/task", params={"task_id": "t-alice"})

    assert theirs.status_code == 404
    assert mine.json()["task_owner"] == "user:alice@offline"


# --- embedded --------------------------------------------------------------------------------


async def test_embedded_default_creates_private_credentials(
    start: Start, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    server = await start(make_config(tmp_path), authenticator=None)

    path = tmp_path / "credentials.json"
    assert path.is_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    keys = {k["role"]: k["key"] for k in json.loads(path.read_text(encoding="utf-8"))["keys"]}
    assert set(keys) == {"admin", "user", "agent"}
    banner = capfd.readouterr().err
    assert "MAIL API keys" in banner
    assert str(path) in banner

    user, admin, agent = (
        await server.client(keys["user"]),
        await server.client(keys["admin"]),
        await server.client(keys["agent"]),
    )
    assert (await user.get("/whoami")).json() == {"id": "user", "role": "user", "username": "user"}
    assert (await admin.get("/whoami")).json()["role"] == "admin"
    assert (await admin.post("/health", json={"status": "busy"})).status_code == 200
    assert (await agent.get("/whoami")).json() == {
        "detail": "invalid role: this route needs admin or user"
    }
    answer = await user.post("/message", json={"body": "what is 6*7?"})
    assert "42" in answer.json()["response"]
    nobody = await server.client("mail-user-nope")
    assert (await nobody.get("/whoami")).status_code == 401


async def test_embedded_keys_survive_a_restart(
    start: Start, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    await start(make_config(tmp_path), authenticator=None)
    path = tmp_path / "credentials.json"
    before = path.read_text(encoding="utf-8")
    capfd.readouterr()

    again = await start(make_config(tmp_path), authenticator=None)

    assert path.read_text(encoding="utf-8") == before
    assert "MAIL API keys" not in capfd.readouterr().err  # the banner is shown once
    key = next(k["key"] for k in json.loads(before)["keys"] if k["role"] == "user")
    assert (await (await again.client(key)).get("/whoami")).status_code == 200
