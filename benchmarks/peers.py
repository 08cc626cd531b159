"""MAIL's server against its peers, in one run: ``mail server`` as users start it (a
process of its own, the offline swarm of the shipped ``swarms.json``) without a store, with
SQLite and with PostgreSQL (answers given once their task is committed), a minimal
``a2a-sdk`` server (in-memory) and a bare FastAPI route answering a constant (the floor),
all driven by one ``httpx`` client.

Each round runs, for every server in a rotating order, ``--chunk`` sequential requests,
then ``--chunk`` requests from ``--clients`` concurrent clients (``POST /message`` with
``{"body": ...}`` for MAIL and FastAPI, JSON-RPC ``SendMessage`` for the a2a-sdk server;
every answer checked), reading the server process's CPU time (``/proc``) before and after
each phase; then ``--streams`` streamed requests, timed to the first SSE line. The
figures are medians over the rounds, and the ratios to the minimal a2a-sdk server; the
machine's speed drifts, alternating keeps the ratios fair. A PostgreSQL server's own
backends are not in its CPU figure (they are printed apart).

Launch to first 200: each server started ``--launches`` times, alternated, from process
start until its first ``200`` (``GET /health``; the agent card for the a2a-sdk server),
its bytecode cached.

PostgreSQL: ``MAIL_BENCH_POSTGRES_URL`` or ``MAIL_TEST_POSTGRES_URL`` (an admin URL; a
throwaway database is made and dropped); without it, that server is left out.

With ``--against PATH``, another checkout's ``mail server`` (its ``.venv``) runs too,
without a store and with SQLite, as ``against`` and ``against+sqlite``.

    uv run python benchmarks/peers.py [--rounds 6] [--chunk 200] [--clients 20] [--against PATH]
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/http.py and a2a.py are named like modules this script imports: keep this
# directory off the path.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import asyncio
import itertools
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent
APPS = Path(__file__).resolve().parent / "_peer_apps.py"
WAIT = 60.0
_DROPPED = ("MAIL_", "SWARM_", "DATABASE_URL", "BASE_URL", "AUTH_ENDPOINT", "TOKEN_INFO_ENDPOINT")
_IDS = itertools.count(1)
QUESTION = "What is 12 * 7?"


@dataclass
class Peer:
    """A server: how to start it, where it answers 200 when up, how to ask it."""

    name: str
    command: list[str]
    env: dict[str, str]
    health: str
    kind: str  # "mail", "a2a" or "fastapi"
    cwd: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    key: str = ""
    cpu: dict[str, list[float]] = field(default_factory=dict)
    rate: dict[str, list[float]] = field(default_factory=dict)
    first_sse: list[float] = field(default_factory=list)
    launches: list[float] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1.0, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def launch(peer: Peer) -> float:
    """Start ``peer`` on a free port; the seconds until its first 200."""
    peer.port = _free_port()
    command = [part.replace("{port}", str(peer.port)) for part in peer.command]
    start = time.perf_counter()
    peer.process = subprocess.Popen(  # noqa: S603  # fixed arguments
        command, cwd=peer.cwd, env=peer.env, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    while not _healthy(peer.url + peer.health):  # a subprocess offers no other readiness signal
        if peer.process.poll() is not None or time.perf_counter() - start > WAIT:
            stop(peer)
            err = peer.process.stderr.read().decode() if peer.process.stderr else ""
            raise SystemExit(f"peers.py: {peer.name} did not start:\n{err[-2000:]}")
        time.sleep(0.002)
    return time.perf_counter() - start


def stop(peer: Peer) -> None:
    if peer.process is None or peer.process.poll() is not None:
        return
    peer.process.terminate()
    try:
        peer.process.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        peer.process.kill()
        peer.process.wait()


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _postgres(url: str, *statements: str) -> list[Any]:
    import asyncpg

    async def run() -> list[Any]:
        conn = await asyncpg.connect(url, timeout=5)
        try:
            for statement in statements[:-1]:
                await conn.execute(statement)
            return list(await conn.fetch(statements[-1]))
        finally:
            await conn.close()

    return asyncio.run(run())


# --- the servers -------------------------------------------------------------------------------


def mail_peer(
    name: str, root: Path, store: str, database_url: str = "", checkout: Path = ROOT
) -> Peer:
    """``mail server`` of ``checkout`` (its ``.venv``; the offline swarm) with its data in
    ``root/name``."""
    data = root / name
    data.mkdir()
    config = root / "mail.toml"
    config.write_text(
        '[server]\naccess_log = false\n\n[server.swarm]\nname = "offline"\n'
        f'source = "{ROOT / "swarms.json"}"\n',
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)} | {
        "MAIL_DATA_DIR": str(data),
        "MAIL_LOG_LEVEL": "WARNING",
        "MAIL_CONFIG_PATH": str(config),
        "SWARM_REGISTRY_FILE": str(data / "registry.json"),
    }
    if store == "postgres":
        env["DATABASE_URL"] = database_url
    python = sys.executable
    if checkout != ROOT:  # its bytecode kept apart, nothing written in that checkout
        python = str(checkout / ".venv" / "bin" / "python")
        env["PYTHONPYCACHEPREFIX"] = str(root / "pycache-against")
    command = [python, "-m", "mail.cli", "server", "-p", "{port}", "-H", "127.0.0.1"]
    command += ["--no-persist"] if store == "memory" else []
    return Peer(name, command, env, "/health", "mail", data)


def app_peer(name: str, kind: str, root: Path) -> Peer:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    health = "/.well-known/agent-card.json" if kind == "a2a" else "/health"
    return Peer(name, [sys.executable, str(APPS), kind, "{port}"], env, health, kind, root)


def user_key(peer: Peer) -> str:
    """A user key made with the admin key ``mail server`` wrote at its first start."""
    keys = json.loads((peer.cwd / "credentials.json").read_text(encoding="utf-8"))["keys"]
    admin = next(k["key"] for k in keys if k["role"] == "admin")
    made = httpx.post(
        f"{peer.url}/keys",
        json={"role": "user", "id": "bench"},
        headers={"Authorization": f"Bearer {admin}"},
        trust_env=False,
    )
    key: str = made.raise_for_status().json()["key"]
    return key


# --- requests ----------------------------------------------------------------------------------


def _rpc(method: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": next(_IDS),
        "method": method,
        "params": {
            "message": {
                "role": "ROLE_USER",
                "messageId": f"m-{next(_IDS)}",
                "parts": [{"text": QUESTION}],
            }
        },
    }


async def ask(http: httpx.AsyncClient, peer: Peer) -> None:
    """One request, its answer checked."""
    if peer.kind == "a2a":
        answer = (await http.post(peer.url + "/", json=_rpc("SendMessage"))).json()
        task = answer["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", answer
        return
    response = await http.post(peer.url + "/message", json={"body": QUESTION})
    answer = response.json()
    assert response.status_code == 200 and answer["status"] == "completed", answer
    if peer.kind == "mail":
        assert "84" in answer["response"], answer


async def first_event(http: httpx.AsyncClient, peer: Peer) -> float:
    """Seconds from the request to the stream's first ``event:`` or ``data:`` line (the
    stream then read to its end)."""
    if peer.kind == "a2a":
        request = ("POST", peer.url + "/", _rpc("SendStreamingMessage"))
    elif peer.kind == "mail":
        request = ("POST", peer.url + "/message", {"body": QUESTION, "stream": True})
    else:
        request = ("POST", peer.url + "/stream", {"body": QUESTION})
    start = time.perf_counter()
    first = 0.0
    async with http.stream(request[0], request[1], json=request[2]) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if not first and line.startswith(("event:", "data:")):
                first = time.perf_counter() - start
    assert first, f"{peer.name}: no event"
    return first


async def phase(http: httpx.AsyncClient, peer: Peer, n: int, clients: int) -> tuple[float, float]:
    """``n`` requests from ``clients`` concurrent clients: requests/s, server CPU seconds
    per request."""
    assert peer.process is not None
    counter = iter(range(n))

    async def client() -> None:
        for _ in counter:
            await ask(http, peer)

    cpu = process_cpu(peer.process.pid)
    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - start
    return n / wall, (process_cpu(peer.process.pid) - cpu) / n


async def drive(peers: list[Peer], args: argparse.Namespace) -> None:
    clients = {
        peer.name: httpx.AsyncClient(
            headers={"Authorization": f"Bearer {peer.key}"} if peer.key else {"A2A-Version": "1.0"},
            limits=httpx.Limits(max_connections=100, max_keepalive_connections=100),
            timeout=WAIT,
            trust_env=False,
        )
        for peer in peers
    }
    phases: dict[str, Callable[[httpx.AsyncClient, Peer], Awaitable[tuple[float, float]]]] = {
        "sequential": lambda http, peer: phase(http, peer, args.chunk, 1),
        f"{args.clients} clients": lambda http, peer: phase(http, peer, args.chunk, args.clients),
    }
    try:
        for peer in peers:  # warm up: the caller's runtime, the connections
            await phase(clients[peer.name], peer, 50, args.clients)
            for name in phases:
                peer.rate[name], peer.cpu[name] = [], []
        for r in range(args.rounds):
            for peer in peers[r % len(peers) :] + peers[: r % len(peers)]:
                for name, run in phases.items():
                    rate, cpu = await run(clients[peer.name], peer)
                    peer.rate[name].append(rate)
                    peer.cpu[name].append(cpu)
                for _ in range(args.streams):
                    peer.first_sse.append(await first_event(clients[peer.name], peer))
            print(f"  round {r + 1}/{args.rounds} done", flush=True)
    finally:
        for http in clients.values():
            await http.aclose()


# --- the report --------------------------------------------------------------------------------


def table(peers: list[Peer], args: argparse.Namespace) -> None:
    ref = next((p for p in peers if p.kind == "a2a"), peers[0])
    rows: list[tuple[str, Callable[[Peer], float], str, bool]] = []
    for name in ref.rate:
        rows.append(
            (f"requests/s, {name}", lambda p, n=name: statistics.median(p.rate[n]), ",.0f", True)
        )
    for name in ref.cpu:
        rows.append(
            (
                f"server CPU/request µs, {name}",
                lambda p, n=name: statistics.median(p.cpu[n]) * 1e6,
                ",.0f",
                False,
            )
        )
    if args.streams:
        rows.append(
            (
                "first SSE event ms (p50)",
                lambda p: statistics.median(p.first_sse) * 1e3,
                ".2f",
                False,
            )
        )
    if args.launches:
        rows.append(
            ("launch to first 200 s", lambda p: statistics.median(p.launches), ".2f", False)
        )
    width = max(len(p.name) for p in peers) + 2
    print(f"\n{'':34}" + "".join(f"{p.name:>{width + 8}}" for p in peers))
    for label, value, fmt, higher in rows:
        base = value(ref)
        cells = []
        for p in peers:
            v = value(p)
            ratio = v / base if higher else base / v if v else 0.0
            cells.append(f"{format(v, fmt):>{width}} x{ratio:4.2f} ")
        print(f"{label:34}" + "".join(f"{c:>{width + 8}}" for c in cells))
    print(
        f"\n(x: how many times as good as {ref.name}: its rate over the other's for rates, "
        "the other's time over its for times)"
    )
    bare = {p.name: p for p in peers if p.kind == "mail" and "+" not in p.name}
    for p in peers:
        base = bare.get(p.name.split("+")[0])
        if p.kind != "mail" or base is None or base is p:
            continue
        for name in p.cpu:
            extra = statistics.median(p.cpu[name]) - statistics.median(base.cpu[name])
            print(
                f"{p.name} CPU per request above {base.name} (no store), {name}: {extra * 1e6:+,.0f} µs"
            )


@contextmanager
def postgres_database() -> Iterator[str]:
    admin = os.environ.get("MAIL_BENCH_POSTGRES_URL") or os.environ.get("MAIL_TEST_POSTGRES_URL")
    if not admin:
        yield ""
        return
    name = f"mail_bench_peers_{os.getpid()}"
    _postgres(admin, f'CREATE DATABASE "{name}"')
    try:
        yield urlsplit(admin)._replace(path=f"/{name}").geturl()
    finally:
        _postgres(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main(args: argparse.Namespace) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="mail-bench-peers-") as tmp,
        postgres_database() as pg_url,
        ExitStack() as stack,
    ):
        root = Path(tmp)
        peers = [mail_peer("mail", root, "memory"), mail_peer("mail+sqlite", root, "sqlite")]
        if pg_url and not args.no_postgres:
            peers.append(mail_peer("mail+pg", root, "postgres", pg_url))
        if args.against is not None:
            against = args.against.resolve()
            peers += [
                mail_peer("against", root, "memory", checkout=against),
                mail_peer("against+sqlite", root, "sqlite", checkout=against),
            ]
        peers += [app_peer("a2a-sdk", "a2a", root), app_peer("fastapi", "fastapi", root)]
        peers = [p for p in peers if not args.only or p.name in args.only]
        load = os.getloadavg()
        print(f"# {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        if args.launches:
            for peer in peers:  # the first launch writes the bytecode cache
                launch(peer)
                stop(peer)
            for r in range(args.launches):
                for peer in peers[r % len(peers) :] + peers[: r % len(peers)]:
                    peer.launches.append(launch(peer))
                    stop(peer)
        for peer in peers:
            launch(peer)
            stack.callback(stop, peer)
            if peer.kind == "mail":
                peer.key = user_key(peer)
        asyncio.run(drive(peers, args))
        load = os.getloadavg()
        print(f"# load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        table(peers, args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--chunk", type=int, default=200)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--streams", type=int, default=20, help="streams per server and round")
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument(
        "--against",
        type=Path,
        metavar="PATH",
        help="also another checkout's mail server (its .venv), no store and SQLite",
    )
    parser.add_argument("--only", nargs="*", help="only these servers (by name)")
    main(parser.parse_args())
