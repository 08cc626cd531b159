"""mail.server.auth: embedded keys, the remote exchange (against a real loopback service),
bearer parsing and the FastAPI gate."""

from __future__ import annotations

import asyncio
import json
import logging
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse

from mail.config import AuthConfig
from mail.errors import (
    AuthenticationError,
    AuthServiceError,
    ConfigurationError,
    MAILError,
    PermissionDeniedError,
    http_status_for,
)
from mail.server.auth import (
    ROLES,
    UI_DEV_CALLER,
    Authenticator,
    AuthGate,
    Caller,
    EmbeddedAuth,
    RemoteAuth,
    bearer_token,
    build_authenticator,
)
from mail.testing import FakeAuthService, StaticAuth

pytestmark = pytest.mark.timeout(20)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def credentials_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "credentials.json"


# --- embedded ------------------------------------------------------------------------------


def test_embedded_creates_private_file_with_three_roles(credentials_path: Path) -> None:
    auth, created = EmbeddedAuth.load_or_create(credentials_path)

    assert created is True
    assert _mode(credentials_path) == 0o600
    assert _mode(credentials_path.parent) == 0o700
    data = json.loads(credentials_path.read_text(encoding="utf-8"))
    assert data["version"] == 1
    assert [(k["role"], k["id"]) for k in data["keys"]] == [(r, r) for r in ROLES]
    for entry in data["keys"]:
        assert entry["key"].startswith(f"mail-{entry['role']}-")
        assert len(entry["key"]) > len("mail-admin-") + 40
        assert auth.key_for(entry["role"]) == entry["key"]
    assert len({k["key"] for k in data["keys"]}) == 3
    assert [p.name for p in credentials_path.parent.iterdir()] == ["credentials.json"]


def test_embedded_banner_shows_every_key_and_the_path(credentials_path: Path) -> None:
    auth, _ = EmbeddedAuth.load_or_create(credentials_path)

    banner = auth.banner()

    assert str(credentials_path.absolute()) in banner
    for role in ROLES:
        assert auth.key_for(role) in banner
        assert role in banner


def test_embedded_reload_reads_the_same_keys(credentials_path: Path) -> None:
    first, _ = EmbeddedAuth.load_or_create(credentials_path)

    again, created = EmbeddedAuth.load_or_create(credentials_path)
    reader = EmbeddedAuth(credentials_path, create=False)

    assert created is False
    for role in ROLES:
        assert again.key_for(role) == first.key_for(role) == reader.key_for(role)


async def test_embedded_each_role_key_authenticates_to_that_role(credentials_path: Path) -> None:
    auth, _ = EmbeddedAuth.load_or_create(credentials_path)

    for role in ROLES:
        key = auth.key_for(role)
        caller = await auth.authenticate(key)
        assert caller == Caller(role=role, id=role, api_key=key)
        assert key not in repr(caller)


@pytest.mark.parametrize("presented", ["", "nope", "mail-admin-", "Bearer x", "\udcff"])
async def test_embedded_rejects_unknown_keys(credentials_path: Path, presented: str) -> None:
    auth, _ = EmbeddedAuth.load_or_create(credentials_path)

    with pytest.raises(AuthenticationError, match=r"^invalid API key$"):
        await auth.authenticate(presented)


async def test_embedded_rejects_a_key_differing_in_one_character(credentials_path: Path) -> None:
    auth, _ = EmbeddedAuth.load_or_create(credentials_path)
    key = auth.key_for("admin")
    tampered = key[:-1] + ("A" if key[-1] != "A" else "B")

    with pytest.raises(AuthenticationError):
        await auth.authenticate(tampered)


