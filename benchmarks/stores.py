"""The HTTP benchmark's workload against several servers, interleaved: stores, or two
versions of the code.

On a VM whose speed drifts within minutes, two runs a minute apart compare the VM's states
as much as the servers. This script starts every server first and drives them in turns:
a chunk of tasks to each server in a rotating order, each chunk timed until the server's
``/health`` reports no unsaved tasks (the store's catch-up counts), for many rounds. Every
server sees the same mix of the VM's states, so their ratios hold still.

``--stores`` picks the stores (``memory``, ``sqlite``, ``postgres``); ``--against PATH``
adds, for each store, a server of another checkout (a ``git worktree`` of an earlier
commit, say, with its own ``.venv``: ``uv sync`` there first), run by that checkout's
Python and ``benchmarks/http.py --serve``. Servers run in this process, on the client's
event loop (as ``benchmarks/http.py`` runs by default), or each in a child process with
``--server-process`` (always with ``--against``: both versions alike).

Phases: sequential ``POST /message`` (one client), then ``--clients`` concurrent clients
on one API key. Prints tasks/s per server and phase, the ratio to the first server (and,
with ``--against``, of each store's server to the other checkout's) with the spread of the
per-round ratios, and, for child processes, the server's CPU per task.

    uv run python benchmarks/stores.py [--stores memory,sqlite,postgres] [--rounds 12]
        [--chunk 250] [--clients 20] [--postgres postgresql://postgres@127.0.0.1/postgres]
        [--server-process] [--against ../other-checkout]

PostgreSQL: ``--postgres ADMIN_URL`` creates a throwaway database there (dropped at the
end); ``MAIL_BENCH_DATABASE_URL`` names an existing one instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/http.py is named like the standard library's ``http``: keep this directory off
# the path.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import asyncio
import importlib.util
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from unittest import mock
from urllib.parse import urlsplit, urlunsplit

import aiohttp

HERE = Path(__file__).resolve().parent


def _load_http_benchmark() -> Any:
    """benchmarks/http.py as a module (its name would shadow the standard library's)."""
    spec = importlib.util.spec_from_file_location("bench_http", HERE / "http.py")
    if spec is None or spec.loader is None:
        raise SystemExit("cannot load benchmarks/http.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: its server (``--serve``), API key, bounded wait and /proc CPU reader
bench_http = _load_http_benchmark()


def _store_env(store: str, database_url: str | None) -> dict[str, str]:
    env = {"MAIL_BENCH_STORE": store}
    if database_url is not None:
        env["MAIL_BENCH_DATABASE_URL"] = database_url
    return env


class Server:
    """One benchmark server with ``store``: in this process, on its event loop (as
    ``benchmarks/http.py`` runs by default), or in a child process (``--serve``) of this
    checkout or of ``tree``."""

    def __init__(self, store: str, tree: Path | None = None) -> None:
        self.store = store
        self.tree = tree
        self.label = store if tree is None else f"{store}@{tree.name}"
        self.url = ""
        #: the server process's CPU seconds so far (``None`` in process)
        self.cpu: Callable[[], float] | None = None
        self.elapsed: dict[str, float] = {}
        self.cpu_used: dict[str, float] = {}
        self.tasks: dict[str, int] = {}
        self.rounds: dict[str, list[float]] = {}
        self._close: Callable[[], Awaitable[None]] | None = None

    async def open(self, loop: str, database_url: str | None, *, in_process: bool) -> None:
        # build_server (and the server process) read the store from the environment
        with mock.patch.dict(os.environ, _store_env(self.store, database_url)):
            if in_process and self.tree is None:
                data = tempfile.TemporaryDirectory(prefix="mail-bench-")
                server = bench_http.build_server(Path(data.name))
                task, self.url = await bench_http.start(server, bench_http.WAIT)

                async def close() -> None:
                    server.should_exit = True
                    await task
                    data.cleanup()

                self._close = close
                return
            process, data = self._process(loop)
        self.url = process.url
        self.cpu = bench_http.process_cpu(process.proc.pid)

        async def stop() -> None:
            process.close()
            data.cleanup()

        self._close = stop

    def _process(self, loop: str) -> tuple[Any, tempfile.TemporaryDirectory[str]]:
        if self.tree is None:
            return bench_http.server_process(loop)  # type: ignore[no-any-return]
        from mail.testing.server import ServerProcess

        data = tempfile.TemporaryDirectory(prefix="mail-bench-")
        python = self.tree / ".venv" / "bin" / "python"
        script = self.tree / "benchmarks" / "http.py"
        argv = [str(python), str(script), "--serve", data.name, "--loop", loop]
        return ServerProcess(argv, timeout=bench_http.WAIT), data

    async def close(self) -> None:
        if self._close is not None:
            await self._close()


async def _chunk(session: aiohttp.ClientSession, server: Server, n: int, clients: int) -> float:
    """Run ``n`` tasks on ``server`` with ``clients`` concurrent clients until stored;
    return the seconds taken."""
    counter = iter(range(n))

    async def client() -> None:
        for i in counter:
            body = f"q{uuid.uuid4().hex[:8]}{i}"
            async with session.post(server.url + "/message", json={"body": body}) as r:
                data: dict[str, Any] = await r.json()
                if data.get("response") != "answer:" + body or data.get("status") != "completed":
                    raise AssertionError(f"{server.label}: {r.status} {data}")

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    while True:  # the store catches up: its time counts
        async with session.get(server.url + "/health") as r:
            if not (await r.json()).get("unsaved_tasks"):
                break
        await asyncio.sleep(0.002)
    return time.perf_counter() - start


async def _phase(
    session: aiohttp.ClientSession, servers: list[Server], name: str, args: argparse.Namespace
) -> None:
    clients = 1 if name == "sequential" else args.clients
    for server in servers:  # warm-up, not counted
        await _chunk(session, server, args.chunk, clients)
    for r in range(args.rounds):
        k = r % len(servers)
        for server in servers[k:] + servers[:k]:  # rotating order
            cpu = server.cpu
            before = cpu() if cpu is not None else 0.0
            seconds = await _chunk(session, server, args.chunk, clients)
            if cpu is not None:
                server.cpu_used[name] = server.cpu_used.get(name, 0.0) + cpu() - before
            server.elapsed[name] = server.elapsed.get(name, 0.0) + seconds
            server.tasks[name] = server.tasks.get(name, 0) + args.chunk
            server.rounds.setdefault(name, []).append(args.chunk / seconds)


def _ratio(s: Server, base: Server, name: str) -> str:
    rate, base_rate = s.tasks[name] / s.elapsed[name], base.tasks[name] / base.elapsed[name]
    ratios = [a / b for a, b in zip(s.rounds[name], base.rounds[name], strict=True)]
    q = statistics.quantiles(ratios, n=4)
    return (
        f"{rate / base_rate:.2f} of {base.label}"
        f" (rounds: median {statistics.median(ratios):.2f}, quartiles {q[0]:.2f}-{q[2]:.2f})"
    )


def _report(servers: list[Server], phases: list[str]) -> None:
    first = servers[0]
    for name in phases:
        print(f"{name}:")
        for s in servers:
            rate = s.tasks[name] / s.elapsed[name]
            line = f"  {s.label:<22} {rate:>7,.0f} tasks/s"
            if name in s.cpu_used:
                line += f"  server CPU {s.cpu_used[name] / s.tasks[name] * 1e6:5.0f} µs/task"
            other = next((o for o in servers if o.store == s.store and o.tree), None)
            if s.tree is None and other is not None:
                line += "  " + _ratio(s, other, name)
            elif s is not first and s.tree is None:
                line += "  " + _ratio(s, first, name)
            print(line)


async def _throwaway_database(admin_url: str) -> tuple[str, Callable[[], Any]]:
    import asyncpg  # type: ignore[import-untyped]  # only with --postgres

    name = f"mail_bench_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()

    async def drop() -> None:
        conn = await asyncpg.connect(admin_url)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()

    parts = urlsplit(admin_url)
    return urlunsplit(parts._replace(path="/" + name)), drop


async def main(args: argparse.Namespace) -> None:
    stores = args.stores.split(",")
    against: Path | None = args.against
    database_url = os.environ.get("MAIL_BENCH_DATABASE_URL")
    drop = None
    if "postgres" in stores and database_url is None:
        if args.postgres is None:
            raise SystemExit("postgres needs --postgres ADMIN_URL or MAIL_BENCH_DATABASE_URL")
        database_url, drop = await _throwaway_database(args.postgres)
    servers: list[Server] = []
    try:
        in_process = not (args.server_process or against)
        for store in stores:
            for tree in (None, against) if against else (None,):
                server = Server(store, tree)
                servers.append(server)
                url = database_url if store == "postgres" else None
                await server.open(args.loop, url, in_process=in_process)
        where = "this process" if in_process else "child processes"
        labels = ", ".join(s.label for s in servers)
        print(
            f"# {len(servers)} servers ({labels}) in {where}, loop {args.loop}, "
            f"{args.rounds} rounds of {args.chunk} tasks each; Python "
            f"{sys.version.split()[0]}, {os.cpu_count()} CPUs"
        )
        headers = {"Authorization": f"Bearer {bench_http.API_KEY}"}
        timeout = aiohttp.ClientTimeout(total=bench_http.WAIT)
        connector = aiohttp.TCPConnector(limit=100)
        async with aiohttp.ClientSession(
            headers=headers, timeout=timeout, connector=connector
        ) as session:
            phases = ["sequential", f"{args.clients} clients"]
            for name in phases:
                await _phase(session, servers, name, args)
        _report(servers, phases)
    finally:
        for server in servers:
            await server.close()
        if drop is not None:
            await drop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="memory,sqlite")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--chunk", type=int, default=250)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="uvloop")
    parser.add_argument("--postgres", metavar="ADMIN_URL", help="create a throwaway database")
    parser.add_argument("--against", metavar="PATH", help="also run another checkout's servers")
    parser.add_argument(
        "--server-process",
        action="store_true",
        help="each server in a child process (default: in this process, as benchmarks/http.py)",
    )
    arguments = parser.parse_args()
    if arguments.against:
        arguments.against = Path(arguments.against).resolve()
        if not (arguments.against / ".venv" / "bin" / "python").exists():
            raise SystemExit(f"{arguments.against}: no .venv (run `uv sync` there first)")
    if arguments.loop == "uvloop":
        import uvloop

        uvloop.run(main(arguments))
    else:
        asyncio.run(main(arguments))
