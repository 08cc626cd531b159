"""Fixtures for the HTTP tests: real uvicorn servers on ``127.0.0.1:0``, real swarms.

* :func:`serve` starts an app with uvicorn (lifespan on) as a task of the test's loop and
  yields its base URL; on exit it stops the server and waits for the task.
* :func:`make_config` loads a configuration from no file (``search=False``) with every file
  (data directory, credentials, registry) in ``tmp_path`` and the repository's
  ``swarms.json`` (swarm ``offline``).
* :class:`Running` is a started server: ``url``, ``app``, ``state`` (white-box reads only),
  the :class:`StaticAuth` it uses, and one ``httpx.AsyncClient`` per key (``admin``, ``user``,
  ``user2``, ``agent``, ``anon``); every client is closed with the server.
* Fixtures: ``offline`` (the shipped offline swarm, static keys, fresh per test), ``start``
  (a factory for other configurations, templates or auth modes) and ``shared_offline`` (one
  server per module for tests that change nothing; such tests are marked :data:`shared`).
* Swarm helpers: :func:`scripted_template`, :func:`gated_swarm`, :func:`ask_human_action`.
* SSE helpers: :func:`frames` (parse frames as they arrive), :func:`read_stream`,
  :func:`parse_frame`, :class:`Frame`, :func:`compact`; :func:`within` bounds any await.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from tests._servers import serve

from mail.api import MAILAction, MAILAgentTemplate, MAILSwarmTemplate
from mail.config import MAILConfig, load_config
from mail.server import create_app
from mail.server._state import ServerState
from mail.server.auth import Authenticator, Role
from mail.testing import Incoming, ScriptedAgent, ScriptedCall, StaticAuth, tc

REPO = Path(__file__).resolve().parents[2]
SWARMS_JSON = REPO / "swarms.json"
MAIL_TOML = REPO / "mail.toml"
#: The static API keys every in-process test server accepts.
KEYS: dict[str, tuple[Role, str]] = {
    "admin-key": ("admin", "admin1"),
    "user-key": ("user", "u1"),
    "user2-key": ("user", "u2"),
    "agent-key": ("agent", "peer1"),
}
ROLE_KEYS = {"admin": "admin-key", "user": "user-key", "user2": "user2-key", "agent": "agent-key"}

#: Bound for any single wait in these tests (requests, streams, server start and stop).
WAIT = 15.0

T = TypeVar("T")


@functools.cache
def _tls() -> ssl.SSLContext:
    # Building a context loads the CA bundle (~40 ms); every test client shares one.
    return ssl.create_default_context()


async def within(awaitable: Awaitable[T], seconds: float = WAIT) -> T:
    """``await awaitable``, failing the test after ``seconds``."""
    return await asyncio.wait_for(awaitable, seconds)


# --- servers -------------------------------------------------------------------------------


def make_config(tmp_path: Path, **server: Any) -> MAILConfig:
    """The test configuration: no mail.toml, the offline swarm, every file in ``tmp_path``
    (data directory, credentials, registry).

    ``server`` holds ``[server]`` overrides (``debug=True``, ``max_body_bytes=2048``, ...);
    ``auth=`` (a dict) overrides ``[auth]`` and ``database=`` (a dict) ``[database]``
    (``{"persist": False}``: no task store; by default tasks go to SQLite in ``tmp_path``).
    """
    auth = server.pop("auth", None)
    database = server.pop("database", None)
    overrides: dict[str, Any] = {
        "server": {
            "swarm": {
                "name": "offline",
                "source": str(SWARMS_JSON),
                "registry": str(tmp_path / "registries" / "offline.json"),
            },
            "settings": {"print_llm_streams": False},
            **server,
        }
    }
    if auth is not None:
        overrides["auth"] = auth
    if database is not None:
        overrides["database"] = database
    return load_config(
        None,
        env={"MAIL_DATA_DIR": str(tmp_path), "SWARM_REGISTRY_FILE": str(tmp_path / "r.json")},
        search=False,
        overrides=overrides,
    )


@dataclass
class Running:
    """A started test server and its clients."""

    url: str
    app: FastAPI
    auth: Authenticator | None
    _stack: AsyncExitStack = field(repr=False)
    _clients: dict[str, httpx.AsyncClient] = field(default_factory=dict, repr=False)

    @property
    def state(self) -> ServerState:
        state: ServerState = self.app.state.mail
        return state

    async def client(self, api_key: str | None = None, **kwargs: Any) -> httpx.AsyncClient:
        """A new client of this server (closed with it); ``api_key`` as a bearer token."""
        headers = dict(kwargs.pop("headers", {}))
        if api_key is not None:
            headers["Authorization"] = f"Bearer {api_key}"
        client = httpx.AsyncClient(
            base_url=self.url,
            headers=headers,
            timeout=kwargs.pop("timeout", WAIT),
            verify=_tls(),
            **kwargs,
        )
        return await self._stack.enter_async_context(client)

    async def _role(self, name: str) -> httpx.AsyncClient:
        if name not in self._clients:
            key = ROLE_KEYS.get(name)
            self._clients[name] = await self.client(key)
        return self._clients[name]

    async def admin(self) -> httpx.AsyncClient:
        return await self._role("admin")

    async def user(self) -> httpx.AsyncClient:
        return await self._role("user")

    async def user2(self) -> httpx.AsyncClient:
        return await self._role("user2")

    async def agent(self) -> httpx.AsyncClient:
        return await self._role("agent")

    async def anon(self) -> httpx.AsyncClient:
        return await self._role("anon")


Start = Callable[..., Awaitable[Running]]


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator[Start]:
    """``await start(config=None, template=None, authenticator=<static keys>, **app)``.

    Pass ``authenticator=None`` explicitly to use the configured auth mode; ``app`` holds
    further :func:`create_app` arguments (``ping_interval=0.05``).
    """
    async with AsyncExitStack() as stack:
        _default = object()

        async def _start(
            config: MAILConfig | None = None,
            *,
            template: MAILSwarmTemplate | None = None,
            authenticator: Any = _default,
            **app_options: Any,
        ) -> Running:
            if authenticator is _default:
                authenticator = StaticAuth(KEYS)
            app = create_app(
                config or make_config(tmp_path),
                template=template,
                authenticator=authenticator,
                **app_options,
            )
            url = await stack.enter_async_context(serve(app))
            # clients are closed before their server (the stack unwinds in reverse)
            clients = await stack.enter_async_context(AsyncExitStack())
            return Running(url, app, authenticator, clients)

        yield _start


@pytest.fixture
async def offline(start: Start) -> Running:
    """The shipped offline swarm behind static keys, fresh for the test."""
    return await start()


#: Marks a test that uses :func:`shared_offline` (it must run in the module's event loop).
shared = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_offline(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Running]:
    """One offline server for a module's tests that change nothing a test reads back
    (rejected requests, validation errors); saves uvicorn's ~0.2 s start and stop per test.
    Tests using it are marked :data:`shared`."""
    auth = StaticAuth(KEYS)
    app = create_app(make_config(tmp_path_factory.mktemp("shared")), authenticator=auth)
    async with serve(app) as url, AsyncExitStack() as clients:
        yield Running(url, app, auth, clients)


# --- scripted swarms -----------------------------------------------------------------------


def scripted_template(
    agents: Mapping[str, ScriptedAgent],
    *,
    targets: Mapping[str, list[str]] | None = None,
    entrypoint: str = "supervisor",
    name: str = "scripted",
    breakpoint_tools: list[str] | None = None,
    actions: list[MAILAction] | None = None,
    public: bool = False,
) -> MAILSwarmTemplate:
    """A swarm of scripted agents; the entrypoint can complete tasks and use ``actions``.

    Every caller's swarm shares the same agent objects (their factories return them).
    ``targets`` gives each agent's comm targets (default: every other agent).
    """
    names = list(agents)
    templates = [
        MAILAgentTemplate(
            agent_name,
            lambda _agent=agent, **_params: _agent,
            (targets or {}).get(agent_name, [n for n in names if n != agent_name]),
            list(actions or ()) if agent_name == entrypoint else [],
            {},
            enable_entrypoint=agent_name == entrypoint,
            can_complete_tasks=agent_name == entrypoint,
        )
        for agent_name, agent in agents.items()
    ]
    return MAILSwarmTemplate(
        name,
        "1.0.0",
        templates,
        list(actions or ()),
        entrypoint,
        breakpoint_tools=breakpoint_tools,
        description="scripted test swarm",
        keywords=["test"],
        public=public,
    )


def ask_human_action() -> MAILAction:
    """A breakpoint tool: the swarm pauses when an agent calls it (never executed)."""

    def never(_args: dict[str, Any]) -> str:
        raise AssertionError("a breakpoint tool is answered by the caller, not run")

    return MAILAction(
        "ask_human",
        "Ask the human a question.",
        {
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
        },
        never,
    )


def gated_swarm(gate: asyncio.Event) -> tuple[MAILSwarmTemplate, ScriptedAgent]:
    """supervisor -> worker (waits for ``gate``) -> supervisor -> task_complete."""

    def supervise(incoming: Incoming) -> ScriptedCall:
        if incoming.sender == "worker":
            return tc("task_complete", finish_message=f"done: {incoming.body}")
        return tc("send_request", target="worker", subject="job", body=incoming.body)

    def work(_incoming: Incoming) -> ScriptedCall:
        return tc("send_response", target="supervisor", subject="Re: job", body="worked")

    worker = ScriptedAgent(rule=work, gate=gate)
    template = scripted_template({"supervisor": ScriptedAgent(rule=supervise), "worker": worker})
    return template, worker


# --- server-sent events --------------------------------------------------------------------

_FRAME = re.compile(rb"(?:id: (\d+)\r\n)?event: ([a-z_]+)\r\ndata: ([^\r\n]*)\r\n")


@dataclass(frozen=True)
class Frame:
    """One SSE frame: its name, parsed data, ``id:`` (or None), and its raw bytes."""

    event: str
    data: dict[str, Any]
    id: int | None
    raw: bytes


def parse_frame(raw: bytes) -> Frame:
    """Parse one frame (without its terminating blank line), insisting on the exact framing."""
    match = _FRAME.fullmatch(raw + b"\r\n") if not raw.endswith(b"\r\n") else None
    assert match is not None, f"malformed SSE frame: {raw!r}"
    seq, name, text = match.groups()
    data = json.loads(text)
    assert isinstance(data, dict), raw
    return Frame(name.decode(), data, int(seq) if seq else None, raw)


async def frames(response: httpx.Response) -> AsyncIterator[Frame]:
    """The frames of a streaming response, as they arrive."""
    buffer = b""
    async for chunk in response.aiter_raw():
        buffer += chunk
        while b"\r\n\r\n" in buffer:
            raw, buffer = buffer.split(b"\r\n\r\n", 1)
            yield parse_frame(raw)
    assert buffer == b"", f"stream ended inside a frame: {buffer!r}"


async def read_stream(response: httpx.Response) -> list[Frame]:
    """Every frame of a streaming response, until the server closes it."""

    async def collect() -> list[Frame]:
        return [f async for f in frames(response)]

    return await within(collect())


def compact(value: Any) -> str:
    """The JSON text the server must send for ``value``."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True).replace("/", "\\/")