def test_embedded_restricts_a_group_readable_file(
    credentials_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    EmbeddedAuth.load_or_create(credentials_path)
    credentials_path.chmod(0o644)

    with caplog.at_level(logging.WARNING, logger="mail.server.auth"):
        EmbeddedAuth(credentials_path)

    assert _mode(credentials_path) == 0o600
    [record] = [r for r in caplog.records if r.name == "mail.server.auth"]
    assert record.levelno == logging.WARNING
    assert "0600" in record.getMessage()


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        "",
        "[]",
        '{"version": 2, "keys": []}',
        '{"version": 1}',
        '{"version": 1, "keys": {}}',
        '{"version": 1, "keys": ["k"]}',
        '{"version": 1, "keys": [{"role": "root", "id": "x", "key": "k"}]}',
        '{"version": 1, "keys": [{"role": "user", "id": "", "key": "k"}]}',
        '{"version": 1, "keys": [{"role": "user", "id": "u", "key": ""}]}',
        '{"version": 1, "keys": [{"role": "user", "id": "u", "key": 5}]}',
        '{"version": 1, "keys": [{"role": "user", "id": "u", "key": "k"},'
        ' {"role": "admin", "id": "a", "key": "k"}]}',
    ],
)
def test_embedded_corrupt_file_is_a_configuration_error(
    credentials_path: Path, content: str
) -> None:
    credentials_path.parent.mkdir(mode=0o700)
    credentials_path.write_text(content, encoding="utf-8")
    credentials_path.chmod(0o600)

    with pytest.raises(ConfigurationError) as caught:
        EmbeddedAuth.load_or_create(credentials_path)

    assert str(credentials_path) in str(caught.value)
    assert credentials_path.read_text(encoding="utf-8") == content  # never regenerated


def test_embedded_missing_file_without_create_is_a_configuration_error(
    credentials_path: Path,
) -> None:
    with pytest.raises(ConfigurationError, match="no credentials file"):
        EmbeddedAuth(credentials_path, create=False)
    assert not credentials_path.exists()


async def test_embedded_add_key_persists(credentials_path: Path) -> None:
    auth, _ = EmbeddedAuth.load_or_create(credentials_path)

    key = auth.add_key("user", "alice")

    assert key.startswith("mail-user-")
    assert await auth.authenticate(key) == Caller(role="user", id="alice", api_key=key)
    reloaded = EmbeddedAuth(credentials_path, create=False)
    assert (await reloaded.authenticate(key)).id == "alice"
    assert reloaded.key_for("user") == auth.key_for("user") != key  # the id "user" key wins
    assert _mode(credentials_path) == 0o600
    with pytest.raises(ConfigurationError):
        auth.add_key("user", "")


def test_embedded_key_for_a_role_without_keys(credentials_path: Path) -> None:
    credentials_path.parent.mkdir(mode=0o700)
    credentials_path.write_text('{"version": 1, "keys": []}', encoding="utf-8")
    credentials_path.chmod(0o600)
    auth = EmbeddedAuth(credentials_path)

    with pytest.raises(ConfigurationError, match="no API key for role 'agent'"):
        auth.key_for("agent")


