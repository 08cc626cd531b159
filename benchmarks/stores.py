"""The HTTP benchmark's workload against servers with different stores, interleaved.

benchmarks/http.py measures one server at a time: on a VM whose speed drifts by a third
within minutes, two runs a minute apart compare the VM's states as much as the stores.
This script starts one server per store and drives them in turns: a chunk of tasks
to each server in a rotating order, each chunk timed until the server's ``/health``
reports no unsaved tasks (the store's catch-up counts), for many rounds. Every store
sees the same mix of the VM's states, so the ratios to the memory store hold still.

The servers run in this process, on the client's event loop, as ``benchmarks/http.py``
runs by default: client and server share one core, and a store's own processes (the
SQLite writer, PostgreSQL's backends) have the other. ``--server-process`` runs each in a
child process instead (as ``benchmarks/http.py --server-process``): the load generator
then shares the second core with the store's processes.

Phases: sequential ``POST /message`` (one client), then ``--clients`` concurrent clients
on one API key. Prints tasks/s per store and phase, the ratio to the memory store (with
the spread of the per-round ratios) and, with ``--server-process``, the server's CPU per
task.

    uv run python benchmarks/stores.py [--stores memory,sqlite,postgres] [--rounds 12]
        [--chunk 250] [--clients 20] [--postgres postgresql://postgres@127.0.0.1/postgres]
        [--server-process]

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
    ``benchmarks/http.py`` runs by default), or in a child process (``--serve``)."""

    def __init__(self, store: str) -> None:
        self.store = store
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
            if in_process:
                data = tempfile.TemporaryDirectory(prefix="mail-bench-")
                server = bench_http.build_server(Path(data.name))
                task, self.url = await bench_http.start(server, bench_http.WAIT)

                async def close() -> None:
                    server.should_exit = True
                    await task
                    data.cleanup()

                self._close = close
                return
            process, data = bench_http.server_process(loop)
        self.url = process.url
        self.cpu = bench_http.process_cpu(process.proc.pid)

        async def stop() -> None:
            process.close()
            data.cleanup()

        self._close = stop

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
                    raise AssertionError(f"{server.store}: {r.status} {data}")

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


def _report(servers: list[Server], phases: list[str]) -> None:
    base = servers[0]
    for name in phases:
        print(f"{name}:")
        for s in servers:
            rate = s.tasks[name] / s.elapsed[name]
            line = f"  {s.store:<9} {rate:>7,.0f} tasks/s"
            if name in s.cpu_used:
                line += f"  server CPU {s.cpu_used[name] / s.tasks[name] * 1e6:5.0f} µs/task"
            if s is not base:
                ratios = [a / b for a, b in zip(s.rounds[name], base.rounds[name], strict=True)]
                q = statistics.quantiles(ratios, n=4)
                line += (
                    f"  ratio {rate / (base.tasks[name] / base.elapsed[name]):.2f}"
                    f" (rounds: median {statistics.median(ratios):.2f},"
                    f" quartiles {q[0]:.2f}-{q[2]:.2f})"
                )
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
    if stores[0] != "memory":
        raise SystemExit("the first store is the one the others are compared with: memory")
    database_url = os.environ.get("MAIL_BENCH_DATABASE_URL")
    drop = None
    if "postgres" in stores and database_url is None:
        if args.postgres is None:
            raise SystemExit("postgres needs --postgres ADMIN_URL or MAIL_BENCH_DATABASE_URL")
        database_url, drop = await _throwaway_database(args.postgres)
    servers: list[Server] = []
    try:
        for store in stores:
            server = Server(store)
            servers.append(server)
            url = database_url if store == "postgres" else None
            await server.open(args.loop, url, in_process=not args.server_process)
        where = "child processes" if args.server_process else "this process"
        print(
            f"# {len(servers)} servers ({', '.join(stores)}) in {where}, loop {args.loop}, "
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
    parser.add_argument(
        "--server-process",
        action="store_true",
        help="each server in a child process (default: in this process, as benchmarks/http.py)",
    )
    arguments = parser.parse_args()
    if arguments.loop == "uvloop":
        import uvloop

        uvloop.run(main(arguments))
    else:
        asyncio.run(main(arguments))
