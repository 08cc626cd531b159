"""Round trip and throughput of interswarm requests between two local MAIL servers.

Two servers on 127.0.0.1, swarms ``alpha`` and ``beta``, registered with each other over
HTTP (``POST /swarms``, each with the agent key the other gives it). Workload per task:
``POST /message`` on alpha -> alpha's supervisor ``send_request`` to ``weather@beta``
(``POST /interswarm/forward``) -> beta's weather ``send_response`` to
``supervisor@alpha`` (``POST /interswarm/back``) -> alpha's supervisor ``task_complete``
(and a ``::task_complete::`` notice to beta, ``POST /interswarm/back``). Every answer is
checked. Measures, after a warm-up:

* the same task with a LOCAL worker instead of ``weather@beta`` (the baseline);
* cross-swarm round trip: sequential tasks, p50/p99 latency and tasks/s;
* 20 concurrent cross-swarm tasks (20 clients on one user key): tasks/s, p50/p99.

By default both servers run in this process, on the client's event loop; with
``--processes`` each runs in its own child process (three processes on the machine).

    uv run python benchmarks/interswarm.py [--processes] [--tasks 500] [--loop uvloop]
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/http.py is named like the standard library's ``http``: keep this directory off
# the path, or aiohttp would import it.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import uvicorn

from mail import MAILAgentTemplate, MAILSwarmTemplate
from mail.config import load_config
from mail.server import create_app
from mail.testing import Incoming, ScriptedAgent, StaticAuth, tc
from mail.testing.server import ServerProcess, start

ADMIN_KEY = "bench-admin"
USER_KEY = "bench-user"
PEERS = {"alpha": "beta", "beta": "alpha"}
#: Bound on any single wait (a request, a server start).
WAIT = 30.0


def agent_key(sender: str, receiver: str) -> str:
    return f"{sender}-to-{receiver}"


# --- the swarms --------------------------------------------------------------------------------


def _supervisor(incoming: Incoming):  # type: ignore[no-untyped-def]
    if incoming.sender_type == "user":
        target = "worker" if incoming.body.startswith("local:") else "weather@beta"
        return tc("send_request", target=target, subject="job", body=incoming.body)
    return tc("task_complete", finish_message=incoming.body)


def _answer(incoming: Incoming):  # type: ignore[no-untyped-def]
    return tc(
        "send_response", target=incoming.sender, subject="done", body="answer:" + incoming.body
    )


def _agent(name: str, rule: Any, targets: list[str], entry: bool = False) -> MAILAgentTemplate:
    return MAILAgentTemplate(
        name,
        lambda **_params: ScriptedAgent(rule=rule, record=False),
        targets,
        [],
        {},
        enable_entrypoint=entry,
        enable_interswarm=True,
        can_complete_tasks=entry,
    )


def template(name: str) -> MAILSwarmTemplate:
    if name == "alpha":
        agents = [
            _agent("supervisor", _supervisor, ["worker", "weather@beta"], entry=True),
            _agent("worker", _answer, ["supervisor"]),
        ]
    else:
        agents = [
            _agent("supervisor", _answer, ["weather"], entry=True),
            _agent("weather", _answer, ["supervisor", "supervisor@alpha"]),
        ]
    return MAILSwarmTemplate(name, "1.0.0", agents, [], "supervisor", enable_interswarm=True)


def build_server(name: str, data_dir: Path) -> uvicorn.Server:
    overrides = {
        "server": {
            "data_dir": str(data_dir),
            "swarm": {"registry": str(data_dir / "registry.json")},
            "settings": {"print_llm_streams": False},
        }
    }
    config = load_config(None, env={}, search=False, overrides=overrides)
    auth = StaticAuth(
        {
            ADMIN_KEY: ("admin", "admin"),
            USER_KEY: ("user", "bench"),
            agent_key(PEERS[name], name): ("agent", PEERS[name]),
        }
    )
    app = create_app(config, template=template(name), authenticator=auth)
    return uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=0,
            http="httptools",
            log_level="warning",
            access_log=False,
            lifespan="on",
        )
    )


async def _serve_child(name: str, data_dir: Path) -> None:
    """``--serve NAME DIR``: run one server until SIGTERM, announcing its URL on stdout."""
    server = build_server(name, data_dir)
    task, url = await start(server, WAIT)
    print(url, flush=True)
    await task


def server_process(name: str, data_dir: Path, loop: str) -> ServerProcess:
    """One benchmark server in a child process (``--serve NAME DIR``)."""
    argv = [sys.executable, __file__, "--serve", name, str(data_dir), "--loop", loop]
    return ServerProcess(argv, timeout=WAIT)


# --- the client --------------------------------------------------------------------------------


async def link(session: aiohttp.ClientSession, urls: dict[str, str]) -> None:
    """Register each server on the other, over HTTP, with the key the other accepts."""
    for name, peer in PEERS.items():
        body = {
            "name": peer,
            "base_url": urls[peer],
            "auth_token": agent_key(name, peer),
            "volatile": True,
        }
        headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
        async with session.post(f"{urls[name]}/swarms", json=body, headers=headers) as response:
            if response.status != 200:
                raise RuntimeError(f"registering {peer} on {name}: {await response.text()}")


async def _one(session: aiohttp.ClientSession, url: str, body: str) -> float:
    start = time.perf_counter()
    async with session.post(url, json={"body": body}) as response:
        answer = await response.json()
    elapsed = time.perf_counter() - start
    if answer.get("response") != "answer:" + body or answer.get("status") != "completed":
        raise AssertionError(f"task {body!r} answered {answer!r}")
    return elapsed


def report(label: str, n: int, wall: float, latencies: list[float]) -> None:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1e3
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e3
    print(f"{label:<40} {n / wall:>8,.0f} tasks/s  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms")


async def sequential(
    session: aiohttp.ClientSession, url: str, n: int, tag: str, label: str
) -> None:
    start = time.perf_counter()
    latencies = [await _one(session, url, f"{tag}{i}") for i in range(n)]
    report(label, n, time.perf_counter() - start, latencies)


async def concurrent(
    session: aiohttp.ClientSession, url: str, n: int, clients: int, tag: str, label: str
) -> None:
    latencies: list[float] = []
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            latencies.append(await _one(session, url, f"{tag}{i}"))

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    report(label, n, time.perf_counter() - start, latencies)


async def measure(urls: dict[str, str], args: argparse.Namespace) -> None:
    async with aiohttp.ClientSession(
        headers={"Authorization": f"Bearer {USER_KEY}"},
        connector=aiohttp.TCPConnector(limit=100),
        timeout=aiohttp.ClientTimeout(total=WAIT),
    ) as session:
        await link(session, urls)
        message = f"{urls['alpha']}/message"
        await sequential(session, message, 50, "warm", "warm-up, sequential")
        await concurrent(session, message, 100, args.clients, "warmc", "warm-up, concurrent")
        await sequential(
            session, message, args.tasks, "local:", f"local worker, sequential ({args.tasks})"
        )
        await sequential(
            session, message, args.tasks, "s", f"cross-swarm, sequential ({args.tasks})"
        )
        await concurrent(
            session,
            message,
            args.concurrent_tasks,
            args.clients,
            "c",
            f"cross-swarm, {args.clients} concurrent ({args.concurrent_tasks})",
        )


async def in_process(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="mail-bench-isw-") as data_dir:
        servers = {name: build_server(name, Path(data_dir) / name) for name in PEERS}
        started = {name: await start(server, WAIT) for name, server in servers.items()}
        try:
            await measure({name: url for name, (_, url) in started.items()}, args)
        finally:
            for server in servers.values():
                server.should_exit = True
            await asyncio.gather(*(task for task, _ in started.values()))


async def in_processes(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="mail-bench-isw-") as data_dir:
        children = [server_process(name, Path(data_dir) / name, args.loop) for name in PEERS]
        try:
            await measure({name: c.url for name, c in zip(PEERS, children, strict=True)}, args)
        finally:
            for child in children:
                child.close()


def _run(main: Callable[[], Awaitable[None]], loop: str) -> None:
    if loop == "uvloop":
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", action="store_true", help="one child process per server")
    parser.add_argument("--tasks", type=int, default=500, help="sequential tasks per figure")
    parser.add_argument("--concurrent-tasks", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    parser.add_argument("--serve", nargs=2, metavar=("NAME", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        name, data_dir = args.serve
        _run(lambda: _serve_child(name, Path(data_dir)), args.loop)
        return
    where = "child processes" if args.processes else "in-process"
    print(f"interswarm benchmark: two servers ({where}), loop {args.loop}")
    _run(lambda: (in_processes if args.processes else in_process)(args), args.loop)


if __name__ == "__main__":
    main()