async def test_embedded_never_logs_keys(
    credentials_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    auth, _ = EmbeddedAuth.load_or_create(credentials_path)
    keys = [auth.key_for(role) for role in ROLES]

    for key in keys:
        await auth.authenticate(key)
        with pytest.raises(AuthenticationError):
            await auth.authenticate(key + "x")
        with pytest.raises(AuthenticationError):
            await auth.authenticate(key[:-1])

    assert caplog.records  # the rejections were logged...
    for key in keys:
        assert key not in caplog.text  # ...without the key


async def test_build_authenticator_embedded_banner_only_on_creation(tmp_path: Path) -> None:
    config = AuthConfig(credentials_file=str(tmp_path / "creds.json"))

    first, banner = build_authenticator(config)
    second, again = build_authenticator(config)

    assert isinstance(first, EmbeddedAuth)
    assert banner is not None
    assert first.key_for("admin") in banner
    assert again is None
    assert isinstance(second, EmbeddedAuth)
    assert second.key_for("admin") == first.key_for("admin")


async def test_build_authenticator_remote(tmp_path: Path) -> None:
    config = AuthConfig(
        auth_endpoint="http://127.0.0.1:9/login",
        token_info_endpoint="http://127.0.0.1:9/token-info",
        credentials_file=str(tmp_path / "creds.json"),
    )

    auth, banner = build_authenticator(config)

    assert isinstance(auth, RemoteAuth)
    assert banner is None
    assert not (tmp_path / "creds.json").exists()
    await auth.aclose()


# --- remote --------------------------------------------------------------------------------

USERS: dict[str, tuple[str, str]] = {
    "key-admin": ("admin", "root"),
    "key-user": ("user", "alice"),
    "key-agent": ("agent", "swarm-b"),
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def auth_service() -> AsyncIterator[FakeAuthService]:
    async with FakeAuthService(USERS) as service:
        yield service


@pytest.fixture
def auth_clock() -> FakeClock:
    return FakeClock()


MakeRemote = Callable[..., RemoteAuth]


@pytest.fixture
async def make_remote_auth(
    auth_service: FakeAuthService, auth_clock: FakeClock
) -> AsyncIterator[MakeRemote]:
    made: list[RemoteAuth] = []

    def make(**kwargs: Any) -> RemoteAuth:
        kwargs.setdefault("clock", auth_clock)
        kwargs.setdefault("timeout", 5.0)
        auth = RemoteAuth(auth_service.auth_endpoint, auth_service.token_info_endpoint, **kwargs)
        made.append(auth)
        return auth

    yield make
    for auth in made:
        await auth.aclose()


async def test_remote_success(auth_service: FakeAuthService, make_remote_auth: MakeRemote) -> None:
    auth = make_remote_auth()

    for key, (role, id_) in USERS.items():
        assert await auth.authenticate(key) == Caller(role=role, id=id_, api_key=key)  # type: ignore[arg-type]

    assert auth_service.calls == {"login": 3, "token_info": 3}


async def test_remote_uses_token_info_api_key(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote
) -> None:
    auth_service.token_info_body = b'{"role": "user", "id": "alice", "api_key": "canonical"}'
    without_key = make_remote_auth(cache_seconds=0)

    assert (await without_key.authenticate("key-user")).api_key == "canonical"
    auth_service.token_info_body = b'{"role": "user", "id": "alice"}'
    assert (await without_key.authenticate("key-user")).api_key == "key-user"


async def test_remote_login_401_is_invalid_api_key(make_remote_auth: MakeRemote) -> None:
    auth = make_remote_auth()

    with pytest.raises(AuthenticationError, match=r"^invalid API key$"):
        await auth.authenticate("unknown")


async def test_remote_token_info_401_is_invalid_token(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote
) -> None:
    auth_service.token_info_status = 401
    auth = make_remote_auth()

    with pytest.raises(AuthenticationError, match=r"^invalid token$"):
        await auth.authenticate("key-user")


@pytest.mark.parametrize("status", [500, 403, 404, 302])
async def test_remote_login_failure_is_a_service_error(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote, status: int
) -> None:
    auth_service.login_status = status
    auth = make_remote_auth()

    with pytest.raises(
        AuthServiceError, match=r"^failed to authenticate user or agent with API key$"
    ) as caught:
        await auth.authenticate("key-user")
    assert http_status_for(caught.value) == 500  # the contract's status (CONTRACT §1.2)
    assert auth_service.calls["token_info"] == 0


async def test_remote_token_info_500_is_a_service_error(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote
) -> None:
    auth_service.token_info_status = 500
    auth = make_remote_auth()

    with pytest.raises(AuthServiceError, match=r"^failed to get token info$"):
        await auth.authenticate("key-user")


async def test_remote_timeout_is_a_service_error(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote
) -> None:
    auth_service.delay = 10.0
    auth = make_remote_auth(timeout=0.2)

    with pytest.raises(AuthServiceError, match="failed to authenticate") as caught:
        await auth.authenticate("key-user")
    assert isinstance(caught.value.__cause__, TimeoutError)


async def test_remote_unreachable_service_is_a_service_error() -> None:
    async with FakeAuthService(USERS) as service:
        pass  # closed: its port now refuses connections
    auth = RemoteAuth(service.auth_endpoint, service.token_info_endpoint, timeout=2.0)
    try:
        with pytest.raises(AuthServiceError, match="failed to authenticate"):
            await auth.authenticate("key-user")
    finally:
        await auth.aclose()


@pytest.mark.parametrize(
    ("endpoint", "body"),
    [
        ("login", b"<html>oops</html>"),
        ("login", b"[1, 2]"),
        ("login", b'{"token": ""}'),
        ("login", b'{"jwt": "x"}'),
        ("token_info", b"not json"),
        ("token_info", b'"a string"'),
        ("token_info", b'{"role": "root", "id": "x", "api_key": "k"}'),
        ("token_info", b'{"role": "user", "id": "", "api_key": "k"}'),
        ("token_info", b'{"role": "user", "id": 7, "api_key": "k"}'),
        ("token_info", b'{"id": "x"}'),
    ],
)
async def test_remote_malformed_answers_are_service_errors(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote, endpoint: str, body: bytes
) -> None:
    setattr(auth_service, f"{endpoint}_body", body)
    auth = make_remote_auth()

    with pytest.raises(AuthServiceError):
        await auth.authenticate("key-user")


async def test_remote_bad_role_from_users_is_a_service_error(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote
) -> None:
    auth_service.users["key-root"] = ("root", "someone")
    auth = make_remote_auth()

    with pytest.raises(AuthServiceError, match=r"^failed to get token info$"):
        await auth.authenticate("key-root")


async def test_remote_caches_within_the_window(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote, auth_clock: FakeClock
) -> None:
    auth = make_remote_auth(cache_seconds=30.0)

    first = await auth.authenticate("key-user")
    auth_clock.now += 29.9
    second = await auth.authenticate("key-user")
    assert second == first
    assert auth_service.calls == {"login": 1, "token_info": 1}

    auth_clock.now += 0.2  # past the window
    assert await auth.authenticate("key-user") == first
    assert auth_service.calls == {"login": 2, "token_info": 2}


async def test_remote_cache_disabled_with_zero_seconds(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote
) -> None:
    auth = make_remote_auth(cache_seconds=0)

    await auth.authenticate("key-user")
    await auth.authenticate("key-user")

    assert auth_service.calls["login"] == 2


async def test_remote_cache_is_bounded_oldest_first(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote
) -> None:
    auth = make_remote_auth(max_cache_entries=2)

    for key in ("key-admin", "key-user", "key-agent"):  # key-admin is evicted
        await auth.authenticate(key)
    await auth.authenticate("key-agent")
    await auth.authenticate("key-user")
    assert auth_service.calls["login"] == 3
    await auth.authenticate("key-admin")
    assert auth_service.calls["login"] == 4


async def test_remote_failures_are_not_cached(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote
) -> None:
    auth = make_remote_auth()

    with pytest.raises(AuthenticationError):
        await auth.authenticate("key-new")
    auth_service.users["key-new"] = ("user", "newcomer")
    assert (await auth.authenticate("key-new")).id == "newcomer"

    auth_service.login_status = 500
    with pytest.raises(AuthServiceError):
        await auth.authenticate("key-admin")
    auth_service.login_status = None
    assert (await auth.authenticate("key-admin")).role == "admin"


async def test_remote_concurrent_lookups_share_one_exchange(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote
) -> None:
    auth = make_remote_auth()

    callers = await asyncio.gather(*(auth.authenticate("key-user") for _ in range(20)))

    assert auth_service.calls == {"login": 1, "token_info": 1}
    assert set(callers) == {Caller(role="user", id="alice", api_key="key-user")}


async def test_remote_concurrent_failures_share_one_exchange(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote
) -> None:
    auth_service.login_status = 500
    auth = make_remote_auth()

    results = await asyncio.gather(
        *(auth.authenticate("key-user") for _ in range(20)), return_exceptions=True
    )

    assert all(isinstance(r, AuthServiceError) for r in results)
    assert auth_service.calls["login"] == 1


async def test_remote_cancelled_waiter_does_not_cancel_the_shared_exchange(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote
) -> None:
    auth_service.hold = asyncio.Event()
    auth = make_remote_auth()
    first = asyncio.create_task(auth.authenticate("key-user"))
    second = asyncio.create_task(auth.authenticate("key-user"))
    await auth_service.received.wait()

    first.cancel()
    auth_service.hold.set()

    assert (await second).id == "alice"
    assert first.cancelled()
    assert auth_service.calls == {"login": 1, "token_info": 1}


async def test_remote_external_session_is_left_open(auth_service: FakeAuthService) -> None:
    async with aiohttp.ClientSession() as session:
        auth = RemoteAuth(
            auth_service.auth_endpoint, auth_service.token_info_endpoint, session=session
        )
        assert (await auth.authenticate("key-agent")).role == "agent"
        await auth.aclose()
        await auth.aclose()  # idempotent
        assert not session.closed
        # the documented detail, nothing about the server's state (CONTRACT 1.2)
        with pytest.raises(AuthServiceError, match=r"^failed to authenticate user or agent"):
            await auth.authenticate("key-agent")


async def test_remote_never_logs_keys_or_tokens(
    auth_service: FakeAuthService, make_remote_auth: MakeRemote, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    auth = make_remote_auth(cache_seconds=0)

    await auth.authenticate("key-user")
    with pytest.raises(AuthenticationError):
        await auth.authenticate("key-unknown")
    auth_service.token_info_status = 401
    with pytest.raises(AuthenticationError):
        await auth.authenticate("key-admin")
    auth_service.token_info_status = 500
    with pytest.raises(AuthServiceError):
        await auth.authenticate("key-agent")

    assert caplog.records
    secrets_seen = [*USERS, "key-unknown", *auth_service.tokens]
    assert len(auth_service.tokens) == 3
    for secret in secrets_seen:
        assert secret not in caplog.text


# --- bearer parsing ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (None, "no API key provided"),
        ("", "invalid API key format"),
        ("Basic dXNlcjpwYXNz", "invalid API key format"),
        ("bearer abc", "invalid API key format"),
        ("Bearerabc", "invalid API key format"),
        ("Bearer ", "invalid API key format"),
        ("Bearer    ", "invalid API key format"),
    ],
)
def test_bearer_token_errors(header: str | None, message: str) -> None:
    with pytest.raises(AuthenticationError) as caught:
        bearer_token(header)
    assert str(caught.value) == message


def test_bearer_token_returns_the_key() -> None:
    assert bearer_token("Bearer mail-user-abc") == "mail-user-abc"


# --- the FastAPI gate ----------------------------------------------------------------------

GATE_KEYS = {"k-admin": ("admin", "root"), "k-user": ("user", "alice"), "k-agent": ("agent", "b")}


def _gate_app(gate: AuthGate) -> FastAPI:
    app = FastAPI()

    @app.exception_handler(MAILError)
    async def mail_error(request: Request, exc: MAILError) -> JSONResponse:
        return JSONResponse(
            {"detail": str(exc), "error": type(exc).__name__}, status_code=http_status_for(exc)
        )

    people = gate.require("admin", "user")
    anyone = gate.require("admin", "user", "agent")

    @app.get("/both")
    async def both(
        first: Caller = Depends(people),
        second: Caller = Depends(anyone),
    ) -> dict[str, Any]:
        return {"role": first.role, "id": first.id, "same": first == second}

    @app.get("/agent")
    async def agent_only(caller: Caller = Depends(gate.require("agent"))) -> dict[str, Any]:  # noqa: B008
        return {"id": caller.id}

    @app.get("/ui")
    async def ui(caller: Caller = Depends(gate.require_ui())) -> dict[str, Any]:  # noqa: B008
        return {"role": caller.role, "id": caller.id, "dev": caller is UI_DEV_CALLER}

    return app


def _client(app: FastAPI, host: str = "10.0.0.5") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(host, 123))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_gate_authenticates_once_per_request() -> None:
    static = StaticAuth(GATE_KEYS)  # type: ignore[arg-type]
    async with _client(_gate_app(AuthGate(static))) as client:
        response = await client.get("/both", headers=_bearer("k-user"))

    assert response.status_code == 200
    assert response.json() == {"role": "user", "id": "alice", "same": True}
    assert static.calls == 1


