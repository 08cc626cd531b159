"""Federation fixtures: real MAIL servers (uvicorn on ``127.0.0.1:0``) with scripted swarms.

* :class:`Cluster` starts :class:`Node`\\ s. Each node has its own :class:`StaticAuth`:
  ``<name>-admin`` (admin ``admin``), ``<name>-user`` (user ``u1``) and, for every other
  swarm name ``p`` of the cluster, ``<p>-to-<name>`` (agent ``p``): the key peer ``p``
  presents here, so a forward from ``p`` runs in the runtime ``swarm:p@<name>``.
* :meth:`Cluster.link` registers one node on another over HTTP (``POST /swarms``) with
  the key the first one must present to the second.
* :class:`FakePeer` is a minimal aiohttp MAIL peer (``GET /``, ``/health``, the interswarm
  POST routes) whose answers a test chooses: slow, failing, protocol 1.1, or just counting.
  Each ``GET /health`` it answers is put on ``health_checks``; its ``GET /swarms`` lists
  nothing (and is counted in ``hits``).
* :class:`DropProxy` is a TCP proxy that relays one interswarm POST to its upstream and then
  drops the connection instead of relaying the answer.
* :func:`swarm` builds an interswarm-enabled template of :class:`ScriptedAgent`\\ s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx
import pytest
from aiohttp import web
from fastapi import FastAPI
from tests._servers import serve

from mail.api import MAILAgentTemplate, MAILSwarmTemplate
from mail.config import MAILConfig, load_config
from mail.core.tasks import MAILTask
from mail.net import RouterSettings
from mail.server import create_app
from mail.server._state import ServerState
from mail.server.auth import Role
from mail.testing import ScriptedAgent, StaticAuth
from mail.version import PROTOCOL_VERSION

REPO = Path(__file__).resolve().parents[2]
SWARMS_JSON = REPO / "swarms.json"
NAMES = ("alpha", "beta", "gamma")
#: Bound for any single wait in these tests.
WAIT = 15.0

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float = WAIT) -> T:
    """``await awaitable``, failing the test after ``seconds``."""
    return await asyncio.wait_for(awaitable, seconds)


def agent_key(sender: str, receiver: str) -> str:
    """The key swarm ``sender`` presents to swarm ``receiver``."""
    return f"{sender}-to-{receiver}"


# --- templates -----------------------------------------------------------------------------


def swarm(
    name: str,
    agents: Mapping[str, ScriptedAgent],
    targets: Mapping[str, list[str]],
    *,
    entrypoint: str = "supervisor",
    interswarm: bool = True,
) -> MAILSwarmTemplate:
    """An interswarm-enabled, public swarm of scripted agents; the entrypoint completes tasks."""
    templates = [
        MAILAgentTemplate(
            agent_name,
            lambda _agent=agent, **_params: _agent,
            targets[agent_name],
            [],
            {},
            enable_entrypoint=agent_name == entrypoint,
            enable_interswarm=interswarm,
            can_complete_tasks=agent_name == entrypoint,
        )
        for agent_name, agent in agents.items()
    ]
    return MAILSwarmTemplate(
        name,
        "1.0.0",
        templates,
        [],
        entrypoint,
        enable_interswarm=interswarm,
        description=f"scripted swarm {name}",
        keywords=["test"],
        public=True,
    )


# --- servers -------------------------------------------------------------------------------


def node_config(
    tmp_path: Path,
    name: str,
    registry: Path | None = None,
    interswarm: Mapping[str, Any] | None = None,
) -> MAILConfig:
    overrides: dict[str, Any] = {
        "server": {
            "swarm": {
                "name": "offline",
                "source": str(SWARMS_JSON),
                "registry": str(registry or tmp_path / name / "registry.json"),
            },
            "settings": {"print_llm_streams": False},
            "interswarm": dict(interswarm or {}),
        }
    }
    return load_config(
        None, env={"MAIL_DATA_DIR": str(tmp_path / name)}, search=False, overrides=overrides
    )


@dataclass
class Node:
    """A started server of one swarm."""

    name: str
    url: str
    app: FastAPI
    auth: StaticAuth
    _stack: AsyncExitStack = field(repr=False)
    _clients: dict[str, httpx.AsyncClient] = field(default_factory=dict, repr=False)

    @property
    def state(self) -> ServerState:
        state: ServerState = self.app.state.mail
        return state

    async def client(self, key: str | None) -> httpx.AsyncClient:
        """A client of this node (closed with it), with ``key`` as bearer token."""
        if key not in self._clients:
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            client = httpx.AsyncClient(base_url=self.url, headers=headers, timeout=WAIT)
            self._clients[str(key)] = await self._stack.enter_async_context(client)
        return self._clients[str(key)]

    async def admin(self) -> httpx.AsyncClient:
        return await self.client(f"{self.name}-admin")

    async def user(self) -> httpx.AsyncClient:
        return await self.client(f"{self.name}-user")

    async def peer(self, sender: str) -> httpx.AsyncClient:
        """A client presenting the key of peer swarm ``sender``."""
        return await self.client(agent_key(sender, self.name))

    def task_of(self, role: str, caller_id: str, task_id: str) -> MAILTask:
        """A task of the runtime of caller ``(role, id)`` (white-box read)."""
        swarm = self.state.swarms.lookup(role, caller_id)
        assert swarm is not None, f"{self.name} has no runtime for {role}:{caller_id}"
        task = swarm.runtime.tasks.get(task_id)
        assert task is not None, f"{self.name} has no task {task_id} for {role}:{caller_id}"
        return task

    async def stop(self) -> None:
        await self._stack.aclose()


class Reachable(Protocol):
    """A swarm a node can register: a node, a fake peer, a proxy, a peer process."""

    @property
    def name(self) -> str: ...

    @property
    def url(self) -> str: ...


class Cluster:
    """Starts nodes for one test and stops them all at its end."""

    def __init__(self, stack: AsyncExitStack, tmp_path: Path) -> None:
        self._stack = stack
        self.tmp_path = tmp_path

    async def start(
        self,
        template: MAILSwarmTemplate,
        *,
        router_settings: RouterSettings | None = None,
        registry: Path | None = None,
        interswarm: Mapping[str, Any] | None = None,
    ) -> Node:
        """Serve ``template``; ``interswarm`` is its ``[server.interswarm]`` table."""
        name = template.name
        keys: dict[str, tuple[Role, str]] = {
            f"{name}-admin": ("admin", "admin"),
            f"{name}-user": ("user", "u1"),
        }
        for peer in (*NAMES, "legacy"):
            if peer != name:
                keys[agent_key(peer, name)] = ("agent", peer)
        auth = StaticAuth(keys)
        app = create_app(
            node_config(self.tmp_path, name, registry, interswarm),
            template=template,
            authenticator=auth,
            router_settings=router_settings,
        )
        stack = AsyncExitStack()
        url = await stack.enter_async_context(serve(app))
        node = Node(name, url, app, auth, stack)
        # what BASE_URL would say: the port is only known once bound
        node.state.base_url = url
        node.state.registry.register_local_swarm(url)
        self._stack.push_async_callback(node.stop)
        return node

    async def link(
        self, node: Node, peer: Reachable, *, volatile: bool = True, **extra: Any
    ) -> None:
        """Register ``peer`` on ``node`` over HTTP, with the key ``node`` presents to it."""
        body = {
            "name": peer.name,
            "base_url": peer.url,
            "auth_token": agent_key(node.name, peer.name),
            "volatile": volatile,
            **extra,
        }
        response = await (await node.admin()).post("/swarms", json=body)
        assert response.status_code == 200, response.text


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with AsyncExitStack() as stack:
        yield Cluster(stack, tmp_path)


# --- fake peers ----------------------------------------------------------------------------

Behaviour = Callable[[web.Request, Any], Awaitable[web.StreamResponse]]


class FakePeer:
    """A MAIL peer on ``127.0.0.1`` whose interswarm answers a test chooses.

    ``behaviour(request, body)`` answers every interswarm POST (default: the protocol 1.3
    acknowledgement). ``legacy`` makes ``GET /`` look like a protocol 1.1 server (no
    ``protocol_version``). ``version`` is the ``version`` field of its ``GET /`` (default
    1.1.0 for a legacy peer, else the protocol version).
    ``received`` holds every interswarm POST as ``(path, headers, body)``; ``arrived`` is
    set at each one.
    """

    def __init__(
        self,
        name: str,
        *,
        behaviour: Behaviour | None = None,
        legacy: bool = False,
        version: str | None = None,
    ) -> None:
        self.name = name
        self.behaviour = behaviour or ack
        self.legacy = legacy
        self.version = version or ("1.1.0" if legacy else PROTOCOL_VERSION)
        self.health_checks: asyncio.Queue[None] = asyncio.Queue()
        self.received: list[tuple[str, Mapping[str, str], Any]] = []
        self.hits: Counter[str] = Counter()
        self.arrived = asyncio.Event()
        self.closing = asyncio.Event()
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> FakePeer:
        app = web.Application()
        app.router.add_get("/", self._root)
        app.router.add_get("/health", self._health)
        app.router.add_get("/swarms", self._swarms)
        for path in ("forward", "back", "message"):
            app.router.add_post(f"/interswarm/{path}", self._interswarm)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self._runner = runner
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self.closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _root(self, _request: web.Request) -> web.Response:
        if self.legacy:
            return web.json_response({"name": "mail", "status": "ok", "version": self.version})
        swarm = {
            "name": self.name,
            "version": "1.0.0",
            "description": "a fake peer",
            "entrypoint": "supervisor",
            "keywords": [],
            "public": True,
        }
        body = {
            "name": "mail",
            "protocol_version": PROTOCOL_VERSION,
            "version": self.version,
            "swarm": swarm,
            "status": "running",
            "uptime": 1.0,
        }
        return web.json_response(body)

    async def _health(self, _request: web.Request) -> web.Response:
        self.health_checks.put_nowait(None)
        return web.json_response({"status": "healthy", "swarm_name": self.name})

    async def _swarms(self, request: web.Request) -> web.Response:
        self.hits[request.path] += 1
        return web.json_response({"swarms": []})

    async def _interswarm(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.received.append((request.path, dict(request.headers), body))
        self.hits[request.path] += 1
        self.arrived.set()
        return await self.behaviour(request, body)

    async def sleep(self, seconds: float) -> None:
        """Sleep, cut short when the peer closes."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.closing.wait(), seconds)


