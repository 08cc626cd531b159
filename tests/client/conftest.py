"""Fixtures for the client tests: real uvicorn servers on ``127.0.0.1:0``, real swarms.

* ``start(template=None, **server)`` starts a MAIL server (static keys :data:`KEYS`, data
  in ``tmp_path``, the repository's offline swarm unless ``template`` is given; ``server``
  holds ``[server]`` overrides such as ``debug=True``) and returns its base URL.
* ``offline``: the URL of a server of the offline swarm; ``gated``: a :class:`Gated`
  server whose worker waits for an event before answering.
* ``connect(url, key="user-key", **config)``: a :class:`MAILClient` closed after the test.
* ``echo``: a plain aiohttp server that records each request and answers from
  :attr:`Echo.answers` (a fake of *some* HTTP server, for wire-level checks).
* :class:`CuttingProxy`: a TCP proxy that cuts one streamed answer mid-way;
  :class:`DroppingProxy`: one that drops the connection of a request the server took,
  before any answer byte (the client's retries meet the first request's task).
* :func:`assert_shape`: a JSON object has the keys its result ``TypedDict`` names.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests._servers import serve

from mail.api import MAILAgentTemplate, MAILSwarmTemplate
from mail.client import MAILClient
from mail.config import ClientConfig, MAILConfig, load_config
from mail.server import create_app
from mail.testing import Incoming, ScriptedAgent, ScriptedCall, StaticAuth, tc

REPO = Path(__file__).resolve().parents[2]
SWARMS_JSON = REPO / "swarms.json"

#: The static API keys every test server accepts.
KEYS: dict[str, tuple[str, str]] = {
    "admin-key": ("admin", "admin1"),
    "user-key": ("user", "u1"),
    "user2-key": ("user", "u2"),
    "agent-key": ("agent", "peer1"),
}
#: Bound for any single wait in these tests.
WAIT = 15.0

Start = Callable[..., Awaitable[str]]
Connect = Callable[..., MAILClient]


def assert_shape(value: Mapping[str, Any], shape: Any) -> None:
    """``value`` holds every required key of the ``TypedDict`` ``shape``, and no other key
    than those ``shape`` names."""
    required, known = set(shape.__required_keys__), set(shape.__required_keys__)
    known |= shape.__optional_keys__
    keys = set(value)
    assert required <= keys, f"{shape.__name__}: missing {sorted(required - keys)}"
    assert keys <= known, f"{shape.__name__}: unexpected {sorted(keys - known)}"


def make_config(tmp_path: Path, **server: Any) -> MAILConfig:
    """No mail.toml, data in ``tmp_path``, the offline swarm; ``server``: overrides."""
    overrides = {
        "server": {
            "swarm": {"name": "offline", "source": str(SWARMS_JSON)},
            "settings": {"print_llm_streams": False},
            **server,
        }
    }
    return load_config(
        None,
        env={"MAIL_DATA_DIR": str(tmp_path), "SWARM_REGISTRY_FILE": str(tmp_path / "r.json")},
        search=False,
        overrides=overrides,
    )


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator[Start]:
    async with AsyncExitStack() as stack:

        async def _start(template: MAILSwarmTemplate | None = None, **server: Any) -> str:
            app = create_app(
                make_config(tmp_path, **server),
                template=template,
                authenticator=StaticAuth(KEYS),  # type: ignore[arg-type]
            )
            return await stack.enter_async_context(serve(app))

        yield _start


@pytest.fixture
async def offline(start: Start) -> str:
    return await start()


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    """``connect(url, key="user-key", session=None, **config)``; clients close after the test."""
    clients: list[MAILClient] = []

    def _connect(
        url: str, key: str | None = "user-key", session: Any = None, **config: Any
    ) -> MAILClient:
        client = MAILClient(
            url, key, session=session, config=ClientConfig(**{"timeout": WAIT, **config})
        )
        clients.append(client)
        return client

    yield _connect
    for client in clients:
        await client.aclose()


@pytest.fixture
async def user(offline: str, connect: Connect) -> MAILClient:
    return connect(offline)


@pytest.fixture
async def admin(offline: str, connect: Connect) -> MAILClient:
    return connect(offline, "admin-key")


# --- scripted swarms -----------------------------------------------------------------------


@dataclass
class Gated:
    """A server whose ``worker`` waits for ``gate`` before answering the supervisor.

    A task: new_message (user -> supervisor), tool_call, new_message (supervisor ->
    worker), then, once the gate opens, tool_call, new_message (worker -> supervisor),
    tool_call, task_complete_call, new_message (::task_complete::); answer "done: worked".
    """

    url: str
    gate: asyncio.Event
    worker: ScriptedAgent


def gated_template(gate: asyncio.Event) -> tuple[MAILSwarmTemplate, ScriptedAgent]:
    def supervise(incoming: Incoming) -> ScriptedCall:
        if incoming.sender == "worker":
            return tc("task_complete", finish_message=f"done: {incoming.body}")
        return tc("send_request", target="worker", subject="job", body=incoming.body)

    def work(_incoming: Incoming) -> ScriptedCall:
        return tc("send_response", target="supervisor", subject="Re: job", body="worked")

    supervisor = ScriptedAgent(rule=supervise)
    worker = ScriptedAgent(rule=work, gate=gate)
    agents = [
        MAILAgentTemplate(
            "supervisor",
            lambda **_: supervisor,
            ["worker"],
            [],
            {},
            enable_entrypoint=True,
            can_complete_tasks=True,
        ),
        MAILAgentTemplate("worker", lambda **_: worker, ["supervisor"], [], {}),
    ]
    template = MAILSwarmTemplate(
        "gated", "1.0.0", agents, [], "supervisor", description="gated test swarm"
    )
    return template, worker


@pytest.fixture
async def gated(start: Start) -> AsyncIterator[Gated]:
    gate = asyncio.Event()
    template, worker = gated_template(gate)
    url = await start(template=template)
    try:
        yield Gated(url, gate, worker)
    finally:
        gate.set()  # let stuck turns end before the server stops


# --- a recording HTTP server ---------------------------------------------------------------

Answer = tuple[int, str, bytes]


@dataclass
class Echo:
    """Records requests (``method``, ``path``, ``raw_path``, ``query``, ``headers`` with
    lower-case names, ``body`` bytes) and
    answers ``answers[path]`` (``(status, content_type, body)``, or a list of them used in
    turn), else ``{"ok": true}``."""

    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    answers: dict[str, Answer | list[Answer]] = field(default_factory=dict)

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(
            {
                "method": request.method,
                "path": request.path,
                "raw_path": request.raw_path,
                "query": dict(request.query),
                "headers": {k.lower(): v for k, v in request.headers.items()},
                "body": await request.read(),
            }
        )
        answer = self.answers.get(request.path, (200, "application/json", b'{"ok": true}'))
        if isinstance(answer, list):  # one answer per request, the last one repeated
            answer = answer.pop(0) if len(answer) > 1 else answer[0]
        status, content_type, body = answer
        return web.Response(status=status, body=body, headers={"Content-Type": content_type})


@pytest.fixture
async def echo() -> AsyncIterator[Echo]:
    recorder = Echo()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", recorder.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    recorder.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield recorder
    finally:
        await runner.cleanup()


# --- a proxy that cuts a stream --------------------------------------------------------------

#: Given the answer bytes forwarded so far, where to cut (``None``: not yet).
CutAt = Callable[[bytes], int | None]


def after_events(count: int, extra: int = 0) -> CutAt:
    """Cut ``extra`` bytes after the start of frame number ``count + 1`` (0: at its start)."""

    def cut_at(seen: bytes) -> int | None:
        position = -1
        for _ in range(count + 1):
            position = seen.find(b"event: ", position + 1)
            if position < 0:
                return None
        end = position + extra
        return end if end <= len(seen) else None

    return cut_at


class CuttingProxy:
    """A TCP proxy to ``target`` on ``127.0.0.1:0`` that cuts the answer of the first
    request starting with ``cut_request`` where ``cut_at`` says; with ``refuse_after_cut``
    it then closes every later connection at once. ``connections`` counts connections."""

    def __init__(
        self,
        target: str,
        cut_at: CutAt,
        *,
        cut_request: bytes = b"POST /message",
        refuse_after_cut: bool = False,
    ) -> None:
        host, _, port = target.removeprefix("http://").partition(":")
        self._target = (host, int(port))
        self._cut_at = cut_at
        self._cut_request = cut_request
        self._refuse = refuse_after_cut
        self.cut_done = False
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.url = ""

    async def __aenter__(self) -> CuttingProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *_exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.create_task(self._handle(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        upstream: asyncio.StreamWriter | None = None
        try:
            if self.cut_done and self._refuse:
                return
            first = await reader.read(65536)
            cut = not self.cut_done and first.startswith(self._cut_request)
            self.cut_done = self.cut_done or cut
            up_reader, upstream = await asyncio.open_connection(*self._target)
            upstream.write(first)
            to_server = asyncio.create_task(_pipe(reader, upstream))
            try:
                await _pipe(up_reader, writer, self._cut_at if cut else None)
            finally:
                to_server.cancel()
                with contextlib.suppress(asyncio.CancelledError, OSError):
                    await to_server
        finally:
            for w in (writer, upstream):
                if w is not None:
                    w.close()
                    with contextlib.suppress(OSError):
                        await w.wait_closed()


async def _pipe(
    src: asyncio.StreamReader, dst: asyncio.StreamWriter, cut_at: CutAt | None = None
) -> None:
    seen = b""
    sent = 0
    while data := await src.read(65536):
        if cut_at is None:
            dst.write(data)
            await dst.drain()
            continue
        seen += data
        end = cut_at(seen)
        dst.write(seen[sent : end if end is not None else len(seen)])
        await dst.drain()
        sent = end if end is not None else len(seen)
        if end is not None:
            return


# --- a proxy that loses answers ----------------------------------------------------------

#: ``await accepted()``: whether the server has taken the request (the proxy then drops).
Accepted = Callable[[], Awaitable[bool]]


class DroppingProxy:
    """A TCP proxy to ``target`` on ``127.0.0.1:0`` that loses answers the server gave.

    On the first ``drops`` connections (all of them when ``None``) whose request starts
    with ``request``, it forwards the request, waits until ``accepted()`` says the server
    took it (polled; without ``accepted``, until the server's first answer byte), then
    closes the client's side without passing on a byte: the server runs the request, the
    client sees its connection drop before any answer. The server's answer is read and
    thrown away. Other connections pass through.

    ``attempts`` holds the raw head (request line and headers, lower-cased names) and body
    of each connection whose request matched, ``dropped`` counts those dropped;
    :meth:`wait_attempts` waits until ``n`` arrived.
    """

    def __init__(
        self,
        target: str,
        *,
        accepted: Accepted | None = None,
        drops: int | None = 1,
        request: bytes = b"POST /message ",
    ) -> None:
        host, _, port = target.removeprefix("http://").partition(":")
        self._target = (host, int(port))
        self._accepted = accepted
        self._drops = drops
        self._request = request
        self.attempts: list[tuple[dict[str, str], bytes]] = []
        self.dropped = 0
        self._arrived = asyncio.Condition()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.url = ""

    async def __aenter__(self) -> DroppingProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *_exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def wait_attempts(self, count: int) -> None:
        """Until ``count`` matching requests arrived."""
        async with self._arrived:
            await self._arrived.wait_for(lambda: len(self.attempts) >= count)

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.create_task(self._handle(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        answers: asyncio.Task[None] | None = None
        try:
            up_reader, upstream = await asyncio.open_connection(*self._target)
            answers = asyncio.create_task(_relay(up_reader, writer))
            while True:  # one request after the other (a client sends the next one once
                # it has read the answer to the last)
                head = await reader.readuntil(b"\r\n\r\n")
                headers = _head(head)
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if head.startswith(self._request):
                    async with self._arrived:
                        self.attempts.append((headers, body))
                        self._arrived.notify_all()
                    if self._drops is None or self.dropped < self._drops:
                        answers.cancel()  # earlier answers are through: none of this one is
                        await asyncio.gather(answers, return_exceptions=True)
                        self.dropped += 1
                        upstream.write(head + body)
                        await self._until_taken(up_reader)
                        writer.close()  # the client's connection drops before any answer
                        while await up_reader.read(65536):  # the answer, thrown away
                            pass
                        return
                upstream.write(head + body)
        except (asyncio.IncompleteReadError, ConnectionError):
            return  # the client closed its connection
        finally:
            if answers is not None:
                answers.cancel()
                await asyncio.gather(answers, return_exceptions=True)
            for w in (writer, upstream):
                if w is not None:
                    w.close()
                    with contextlib.suppress(OSError):
                        await w.wait_closed()

    async def _until_taken(self, up_reader: asyncio.StreamReader) -> None:
        """Until ``accepted()`` (or the server's first answer byte, consumed)."""

        async def polled() -> None:
            assert self._accepted is not None
            while True:  # the server is asked over HTTP: there is no event to wait on
                if await self._accepted():
                    return
                await asyncio.sleep(0.01)

        waits = [asyncio.create_task(up_reader.read(1))]
        if self._accepted is not None:
            waits.append(asyncio.create_task(polled()))
        _, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


async def _relay(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    """The server's answers to the client; the client's connection closes with the server's."""
    await _pipe(src, dst)
    dst.close()


def _head(head: bytes) -> dict[str, str]:
    """A request head's headers by lower-case name; ``""`` holds the request line."""
    lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
    headers = {"": lines[0]}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers
