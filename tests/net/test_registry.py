"""SwarmRegistry against real peers: tiny aiohttp servers on ``127.0.0.1:0``.

Each :class:`Peer` answers ``GET /`` (the MAIL root shape, or whatever the test sets),
``GET /health`` (status chosen by the test; every hit is queued so a test can wait for
it) and ``GET /swarms``. Health checks are driven by calling them directly, with a clock
the test moves; only the loop test lets the registry's own loop run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from mail.errors import ConfigurationError, RemoteSwarmUnavailableError, StorageError
from mail.net import SwarmEndpoint, SwarmRegistry
from mail.net.registry import HEALTH_TASK_NAME
from mail.version import PROTOCOL_VERSION

LOCAL = "swarm-alpha"
LOCAL_URL = "http://127.0.0.1:9"  # never contacted
WAIT = 10.0
ENDPOINT_KEYS = [
    "swarm_name",
    "base_url",
    "version",
    "health_check_url",
    "auth_token_ref",
    "last_seen",
    "latency",
    "swarm_description",
    "keywords",
    "public",
    "is_active",
    "metadata",
    "volatile",
    "legacy",  # ours: the peer reported no protocol_version (protocol 1.1)
]
FILE_KEYS = [
    "local_swarm_name",
    "local_base_url",
    "local_swarm_description",
    "local_swarm_keywords",
    "local_swarm_public",
    "endpoints",
]


@dataclass
class Peer:
    """A fake MAIL server; change its fields to change its answers."""

    name: str
    description: str = "a test peer"
    keywords: list[str] = field(default_factory=lambda: ["test", "peer"])
    public: bool = True
    root: Any = None  # None: the MAIL root shape
    root_status: int = 200
    redirect: str | None = None  # GET / answers 302 to this URL
    health_status: int = 200
    swarms: list[Any] = field(default_factory=list)
    root_hits: int = 0
    swarms_hits: int = 0
    health_hits: asyncio.Queue[int] = field(default_factory=asyncio.Queue)
    url: str = ""
    runner: web.AppRunner | None = None

    def root_body(self) -> Any:
        if self.root is not None:
            return self.root
        return {
            "name": "mail",
            "protocol_version": PROTOCOL_VERSION,
            "version": PROTOCOL_VERSION,
            "swarm": {
                "name": self.name,
                "version": "1.0.0",
                "description": self.description,
                "entrypoint": "supervisor",
                "keywords": self.keywords,
                "public": self.public,
            },
            "status": "running",
            "uptime": 1.0,
        }

    async def start(self) -> None:
        async def root(_: web.Request) -> web.Response:
            self.root_hits += 1
            if self.redirect is not None:
                raise web.HTTPFound(self.redirect)
            body = self.root_body()
            if isinstance(body, str):
                return web.Response(text=body, status=self.root_status)
            return web.json_response(body, status=self.root_status)

        async def health(_: web.Request) -> web.Response:
            self.health_hits.put_nowait(self.health_status)
            body = {"status": "healthy", "swarm_name": self.name, "timestamp": "2025-01-01"}
            return web.json_response(body, status=self.health_status)

        async def swarms(_: web.Request) -> web.Response:
            self.swarms_hits += 1
            return web.json_response({"swarms": self.swarms})

        app = web.Application()
        app.router.add_get("/", root)
        app.router.add_get("/health", health)
        app.router.add_get("/swarms", swarms)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        host, port = self.runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None


PeerFactory = Callable[..., Awaitable[Peer]]
RegistryFactory = Callable[..., SwarmRegistry]


@pytest.fixture
async def peer() -> AsyncIterator[PeerFactory]:
    started: list[Peer] = []

    async def start(name: str = "swarm-beta", **fields: Any) -> Peer:
        p = Peer(name, **fields)
        await p.start()
        started.append(p)
        return p

    yield start
    for p in started:
        await p.stop()


@pytest.fixture
async def make_registry() -> AsyncIterator[RegistryFactory]:
    made: list[SwarmRegistry] = []

    def make(persistence_file: Path | None = None, **kwargs: Any) -> SwarmRegistry:
        kwargs.setdefault("env", {})
        registry = SwarmRegistry(LOCAL, LOCAL_URL, persistence_file, **kwargs)
        made.append(registry)
        return registry

    yield make
    for registry in made:
        await registry.aclose()


@pytest.fixture
def caplog_registry(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="mail.net.registry")
    return caplog


async def dead_url() -> str:
    """A loopback URL nothing listens on (a peer started, then stopped)."""
    p = Peer("gone")
    await p.start()
    await p.stop()
    return p.url


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


class Clock:
    """A clock the test sets; with ``tick``, every reading also moves it forward."""

    def __init__(self, now: float = 1000.0, tick: float = 0.0) -> None:
        self.now = now
        self.tick = tick

    def __call__(self) -> float:
        now = self.now
        self.now += self.tick
        return now


# --- local swarm -------------------------------------------------------------------------


async def test_local_swarm_is_always_registered_and_healthy(
    make_registry: RegistryFactory,
) -> None:
    registry = make_registry(local_swarm_description="us", local_swarm_public=True)
    local = registry.get_swarm_endpoint(LOCAL)
    assert local is not None
    assert (local.volatile, local.is_active, local.version) == (False, True, PROTOCOL_VERSION)
    assert local.base_url == LOCAL_URL and local.swarm_description == "us"
    assert await registry.check_health(LOCAL) is True
    assert await registry.unregister_swarm(LOCAL) is False
    assert LOCAL in registry.get_public_endpoints()
    assert registry.cleanup_volatile_endpoints() == []
    assert LOCAL in registry


async def test_registering_the_local_name_changes_nothing(
    make_registry: RegistryFactory, peer: PeerFactory
) -> None:
    p = await peer(LOCAL)
    registry = make_registry()
    result = await registry.register_swarm(LOCAL, p.url, auth_token="tok", volatile=False)
    assert result.base_url == LOCAL_URL
    assert p.root_hits == 0
    assert registry.get_resolved_auth_token(LOCAL) is None


# --- registration ------------------------------------------------------------------------


async def test_registration_reads_the_peer_root(
    make_registry: RegistryFactory, peer: PeerFactory
) -> None:
    p = await peer("swarm-beta", description="weather", keywords=["wx"], public=True)
    registry = make_registry()
    endpoint = await registry.register_swarm("swarm-beta", p.url + "/", metadata={"k": 1})
    assert endpoint.base_url == p.url
    assert endpoint.health_check_url == f"{p.url}/health"
    assert endpoint.version == PROTOCOL_VERSION
    assert (endpoint.swarm_description, endpoint.keywords, endpoint.public) == (
        "weather",
        ["wx"],
        True,
    )
    assert endpoint.metadata == {"k": 1}
    assert endpoint.is_active and endpoint.volatile
    assert endpoint.legacy is False
    assert endpoint.last_seen is not None
    assert endpoint.latency is not None and endpoint.latency > 0
    # Routable at once: every reader of the registry sees it.
    assert "swarm-beta" in registry.get_active_endpoints()


async def test_registration_accepts_the_legacy_version_field(
    make_registry: RegistryFactory, peer: PeerFactory
) -> None:
    p = await peer(root={"name": "mail", "status": "running", "version": "1.1.0"})
    endpoint = await make_registry().register_swarm("swarm-beta", p.url)
    assert endpoint.version == "1.1.0"
    assert endpoint.legacy is True
    assert endpoint.swarm_description == "" and endpoint.keywords == []
    assert endpoint.public is False


@pytest.mark.parametrize(
    ("root", "version", "legacy"),
    [
        # no protocol_version: a protocol 1.1 server, whatever its version field says
        ({"name": "mail", "status": "ok", "version": "1.3.6"}, "1.3.6", True),
        ({"name": "mail", "status": "ok", "version": "1.1.0"}, "1.1.0", True),
        # protocol_version is what counts when present
        ({"name": "mail", "protocol_version": "1.3", "version": "1.1.0"}, "1.3", False),
        ({"name": "mail", "protocol_version": "1.1"}, "1.1", True),
    ],
    ids=["no-protocol-new-version", "no-protocol-old-version", "protocol-1.3", "protocol-1.1"],
)
async def test_a_peer_without_protocol_version_is_recorded_as_legacy_across_a_restart(
    make_registry: RegistryFactory,
    peer: PeerFactory,
    tmp_path: Path,
    root: dict[str, Any],
    version: str,
    legacy: bool,
) -> None:
    p = await peer(root=root)
    path = tmp_path / "alpha.json"
    endpoint = await make_registry(path).register_swarm("swarm-beta", p.url, volatile=False)
    assert (endpoint.version, endpoint.legacy) == (version, legacy)
    assert json.loads(path.read_text())["endpoints"]["swarm-beta"]["legacy"] is legacy

    restarted = make_registry(path)
    await restarted.load()
    reloaded = restarted.get_swarm_endpoint("swarm-beta")
    assert reloaded is not None and (reloaded.version, reloaded.legacy) == (version, legacy)


@pytest.mark.parametrize(("version", "legacy"), [("1.1.0", True), ("1.3", False), (None, False)])
def test_a_file_entry_without_legacy_is_decided_by_its_version(
    version: str | None, legacy: bool
) -> None:
    entry = {"swarm_name": "b", "base_url": "http://127.0.0.1:1", "version": version}
    data = {"local_swarm_name": LOCAL, "local_base_url": LOCAL_URL, "endpoints": {"b": entry}}
    registry = SwarmRegistry.from_dict(data, env={})
    endpoint = registry.get_swarm_endpoint("b")
    assert endpoint is not None and endpoint.legacy is legacy


async def test_a_redirect_is_not_followed(
    make_registry: RegistryFactory, peer: PeerFactory
) -> None:
    target = await peer("elsewhere")
    redirecting = await peer("swarm-beta", redirect=f"{target.url}/")
    with pytest.raises(RemoteSwarmUnavailableError, match="HTTP 302"):
        await make_registry().register_swarm("swarm-beta", redirecting.url)
    assert redirecting.root_hits == 1 and target.root_hits == 0


async def test_unreachable_peer_is_unavailable(make_registry: RegistryFactory) -> None:
    url = await dead_url()
    registry = make_registry()
    with pytest.raises(RemoteSwarmUnavailableError, match=url):
        await registry.register_swarm("swarm-beta", url)
    assert registry.get_swarm_endpoint("swarm-beta") is None


@pytest.mark.parametrize(
    ("root", "status"),
    [
        ({"hello": "world"}, 200),
        ({"name": "something-else", "protocol_version": "1.3"}, 200),
        (["not", "an", "object"], 200),
        ("<html>not json</html>", 200),
        (None, 404),
    ],
    ids=["no-version", "not-mail", "list", "html", "http-404"],
)
async def test_non_mail_peer_is_unavailable(
    make_registry: RegistryFactory, peer: PeerFactory, root: Any, status: int
) -> None:
    p = await peer(root=root, root_status=status)
    with pytest.raises(RemoteSwarmUnavailableError, match=p.url):
        await make_registry().register_swarm("swarm-beta", p.url)


@pytest.mark.parametrize("url", ["ftp://example.com", "not a url", "http://"])
async def test_non_http_base_url_is_refused(make_registry: RegistryFactory, url: str) -> None:
    with pytest.raises(RemoteSwarmUnavailableError, match="http"):
        await make_registry().register_swarm("swarm-beta", url)


async def test_empty_name_is_a_configuration_error(make_registry: RegistryFactory) -> None:
    with pytest.raises(ConfigurationError):
        await make_registry().register_swarm("", "http://127.0.0.1:1")


@pytest.mark.parametrize("name", ["../../../x", "${HOME}", ".hidden", "a b", "x" * 65])
async def test_names_outside_the_pattern_are_configuration_errors(
    make_registry: RegistryFactory, name: str
) -> None:
    registry = make_registry()

    with pytest.raises(ConfigurationError, match="swarm name must be 1-64 letters"):
        await registry.register_swarm(name, "http://127.0.0.1:1")
    assert registry.get_swarm_endpoint(name) is None


# --- persistence -------------------------------------------------------------------------


async def test_file_holds_only_persistent_entries_and_token_references(
    make_registry: RegistryFactory,
    peer: PeerFactory,
    tmp_path: Path,
    caplog_registry: pytest.LogCaptureFixture,
) -> None:
    beta, gamma = await peer("swarm-beta"), await peer("gamma")
    path = tmp_path / "registries" / "alpha.json"
    registry = make_registry(path)
    await registry.register_swarm("swarm-beta", beta.url, "beta-SECRET-1", volatile=False)
    await registry.register_swarm("gamma", gamma.url, "gamma-SECRET-2", volatile=True)

    raw = path.read_bytes()
    assert b"beta-SECRET-1" not in raw and b"gamma-SECRET-2" not in raw
    data = json.loads(raw)
    assert list(data) == FILE_KEYS
    assert data["local_swarm_name"] == LOCAL
    assert set(data["endpoints"]) == {LOCAL, "swarm-beta"}
    entry = data["endpoints"]["swarm-beta"]
    assert list(entry) == ENDPOINT_KEYS
    assert entry["auth_token_ref"] == "${SWARM_AUTH_TOKEN_SWARM_BETA}"
    assert entry["volatile"] is False and entry["base_url"] == beta.url
    assert data["endpoints"][LOCAL]["auth_token_ref"] is None
    # Owner-only, and no temporary file left behind.
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _names(path.parent) == ["alpha.json"]
    # Both raw tokens stay in memory: the persistent peer is routable before its variable
    # is set (a warning says to set it), but only the reference reaches the file.
    assert registry.get_resolved_auth_token("gamma") == "gamma-SECRET-2"
    assert registry.get_resolved_auth_token("swarm-beta") == "beta-SECRET-1"
    assert "beta-SECRET-1" not in repr(registry.get_swarm_endpoint("swarm-beta"))
    assert "SWARM_AUTH_TOKEN_SWARM_BETA" in caplog_registry.text
    assert "SECRET" not in caplog_registry.text


async def test_restart_restores_persistent_peers_and_resolves_tokens_from_env(
    make_registry: RegistryFactory, peer: PeerFactory, tmp_path: Path
) -> None:
    beta, gamma = await peer("swarm-beta"), await peer("gamma")
    path = tmp_path / "alpha.json"
    first = make_registry(path)
    await first.register_swarm("swarm-beta", beta.url, "beta-SECRET", volatile=False)
    await first.register_swarm("gamma", gamma.url, "gamma-SECRET")
    await first.aclose()

    env = {"SWARM_AUTH_TOKEN_SWARM_BETA": "beta-SECRET"}
    second = make_registry(path, env=env)
    assert await second.load() == 1
    assert set(second.get_all_endpoints()) == {LOCAL, "swarm-beta"}
    restored = second.get_swarm_endpoint("swarm-beta")
    assert restored is not None and restored.volatile is False
    assert restored.auth_token_ref == "${SWARM_AUTH_TOKEN_SWARM_BETA}"
    assert restored.base_url == beta.url and restored.swarm_description == "a test peer"
    assert second.get_resolved_auth_token("swarm-beta") == "beta-SECRET"
    # The environment is read when the token is needed, not when the file is loaded.
    env["SWARM_AUTH_TOKEN_SWARM_BETA"] = "rotated"
    assert second.get_resolved_auth_token("swarm-beta") == "rotated"
    assert second.validate_environment_variables() == {"SWARM_AUTH_TOKEN_SWARM_BETA": True}


async def test_persistent_peer_registered_with_a_token_is_routable_before_its_variable_is_set(
    make_registry: RegistryFactory, peer: PeerFactory, tmp_path: Path
) -> None:
    beta = await peer("swarm-beta")
    path = tmp_path / "alpha.json"
    env: dict[str, str] = {}
    first = make_registry(path, env=env)
    await first.register_swarm("swarm-beta", beta.url, "beta-SECRET", volatile=False)

    assert first.get_resolved_auth_token("swarm-beta") == "beta-SECRET"
    assert b"beta-SECRET" not in path.read_bytes()
    saved = json.loads(path.read_text())["endpoints"]["swarm-beta"]
    assert saved["auth_token_ref"] == "${SWARM_AUTH_TOKEN_SWARM_BETA}"
    assert "beta-SECRET" not in json.dumps(first.to_dict())
    env["SWARM_AUTH_TOKEN_SWARM_BETA"] = "from-env"  # once set, the variable wins
    assert first.get_resolved_auth_token("swarm-beta") == "from-env"
    del env["SWARM_AUTH_TOKEN_SWARM_BETA"]
    await first.aclose()

    second = make_registry(path, env=env)  # a restart: the token was never on disk
    assert await second.load() == 1
    assert second.get_resolved_auth_token("swarm-beta") is None


async def test_missing_file_loads_nothing(
    make_registry: RegistryFactory, tmp_path: Path, caplog_registry: pytest.LogCaptureFixture
) -> None:
    registry = make_registry(tmp_path / "nope" / "alpha.json")
    assert await registry.load() == 0
    assert "no swarm registry file" in caplog_registry.text
    assert await make_registry(None).load() == 0


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[]",
        '{"endpoints": []}',
        '{"endpoints": {"b": {"swarm_name": "b"}}}',
        '{"endpoints": {"b": {"base_url": "http://x", "keywords": "wx"}}}',
        '{"endpoints": {"b": {"base_url": "http://x", "last_seen": "yesterday"}}}',
        '{"endpoints": {"b": {"swarm_name": "c", "base_url": "http://x"}}}',
    ],
    ids=["json", "list", "endpoints-list", "no-url", "keywords", "last-seen", "name"],
)
async def test_corrupt_file_is_a_configuration_error_naming_it(
    make_registry: RegistryFactory, tmp_path: Path, content: str
) -> None:
    path = tmp_path / "alpha.json"
    path.write_text(content)
    with pytest.raises(ConfigurationError, match=r"alpha\.json"):
        await make_registry(path).load()


async def test_undecodable_file_is_a_configuration_error(
    make_registry: RegistryFactory, tmp_path: Path
) -> None:
    path = tmp_path / "alpha.json"
    path.write_bytes(b"\xff\xfe{")
    with pytest.raises(ConfigurationError, match=r"alpha\.json"):
        await make_registry(path).load()


async def test_file_does_not_override_the_configured_identity(
    make_registry: RegistryFactory, tmp_path: Path, caplog_registry: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "alpha.json"
    path.write_text(
        json.dumps(
            {
                "local_swarm_name": LOCAL,
                "local_base_url": "http://evil.example",
                "local_swarm_description": "from the file",
                "local_swarm_keywords": ["file"],
                "local_swarm_public": True,
                "endpoints": {
                    LOCAL: {"swarm_name": LOCAL, "base_url": "http://evil.example"},
                    "beta": {"base_url": "http://127.0.0.1:1", "auth_token_ref": "${B_TOKEN}"},
                },
            }
        )
    )
    registry = make_registry(path, local_swarm_description="configured")
    assert await registry.load() == 1
    local = registry.get_swarm_endpoint(LOCAL)
    assert local is not None
    assert (local.base_url, local.swarm_description, local.public) == (
        LOCAL_URL,
        "configured",
        False,
    )
    assert local.keywords == []
    assert "configuration wins" in caplog_registry.text
    assert "local_base_url" in caplog_registry.text
    beta = registry.get_swarm_endpoint("beta")
    assert beta is not None and beta.volatile is False
    assert beta.health_check_url == "http://127.0.0.1:1/health"
    assert registry.validate_environment_variables() == {"B_TOKEN": False}


async def test_unregistering_a_persistent_peer_rewrites_the_file(
    make_registry: RegistryFactory, peer: PeerFactory, tmp_path: Path
) -> None:
    beta = await peer("swarm-beta")
    path = tmp_path / "alpha.json"
    registry = make_registry(path)
    await registry.register_swarm("swarm-beta", beta.url, volatile=False)
    assert "swarm-beta" in json.loads(path.read_text())["endpoints"]
    assert await registry.unregister_swarm("swarm-beta") is True
    assert await registry.unregister_swarm("swarm-beta") is False
    assert "swarm-beta" not in json.loads(path.read_text())["endpoints"]


async def test_reregistering_as_volatile_drops_the_peer_from_the_file(
    make_registry: RegistryFactory, peer: PeerFactory, tmp_path: Path
) -> None:
    beta = await peer("swarm-beta")
    path = tmp_path / "alpha.json"
    registry = make_registry(path)
    await registry.register_swarm("swarm-beta", beta.url, volatile=False)
    await registry.register_swarm("swarm-beta", beta.url, "raw-SECRET", volatile=True)
    assert "swarm-beta" not in json.loads(path.read_text())["endpoints"]
    assert registry.get_resolved_auth_token("swarm-beta") == "raw-SECRET"


async def test_failed_save_raises_and_undoes_the_registration(
    make_registry: RegistryFactory,
    peer: PeerFactory,
    tmp_path: Path,
    caplog_registry: pytest.LogCaptureFixture,
) -> None:
    beta = await peer("swarm-beta")
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    registry = make_registry(blocker / "alpha.json")
    with pytest.raises(StorageError, match=r"alpha\.json"):
        await registry.register_swarm("swarm-beta", beta.url, volatile=False)
    assert registry.get_swarm_endpoint("swarm-beta") is None
    assert "could not save" in caplog_registry.text


async def test_failed_replace_leaves_no_temporary_file(
    make_registry: RegistryFactory, tmp_path: Path
) -> None:
    target = tmp_path / "alpha.json"
    target.mkdir()  # os.replace onto a directory fails after the temp file is written
    registry = make_registry(target)
    with pytest.raises(StorageError):
        await registry.save()
    assert _names(tmp_path) == ["alpha.json"]


async def test_failed_unregister_save_restores_the_entry(
    make_registry: RegistryFactory, peer: PeerFactory, tmp_path: Path
) -> None:
    beta = await peer("swarm-beta")
    path = tmp_path / "sub" / "alpha.json"
    registry = make_registry(path)
    await registry.register_swarm("swarm-beta", beta.url, volatile=False)
    path.unlink()
    path.mkdir()  # the next save cannot replace it
    with pytest.raises(StorageError):
        await registry.unregister_swarm("swarm-beta")
    assert registry.get_swarm_endpoint("swarm-beta") is not None


async def test_persistent_registration_without_token_uses_a_set_variable(
    make_registry: RegistryFactory, peer: PeerFactory
) -> None:
    beta, gamma = await peer("swarm-beta"), await peer("my.swarm-2")
    registry = make_registry(env={"SWARM_AUTH_TOKEN_SWARM_BETA": "from-env"})
    beta_ep = await registry.register_swarm("swarm-beta", beta.url, volatile=False)
    assert beta_ep.auth_token_ref == "${SWARM_AUTH_TOKEN_SWARM_BETA}"
    assert registry.get_resolved_auth_token("swarm-beta") == "from-env"
    gamma_ep = await registry.register_swarm("my.swarm-2", gamma.url, volatile=False)
    assert gamma_ep.auth_token_ref is None
    gamma_ep = await registry.register_swarm("my.swarm-2", gamma.url, "t", volatile=False)
    assert gamma_ep.auth_token_ref == "${SWARM_AUTH_TOKEN_MY_SWARM_2}"
    kept = await registry.register_swarm("my.swarm-2", gamma.url, "${OTHER}", volatile=False)
    assert kept.auth_token_ref == "${OTHER}"


async def test_to_dict_and_from_dict_round_trip_without_raw_tokens(
    make_registry: RegistryFactory, peer: PeerFactory
) -> None:
    beta = await peer("swarm-beta")
    registry = make_registry(local_swarm_keywords=["a"])
    await registry.register_swarm("swarm-beta", beta.url, "raw-SECRET", metadata={"m": [1]})
    data = registry.to_dict()
    assert "raw-SECRET" not in json.dumps(data)
    assert data["endpoints"]["swarm-beta"]["auth_token_ref"] == "${SWARM_AUTH_TOKEN_SWARM_BETA}"
    assert "swarm-beta" not in registry.to_dict(include_volatile=False)["endpoints"]

    copy = SwarmRegistry.from_dict(data, env={"SWARM_AUTH_TOKEN_SWARM_BETA": "x"})
    try:
        assert copy.local_swarm_keywords == ["a"]
        restored = copy.get_swarm_endpoint("swarm-beta")
        assert restored is not None and restored.metadata == {"m": [1]}
        assert copy.get_resolved_auth_token("swarm-beta") == "x"
    finally:
        await copy.aclose()
    with pytest.raises(ConfigurationError):
        SwarmRegistry.from_dict({"endpoints": {}})


# --- tokens ------------------------------------------------------------------------------


def _data_with_raw_tokens() -> dict[str, Any]:
    def entry(name: str, token: str | None, volatile: bool) -> dict[str, Any]:
        return {
            "swarm_name": name,
            "base_url": "http://127.0.0.1:1",
            "auth_token_ref": token,
            "volatile": volatile,
        }

    return {
        "local_swarm_name": LOCAL,
        "local_base_url": LOCAL_URL,
        "endpoints": {
            "beta": entry("beta", "beta-SECRET", False),
            "ref-only": entry("ref-only", "${ALREADY_A_REF}", False),
            "vol": entry("vol", "vol-SECRET", True),
        },
    }


async def test_migrate_turns_raw_tokens_into_references(tmp_path: Path) -> None:
    path = tmp_path / "alpha.json"
    env: dict[str, str] = {}
    registry = SwarmRegistry.from_dict(_data_with_raw_tokens(), persistence_file=path, env=env)
    try:
        exported = await registry.migrate_auth_tokens_to_env_refs()
        assert exported == {"SWARM_AUTH_TOKEN_BETA": "beta-SECRET"}
        beta = registry.get_swarm_endpoint("beta")
        assert beta is not None and beta.auth_token_ref == "${SWARM_AUTH_TOKEN_BETA}"
        assert registry.get_resolved_auth_token("vol") == "vol-SECRET"  # volatile: untouched
        assert b"SECRET" not in path.read_bytes()
        assert registry.get_resolved_auth_token("beta") == "beta-SECRET"  # still in memory
        env.update(exported)
        assert registry.get_resolved_auth_token("beta") == "beta-SECRET"
        assert await registry.migrate_auth_tokens_to_env_refs() == {}
        custom = SwarmRegistry.from_dict(_data_with_raw_tokens(), env=env)
        assert await custom.migrate_auth_tokens_to_env_refs(env_var_prefix="PEER") == {
            "PEER_BETA": "beta-SECRET"
        }
        await custom.aclose()
    finally:
        await registry.aclose()


async def test_failed_migration_save_restores_the_raw_tokens(tmp_path: Path) -> None:
    target = tmp_path / "alpha.json"
    target.mkdir()  # the save cannot replace it
    registry = SwarmRegistry.from_dict(_data_with_raw_tokens(), persistence_file=target, env={})
    try:
        with pytest.raises(StorageError):
            await registry.migrate_auth_tokens_to_env_refs()
        beta = registry.get_swarm_endpoint("beta")
        assert beta is not None and beta.auth_token_ref == "beta-SECRET"
        assert beta.memory_token is None
        assert registry.get_resolved_auth_token("beta") == "beta-SECRET"
    finally:
        await registry.aclose()


async def test_validate_environment_variables(caplog_registry: pytest.LogCaptureFixture) -> None:
    registry = SwarmRegistry.from_dict(_data_with_raw_tokens(), env={"ALREADY_A_REF": "x"})
    try:
        assert registry.validate_environment_variables() == {"ALREADY_A_REF": True}
        await registry.migrate_auth_tokens_to_env_refs()
        assert registry.validate_environment_variables() == {
            "SWARM_AUTH_TOKEN_BETA": False,
            "ALREADY_A_REF": True,
        }
        assert "SWARM_AUTH_TOKEN_BETA" in caplog_registry.text
        assert "SECRET" not in caplog_registry.text
    finally:
        await registry.aclose()


async def test_save_writes_a_reference_for_a_raw_token_loaded_from_an_old_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "alpha.json"
    registry = SwarmRegistry.from_dict(_data_with_raw_tokens(), persistence_file=path, env={})
    try:
        await registry.save()
        data = json.loads(path.read_text())
        assert data["endpoints"]["beta"]["auth_token_ref"] == "${SWARM_AUTH_TOKEN_BETA}"
        assert "vol" not in data["endpoints"]
        assert "SECRET" not in path.read_text()
    finally:
        await registry.aclose()


# --- health ------------------------------------------------------------------------------


async def test_health_failure_backs_off_and_recovery_resets(
    make_registry: RegistryFactory, peer: PeerFactory
) -> None:
    clock = Clock(1000.0)
    beta = await peer("swarm-beta")
    registry = make_registry(health_interval=30.0, max_backoff=100.0, clock=clock)
    await registry.register_swarm("swarm-beta", beta.url)
    assert await registry.run_health_checks() == {}  # just contacted: not due yet

    beta.health_status = 503
    assert await registry.check_health("swarm-beta") is False
    down = registry.get_swarm_endpoint("swarm-beta")
    assert down is not None
    assert (down.is_active, down.failures, down.next_check, down.latency) == (
        False,
        1,
        1060.0,
        None,
    )
    assert "swarm-beta" not in registry.get_active_endpoints()
    assert await registry.run_health_checks() == {}  # backing off

    clock.now = 1060.0
    assert await registry.run_health_checks() == {"swarm-beta": False}
    down = registry.get_swarm_endpoint("swarm-beta")
    assert down is not None and (down.failures, down.next_check) == (2, 1160.0)  # capped

    beta.health_status = 200
    clock.now = 1160.0
    assert await registry.run_health_checks() == {"swarm-beta": True}
    up = registry.get_swarm_endpoint("swarm-beta")
    assert up is not None
    assert (up.is_active, up.failures, up.next_check) == (True, 0, 1190.0)
    assert up.latency is not None and up.latency > 0
    assert "swarm-beta" in registry.get_active_endpoints()
    assert await registry.run_health_checks(only_due=False) == {"swarm-beta": True}


async def test_health_check_of_an_unreachable_peer(
    make_registry: RegistryFactory, peer: PeerFactory
) -> None:
    beta = await peer("swarm-beta")
    registry = make_registry()
    await registry.register_swarm("swarm-beta", beta.url)
    seen = registry.get_swarm_endpoint("swarm-beta")
    await beta.stop()
    assert await registry.check_health("swarm-beta") is False
    after = registry.get_swarm_endpoint("swarm-beta")
    assert seen is not None and after is not None
    assert after.is_active is False and after.last_seen == seen.last_seen


async def test_check_health_of_an_unknown_swarm(make_registry: RegistryFactory) -> None:
    with pytest.raises(RemoteSwarmUnavailableError, match="nobody"):
        await make_registry().check_health("nobody")


async def test_one_health_loop_per_registry(
    make_registry: RegistryFactory, peer: PeerFactory
) -> None:
    clock = Clock(0.0, tick=1000.0)  # every round finds every peer due
    beta = await peer("swarm-beta")
    registry = make_registry(health_interval=0.01, clock=clock)
    await registry.register_swarm("swarm-beta", beta.url)
    beta.health_status = 503
    assert await registry.check_health("swarm-beta") is False
    assert await asyncio.wait_for(beta.health_hits.get(), WAIT) == 503
    beta.health_status = 200

    task = registry.start_health_checks()
    assert registry.start_health_checks() is task
    assert task.get_name() == HEALTH_TASK_NAME
    assert sum(t.get_name() == HEALTH_TASK_NAME for t in asyncio.all_tasks()) == 1
    assert await asyncio.wait_for(beta.health_hits.get(), WAIT) == 200
    # A round ends (its results recorded) before the loop sleeps and starts the next one.
    assert await asyncio.wait_for(beta.health_hits.get(), WAIT) == 200
    assert registry.health_checks_running
    endpoint = registry.get_swarm_endpoint("swarm-beta")
    assert endpoint is not None and endpoint.is_active and endpoint.failures == 0
    assert endpoint.latency is not None

    await registry.stop_health_checks()
    assert task.done() and not registry.health_checks_running
    await registry.stop_health_checks()  # idempotent
    restarted = registry.start_health_checks()
    assert restarted is not task
    await registry.aclose()
    assert restarted.done()


# --- discovery ---------------------------------------------------------------------------


async def test_discovery_reads_swarm_name_skips_known_and_survives_failures(
    make_registry: RegistryFactory, peer: PeerFactory
) -> None:
    lister, known, new, legacy = (
        await peer("lister"),
        await peer("known"),
        await peer("new-swarm"),
        await peer("legacy"),
    )
    gone = await dead_url()
    lister.swarms = [
        {"swarm_name": LOCAL, "base_url": "http://127.0.0.1:1"},
        {"swarm_name": "known", "base_url": known.url},
        {"swarm_name": "new-swarm", "base_url": new.url, "metadata": {"region": "eu"}},
        {"name": "legacy", "base_url": legacy.url},
        {"swarm_name": "down", "base_url": gone},
        {"swarm_name": "no-url"},
        "garbage",
    ]
    registry = make_registry()
    await registry.register_swarm("known", known.url)
    hits_before = known.root_hits

    added = await registry.discover_swarms([lister.url, gone, "not a url"])
    assert sorted(added) == ["legacy", "new-swarm"]
    assert known.root_hits == hits_before
    found = registry.get_swarm_endpoint("new-swarm")
    assert found is not None and found.volatile and found.metadata == {"region": "eu"}
    assert registry.get_swarm_endpoint("down") is None
    local = registry.get_swarm_endpoint(LOCAL)
    assert local is not None and local.base_url == LOCAL_URL
    assert await registry.discover_swarms([lister.url]) == []


# --- copies and shapes -------------------------------------------------------------------


async def test_accessors_hand_out_copies(make_registry: RegistryFactory, peer: PeerFactory) -> None:
    beta = await peer("swarm-beta", keywords=["one"])
    registry = make_registry()
    metadata: dict[str, Any] = {"nested": {"a": 1}}
    returned = await registry.register_swarm("swarm-beta", beta.url, metadata=metadata)
    metadata["nested"]["a"] = 2
    returned.keywords.append("mutated")
    returned.is_active = False

    copy = registry.get_swarm_endpoint("swarm-beta")
    assert copy is not None
    copy.keywords.append("mutated")
    assert copy.metadata is not None
    copy.metadata["nested"]["a"] = 3
    copy.base_url = "http://elsewhere"
    for endpoints in (registry.get_all_endpoints(), registry.get_public_endpoints()):
        endpoints["swarm-beta"].keywords.clear()
        endpoints.pop("swarm-beta")

    fresh = registry.get_swarm_endpoint("swarm-beta")
    assert fresh is not None
    assert fresh.keywords == ["one"]
    assert fresh.metadata == {"nested": {"a": 1}}
    assert fresh.base_url == beta.url and fresh.is_active
    assert "swarm-beta" in registry.get_all_endpoints()


async def test_public_dict_is_the_get_swarms_item(
    make_registry: RegistryFactory, peer: PeerFactory
) -> None:
    beta = await peer("swarm-beta")
    registry = make_registry()
    endpoint = await registry.register_swarm("swarm-beta", beta.url, "raw-SECRET")
    item = endpoint.to_public_dict()
    assert list(item) == [
        "swarm_name",
        "base_url",
        "version",
        "last_seen",
        "is_active",
        "latency",
        "swarm_description",
        "keywords",
        "metadata",
    ]
    assert isinstance(item["last_seen"], str) and item["last_seen"].endswith("+00:00")
    assert "raw-SECRET" not in json.dumps(item)
    assert "raw-SECRET" not in repr(endpoint)
    assert SwarmEndpoint(swarm_name="x", base_url="http://h").to_public_dict()["last_seen"] is None


async def test_cleanup_removes_only_volatile_peers(
    make_registry: RegistryFactory, peer: PeerFactory, tmp_path: Path
) -> None:
    beta, gamma = await peer("swarm-beta"), await peer("gamma")
    registry = make_registry(tmp_path / "alpha.json")
    await registry.register_swarm("swarm-beta", beta.url, volatile=False)
    await registry.register_swarm("gamma", gamma.url)
    assert registry.cleanup_volatile_endpoints() == ["gamma"]
    assert set(registry.get_all_endpoints()) == {LOCAL, "swarm-beta"}
    assert set(registry.get_persistent_endpoints()) == {LOCAL, "swarm-beta"}


async def test_an_external_session_is_used_and_left_open(peer: PeerFactory) -> None:
    beta = await peer("swarm-beta")
    async with aiohttp.ClientSession() as session:
        async with SwarmRegistry(LOCAL, LOCAL_URL, session=session, env={}) as registry:
            await registry.register_swarm("swarm-beta", beta.url)
        assert not session.closed