async def test_gate_wrong_role_is_permission_denied() -> None:
    static = StaticAuth(GATE_KEYS)  # type: ignore[arg-type]
    async with _client(_gate_app(AuthGate(static))) as client:
        agent_on_people = await client.get("/both", headers=_bearer("k-agent"))
        admin_on_agent = await client.get("/agent", headers=_bearer("k-admin"))
        agent_on_agent = await client.get("/agent", headers=_bearer("k-agent"))

    needs = {agent_on_people: "admin or user", admin_on_agent: "agent"}
    for response, roles in needs.items():
        assert response.status_code == 401
        assert response.json() == {
            "detail": f"invalid role: this route needs {roles}",
            "error": PermissionDeniedError.__name__,
        }
    assert agent_on_agent.json() == {"id": "b"}


@pytest.mark.parametrize(
    ("headers", "detail"),
    [
        ({}, "no API key provided"),
        ({"Authorization": "Token k-user"}, "invalid API key format"),
        ({"Authorization": "Bearer nope"}, "invalid API key"),
    ],
)
async def test_gate_authentication_errors(headers: dict[str, str], detail: str) -> None:
    static = StaticAuth(GATE_KEYS)  # type: ignore[arg-type]
    async with _client(_gate_app(AuthGate(static))) as client:
        response = await client.get("/both", headers=headers)

    assert response.status_code == 401
    assert response.json() == {"detail": detail, "error": "AuthenticationError"}


