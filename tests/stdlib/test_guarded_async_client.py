"""``mail.net._guard_httpx.guarded_async_client``: refusals raised before any connection
(a listening loopback socket that must get none), a loopback server reachable when the
policy allows it, no redirect followed, and transport errors as ``httpx`` errors."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from aiohttp import web
from tests._http_sites import connected, listening_socket

from mail.errors import AddressRefusedError
from mail.net._guard import AddressPolicy
from mail.net._guard_httpx import guarded_async_client
from mail.testing._loopback import LoopbackApp

pytestmark = pytest.mark.timeout(30)

STRICT = AddressPolicy(allow_loopback=False, allow_private=False, where="the test")


class Hello(LoopbackApp):
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def _routes(self, app: web.Application) -> None:
        async def hello(_request: web.Request) -> web.Response:
            return web.Response(text="hello")

        async def away(_request: web.Request) -> web.Response:
            raise web.HTTPFound("http://169.254.169.254/")

        app.router.add_get("/", hello)
        app.router.add_get("/away", away)


@pytest.fixture
async def hello() -> AsyncIterator[Hello]:
    async with Hello() as server:
        yield server


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, int]]:
    with listening_socket() as found:
        yield found


async def test_a_loopback_server_is_reachable_when_allowed(hello: Hello) -> None:
    async with guarded_async_client(AddressPolicy(), timeout=5) as client:
        response = await client.get(hello.url)
        assert response.status_code == 200
        assert response.text == "hello"
        away = await client.get(f"{hello.url}/away")
        assert away.status_code == 302  # not followed: the caller checks each redirect


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "2130706433", "[::ffff:127.0.0.1]"])
async def test_refused_before_connecting(listener: tuple[socket.socket, int], host: str) -> None:
    sock, port = listener
    async with guarded_async_client(STRICT, timeout=5) as client:
        with pytest.raises(AddressRefusedError, match="'loopback'") as refused:
            await client.get(f"http://{host}:{port}/")
    assert refused.value.rule == "loopback"
    assert "the test" in str(refused.value)
    assert not connected(sock)


async def test_the_control_connects(listener: tuple[socket.socket, int]) -> None:
    sock, port = listener
    async with guarded_async_client(AddressPolicy(), timeout=0.3) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.get(f"http://127.0.0.1:{port}/")
    assert connected(sock)


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://169.254.169.254/", "link-local"),
        ("http://metadata.google.internal/", "metadata"),
        ("http://10.0.0.1/", "private"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
    ],
)
async def test_refused_rules(url: str, rule: str) -> None:
    async with guarded_async_client(STRICT, timeout=20) as client:
        with pytest.raises(AddressRefusedError) as refused:
            await client.get(url)
    assert refused.value.rule == rule


async def test_a_closed_port_is_an_httpx_connect_error(listener: tuple[socket.socket, int]) -> None:
    sock, port = listener
    sock.close()
    async with guarded_async_client(AddressPolicy(), timeout=5) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{port}/")


async def test_proxy_variables_are_ignored(hello: Hello, monkeypatch: pytest.MonkeyPatch) -> None:
    # a proxy would make the guard check the proxy, not the target
    monkeypatch.setenv("HTTP_PROXY", "http://169.254.169.254:3128")
    monkeypatch.setenv("ALL_PROXY", "http://169.254.169.254:3128")
    async with guarded_async_client(AddressPolicy(), timeout=5) as client:
        assert (await client.get(hello.url)).text == "hello"