async def ack(_request: web.Request, body: Any) -> web.Response:
    message = body.get("message", body)
    return web.json_response(
        {
            "swarm": message.get("target_swarm"),
            "task_id": message["payload"]["task_id"],
            "status": "success",
            "local_runner": "swarm:x@fake",
        }
    )


# --- a proxy that loses the first answer ---------------------------------------------------


class DropProxy:
    """Relays HTTP/1.1 requests to ``upstream``, one per connection.

    The first ``POST /interswarm/...`` is relayed and answered upstream, but its answer is
    dropped: the proxy closes the client's connection instead, as a network failure
    between the peer's reply and the sender would. ``dropped`` counts such connections.
    """

    def __init__(self, name: str, upstream: str) -> None:
        self.name = name
        host, _, port = upstream.removeprefix("http://").partition(":")
        self._upstream = (host, int(port))
        self.dropped = 0
        self.url = ""
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> DropProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._handlers:
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._relay(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._handlers.discard(task)
            writer.close()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = 0
        kept = [lines[0]]
        for line in lines[1:]:
            if not line:
                continue
            key, _, value = line.partition(":")
            if key.strip().lower() == "content-length":
                length = int(value.strip())
            if key.strip().lower() != "connection":
                kept.append(line)
        body = await reader.readexactly(length)
        request = ("\r\n".join([*kept, "Connection: close"]) + "\r\n\r\n").encode("latin-1")
        up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        try:
            up_writer.write(request + body)
            await up_writer.drain()
            answer = await up_reader.read()  # until the upstream closes
        finally:
            up_writer.close()
        if lines[0].startswith("POST /interswarm/") and self.dropped == 0:
            self.dropped += 1
            return  # the answer is lost: the client sees its connection closed
        writer.write(answer)
        await writer.drain()


def json_body(response: httpx.Response) -> Any:
    return json.loads(response.content)