async def test_gate_auth_service_failure_is_500(auth_service: FakeAuthService) -> None:
    auth_service.login_status = 502
    remote = RemoteAuth(auth_service.auth_endpoint, auth_service.token_info_endpoint)
    try:
        async with _client(_gate_app(AuthGate(remote))) as client:
            response = await client.get("/both", headers=_bearer("key-user"))
    finally:
        await remote.aclose()

    assert response.status_code == 500  # the contract's status (CONTRACT §1.2)
    assert response.json()["error"] == "AuthServiceError"


async def test_gate_over_remote_auth_costs_one_exchange_per_key(
    auth_service: FakeAuthService,
) -> None:
    remote = RemoteAuth(auth_service.auth_endpoint, auth_service.token_info_endpoint)
    try:
        async with _client(_gate_app(AuthGate(remote))) as client:
            responses = await asyncio.gather(
                *(client.get("/both", headers=_bearer("key-admin")) for _ in range(5))
            )
            responses.append(await client.get("/both", headers=_bearer("key-admin")))
    finally:
        await remote.aclose()

    assert [r.json()["id"] for r in responses] == ["root"] * 6
    assert auth_service.calls == {"login": 1, "token_info": 1}


@pytest.mark.parametrize(
    ("debug", "host", "headers", "expected"),
    [
        (True, "127.0.0.1", {}, {"role": "user", "id": "ui-dev-user", "dev": True}),
        (True, "::1", {}, {"role": "user", "id": "ui-dev-user", "dev": True}),
        (True, "127.0.0.1", _bearer("k-admin"), {"role": "admin", "id": "root", "dev": False}),
        (True, "127.0.0.1", _bearer("nope"), 401),
        (True, "127.0.0.1", _bearer("k-agent"), 401),
        (True, "10.0.0.5", {}, 401),
        (True, "testclient", {}, 401),
        (False, "127.0.0.1", {}, 401),
        (False, "10.0.0.5", _bearer("k-user"), {"role": "user", "id": "alice", "dev": False}),
    ],
)
async def test_gate_ui_dev_identity_only_for_debug_loopback_without_header(
    debug: bool, host: str, headers: dict[str, str], expected: dict[str, Any] | int
) -> None:
    static = StaticAuth(GATE_KEYS)  # type: ignore[arg-type]
    async with _client(_gate_app(AuthGate(static, debug=debug)), host=host) as client:
        response = await client.get("/ui", headers=headers)

    if isinstance(expected, int):
        assert response.status_code == expected
    else:
        assert response.status_code == 200
        assert response.json() == expected
    if expected == {"role": "user", "id": "ui-dev-user", "dev": True}:
        assert static.calls == 0


def test_gate_require_rejects_bad_roles() -> None:
    gate = AuthGate(StaticAuth({}))
    with pytest.raises(ValueError, match="roles"):
        gate.require()
    with pytest.raises(ValueError, match="roles"):
        gate.require("root")  # type: ignore[arg-type]


# --- doubles -------------------------------------------------------------------------------


async def test_static_auth_is_an_authenticator() -> None:
    static: Authenticator = StaticAuth({"k": ("agent", "peer")})

    assert await static.authenticate("k") == Caller(role="agent", id="peer", api_key="k")
    with pytest.raises(AuthenticationError, match=r"^invalid API key$"):
        await static.authenticate("other")
    await static.aclose()


def test_import_mail_testing_stays_cheap() -> None:
    code = (
        "import sys, mail.testing; "
        "print(','.join(m for m in ('aiohttp', 'fastapi', 'mail.server') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    )
    assert result.stdout.strip() == ""
