"""Loopback HTTP peers for the tests of outbound requests (the guarded fetch, the stdlib's
HTTP actions, the guarded httpx client): :class:`HTTPSite`, and a listening socket that
must see no connection (:func:`listening_socket`, :func:`connected`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Iterator
from typing import Any

from aiohttp import web

from mail.testing._loopback import LoopbackApp

__all__ = ["HTTPSite", "connected", "listening_socket"]


class HTTPSite(LoopbackApp):
    """``/echo`` (every verb): the request as JSON, each one kept in ``seen``;
    ``/status/{code}``: that status with ``status_text``; ``/go?to=URL&code=N``: a redirect;
    ``/hops/{n}``: ``n`` redirects then ``arrived``; ``/big?n=N``: ``N`` bytes streamed;
    ``/slow``: answers when the server closes (``slow_started`` is set when it is reached);
    ``/trickle``: a byte every 20 ms until the server closes."""

    def __init__(self, *, status_text: str = "nope") -> None:
        super().__init__()
        self.status_text = status_text
        self.seen: list[dict[str, Any]] = []
        self.slow_started = asyncio.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def _routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/echo", self._echo)
        app.router.add_get("/status/{code}", self._status)
        app.router.add_route("*", "/go", self._go)
        app.router.add_get("/hops/{n}", self._hops)
        app.router.add_get("/big", self._big)
        app.router.add_get("/slow", self._slow)
        app.router.add_get("/trickle", self._trickle)

    async def _echo(self, request: web.Request) -> web.Response:
        raw = await request.text()
        record = {
            "method": request.method,
            "headers": dict(request.headers),
            "body": json.loads(raw) if raw else None,
            "content_type": request.content_type,
        }
        self.seen.append(record)
        return web.json_response(record, headers={"X-Echo": "yes"})

    async def _status(self, request: web.Request) -> web.Response:
        return web.Response(status=int(request.match_info["code"]), text=self.status_text)

    async def _go(self, request: web.Request) -> web.Response:
        code = int(request.query.get("code", "302"))
        return web.Response(status=code, headers={"Location": request.query["to"]})

    async def _hops(self, request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        if n == 0:
            return web.Response(text="arrived")
        raise web.HTTPFound(f"/hops/{n - 1}")

    async def _big(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        for _ in range(int(request.query["n"]) // 1000):
            await response.write(b"x" * 1000)
        await response.write_eof()
        return response

    async def _slow(self, _request: web.Request) -> web.Response:
        self.slow_started.set()
        await self._closing.wait()
        return web.Response(text="late")

    async def _trickle(self, request: web.Request) -> web.StreamResponse:
        # each read gets a byte long before a per-read timeout: only a deadline stops it
        response = web.StreamResponse()
        await response.prepare(request)
        while not self._closing.is_set():
            await response.write(b" ")
            await asyncio.sleep(0.02)
        return response


@contextlib.contextmanager
def listening_socket() -> Iterator[tuple[socket.socket, int]]:
    """A loopback socket that listens and never accepts, and its port: a connection made to
    it waits in its backlog, where :func:`connected` finds it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield sock, sock.getsockname()[1]


def connected(sock: socket.socket) -> bool:
    """Whether a connection reached ``sock`` (it is accepted and closed)."""
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True
