"""``mail.stdlib.interswarm.actions`` against a real ``mail server`` (a subprocess on
loopback), with ``[stdlib.http]`` configured to allow loopback; a fake MAIL peer registered
on it shows up in its registry; the refusals and wrong answers are errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from tests._servers import Server, clean_env, start_server
from tests.interswarm.conftest import FakePeer

from mail.api import MAILAction
from mail.stdlib import interswarm as interswarm_package
from mail.stdlib.interswarm import actions
from mail.stdlib.interswarm.actions import get_swarm_health, get_swarm_registry, ping_swarm
from mail.testing._loopback import LoopbackApp

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = {"allow_loopback": True, "timeout": 10.0}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("interswarm-actions") / "data"
    with start_server("offline", ROOT / "swarms.json", clean_env(), data) as running:
        yield running


class NotMail(LoopbackApp):
    """Answers ``GET /`` with JSON that is not a MAIL server's, ``/health`` with HTML."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def _routes(self, app: web.Application) -> None:
        async def root(_request: web.Request) -> web.Response:
            return web.json_response({"name": "mail", "status": "starting"})

        async def health(_request: web.Request) -> web.Response:
            return web.Response(text="<html>ok</html>", content_type="text/html")

        app.router.add_get("/", root)
        app.router.add_get("/health", health)


@pytest.fixture
async def not_mail() -> AsyncIterator[NotMail]:
    async with NotMail() as site:
        yield site


def test_the_actions_share_one_schema() -> None:
    for name in interswarm_package.__all__:
        action = getattr(actions, name)
        assert isinstance(action, MAILAction)
        assert action.parameters is actions.SWARM_URL_PARAMETERS
    assert actions.SWARM_URL_PARAMETERS["required"] == ["url"]


async def test_ping_and_health_of_a_real_server(use_settings: Any, server: Server) -> None:
    use_settings(http=LOOPBACK)
    assert await ping_swarm({"url": server.url}) == "pong"
    assert await ping_swarm({"url": f"{server.url}/"}) == "pong"
    assert await get_swarm_health({"url": server.url}) == "healthy"


async def test_the_registry_of_a_real_server(use_settings: Any, server: Server) -> None:
    use_settings(http=LOOPBACK)
    async with FakePeer("beta") as peer:
        async with httpx.AsyncClient(base_url=server.url, timeout=10, trust_env=False) as client:
            response = await client.post(
                "/swarms",
                json={"name": "beta", "base_url": peer.url},
                headers={"Authorization": f"Bearer {server.keys['admin']}"},
            )
        assert response.status_code == 200, response.text
        lines = (await get_swarm_registry({"url": server.url})).splitlines()
    assert f"beta@{peer.url}" in lines
    assert all("@http" in line for line in lines)


async def test_loopback_is_refused_by_default(use_settings: Any, server: Server) -> None:
    use_settings()
    for action in (ping_swarm, get_swarm_health, get_swarm_registry):
        result = await action({"url": server.url})
        assert result.startswith("Error: connection to 127.0.0.1 refused by the rule 'loopback'")


async def test_not_a_mail_server(use_settings: Any, not_mail: NotMail) -> None:
    use_settings(http=LOOPBACK)
    assert await ping_swarm({"url": not_mail.url}) == (
        f"Error: {not_mail.url} does not look like a MAIL server (its 'status' is not 'running')"
    )
    assert await get_swarm_health({"url": not_mail.url}) == (
        f"Error: GET {not_mail.url}/health did not answer with JSON"
    )
    assert await get_swarm_registry({"url": not_mail.url}) == (
        f"Error: GET {not_mail.url}/swarms answered HTTP 404 Not Found"
    )


async def test_bad_arguments_and_refused_urls(use_settings: Any) -> None:
    use_settings(http=LOOPBACK)
    assert await ping_swarm({}) == "Error: 'url' must be a non-empty string"
    assert (await ping_swarm({"url": "ftp://x"})).startswith("Error: only absolute http://")
    result = await get_swarm_health({"url": "http://169.254.169.254"})
    assert "refused by the rule 'link-local'" in result


async def test_an_unreachable_swarm(use_settings: Any) -> None:
    use_settings(http=LOOPBACK)
    loop = asyncio.get_running_loop()
    # a port nothing listens on: bind one, then free it
    listening = await loop.create_server(asyncio.Protocol, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    listening.close()
    await listening.wait_closed()
    result = await ping_swarm({"url": f"http://127.0.0.1:{port}"})
    assert result.startswith(f"Error: request to http://127.0.0.1:{port} failed: could not connect")
