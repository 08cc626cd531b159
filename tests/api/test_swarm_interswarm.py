"""A swarm used from Python with ``enable_interswarm``: it builds and owns its registry and
router (CONTRACT 6.3), reaches a real MAIL server, and takes the answer back through
``receive_interswarm_message``. Everything listens on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from tests._servers import serve

from mail.api import MAILAgentTemplate, MAILSwarm, MAILSwarmTemplate
from mail.config import load_config
from mail.errors import ConfigurationError
from mail.net import SwarmRegistry
from mail.server import create_app
from mail.testing import Incoming, ScriptedAgent, StaticAuth, tc
from mail.version import PROTOCOL_VERSION

REPO = Path(__file__).resolve().parents[2]
WAIT = 15.0
BETA_KEY = "alpha-to-beta"  # the key alpha presents to beta
TOKENS = {"SWARM_AUTH_TOKEN_BETA": BETA_KEY}


def alpha_rule(incoming: Incoming) -> Any:
    if incoming.sender_type in ("user", "admin"):
        return tc("send_request", target=incoming.body, subject="q", body="hello from alpha")
    return tc("task_complete", finish_message=f"{incoming.sender}: {incoming.body}")


def beta_rule(incoming: Incoming) -> Any:
    return tc("send_response", target=incoming.sender, subject="re", body="hello from beta")


def one_agent_swarm(
    name: str, rule: Any, targets: list[str], *, interswarm: bool = True
) -> MAILSwarmTemplate:
    agent = MAILAgentTemplate(
        "supervisor",
        lambda **_: ScriptedAgent(rule=rule),
        targets,
        [],
        {},
        enable_entrypoint=True,
        enable_interswarm=interswarm,
        can_complete_tasks=True,
    )
    return MAILSwarmTemplate(name, "1.0.0", [agent], [], "supervisor", interswarm)


@asynccontextmanager
async def beta_server(tmp_path: Path) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    """A MAIL server of swarm ``beta`` whose supervisor answers ``supervisor@alpha``."""
    config = load_config(
        None,
        env={
            "MAIL_DATA_DIR": str(tmp_path / "beta"),
            "SWARM_REGISTRY_FILE": str(tmp_path / "beta" / "registry.json"),
        },
        search=False,
        overrides={
            "server": {
                "swarm": {
                    "name": "offline",
                    "source": str(REPO / "swarms.json"),
                    "registry": str(tmp_path / "beta" / "registry.json"),
                },
                "settings": {"print_llm_streams": False},
            }
        },
    )
    auth = StaticAuth({BETA_KEY: ("agent", "alpha"), "beta-admin": ("admin", "admin")})
    template = one_agent_swarm("beta", beta_rule, ["supervisor@alpha"])
    app = create_app(config, template=template, authenticator=auth)
    async with (
        serve(app) as url,
        httpx.AsyncClient(
            base_url=url, headers={"Authorization": "Bearer beta-admin"}, timeout=WAIT
        ) as admin,
    ):
        yield url, admin


@dataclass
class Inbox:
    """An HTTP front for a Python swarm: what a peer needs to send work back to it."""

    swarm: MAILSwarm | None = None
    received: list[str] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/", self._root)
        app.router.add_get("/health", self._health)
        app.router.add_post("/interswarm/{direction}", self._interswarm)
        return app

    async def _root(self, _request: web.Request) -> web.Response:
        swarm = {"name": "alpha", "version": "1.0.0", "keywords": [], "public": False}
        body = {"name": "mail", "protocol_version": PROTOCOL_VERSION, "swarm": swarm}
        return web.json_response({**body, "status": "running"})

    async def _health(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "healthy", "swarm_name": "alpha"})

    async def _interswarm(self, request: web.Request) -> web.Response:
        assert self.swarm is not None
        direction = request.match_info["direction"]
        self.received.append(direction)
        message = (await request.json())["message"]
        task = await self.swarm.receive_interswarm_message(message, direction)  # type: ignore[arg-type]
        ack = {"swarm": "alpha", "task_id": task.task_id, "status": "success"}
        return web.json_response({**ack, "local_runner": self.swarm.runtime.this_owner})


@asynccontextmanager
async def inbox_server(inbox: Inbox) -> AsyncIterator[str]:
    runner = web.AppRunner(inbox.app(), access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def write_registry(path: Path, alpha_url: str, peers: Mapping[str, str]) -> None:
    """The registry file alpha starts from: persistent peers, tokens as ${VAR} references."""
    async with SwarmRegistry("alpha", alpha_url, path, env=TOKENS) as registry:
        for name, url in peers.items():
            await registry.register_swarm(name, url, auth_token=BETA_KEY, volatile=False)
    assert BETA_KEY not in await asyncio.to_thread(path.read_text)


async def test_a_python_swarm_reaches_a_peer_server_and_gets_its_answer(tmp_path: Path) -> None:
    inbox = Inbox()
    async with AsyncExitStack() as stack:
        beta_url, beta_admin = await stack.enter_async_context(beta_server(tmp_path))
        alpha_url = await stack.enter_async_context(inbox_server(inbox))
        registry_file = tmp_path / "alpha-registry.json"
        await write_registry(registry_file, alpha_url, {"beta": beta_url})
        # beta learns where alpha is (and which key to present to it) over its HTTP API
        answer = await beta_admin.post(
            "/swarms",
            json={"name": "alpha", "base_url": alpha_url, "auth_token": "beta-to-alpha"},
        )
        assert answer.status_code == 200, answer.text

        alpha = one_agent_swarm("alpha", alpha_rule, ["supervisor@beta"]).instantiate(
            {}, user_id="u1", base_url=alpha_url, registry_file=registry_file, env=TOKENS
        )
        inbox.swarm = alpha
        try:
            assert alpha.is_interswarm_running()
            final, events = await alpha.post_message(
                "supervisor@beta", show_events=True, timeout=WAIT
            )
        finally:
            await alpha.shutdown(timeout=1.0)

    assert final["message"]["body"] == "supervisor@beta: hello from beta"
    assert inbox.received == ["back"]
    assert events is not None
    names = [e.event for e in events]
    assert "interswarm_message_sent" in names
    assert "interswarm_message_received" in names
    registry = alpha.swarm_registry
    assert isinstance(registry, SwarmRegistry)
    assert registry.persistence_file == registry_file
    assert registry.local_base_url == alpha_url
    assert not registry.health_checks_running


async def test_unknown_peers_are_reported_to_the_agent_not_refused_as_disabled(
    tmp_path: Path,
) -> None:
    # Regression: base_url and registry_file were ignored and no router was built, so
    # every agent@swarm was refused with "interswarm messaging is not enabled".
    alpha = one_agent_swarm("alpha", alpha_rule, ["supervisor@gamma"]).instantiate(
        {}, user_id="u1", registry_file=tmp_path / "none-yet.json", env={}
    )
    try:
        final, _ = await alpha.post_message("supervisor@gamma", timeout=WAIT)
    finally:
        await alpha.shutdown(timeout=1.0)
    assert "swarm 'gamma' is not registered" in final["message"]["body"]


async def test_interswarm_can_be_stopped_and_started_and_runs_health_checks(
    tmp_path: Path,
) -> None:
    alpha = one_agent_swarm("alpha", alpha_rule, ["supervisor@gamma"]).instantiate(
        {}, user_id="u1", registry_file=tmp_path / "registry.json", env={}
    )
    registry = alpha.swarm_registry
    assert isinstance(registry, SwarmRegistry)
    try:
        await alpha.start_interswarm()
        assert registry.health_checks_running
        await alpha.stop_interswarm()
        assert not registry.health_checks_running
        assert not alpha.is_interswarm_running()
        final, _ = await alpha.post_message("supervisor@gamma", timeout=WAIT)
        assert "interswarm messaging is not enabled" in final["message"]["body"]
        await alpha.start_interswarm()
        assert alpha.is_interswarm_running()
    finally:
        await alpha.shutdown(timeout=1.0)
    assert not registry.health_checks_running  # the swarm closed what it made


async def test_a_given_registry_is_used_but_left_to_its_owner(tmp_path: Path) -> None:
    async with SwarmRegistry("alpha", "http://127.0.0.1:9", env={}) as registry:
        registry.start_health_checks()
        alpha = one_agent_swarm("alpha", alpha_rule, ["supervisor@gamma"]).instantiate(
            {}, user_id="u1", swarm_registry=registry
        )
        assert alpha.swarm_registry is registry
        await alpha.start_interswarm()
        await alpha.shutdown(timeout=1.0)
        assert registry.health_checks_running
    with pytest.raises(ConfigurationError, match=r"must be a mail\.net\.SwarmRegistry"):
        one_agent_swarm("alpha", alpha_rule, ["x@gamma"]).instantiate({}, swarm_registry={})


async def test_a_local_swarm_builds_no_registry() -> None:
    local = one_agent_swarm("solo", alpha_rule, [], interswarm=False).instantiate(
        {}, registry_file="ignored.json"
    )
    assert local.swarm_registry is None
    assert not local.is_interswarm_running()
    with pytest.raises(ConfigurationError, match="not enabled"):
        await local.start_interswarm()
    await local.shutdown(timeout=1.0)
