"""HTTP throughput, latency and start-up time of the MAIL server with a scripted swarm.

Workload per task (as in benchmarks/runtime.py): ``POST /message`` -> supervisor
(send_request) -> worker (send_response) -> supervisor (task_complete); every answer is
checked. Measures:

* 1,000 sequential ``POST /message`` (tasks/s, p50/p99 latency);
* 1,000 tasks from 20 concurrent clients on ONE API key (tasks/s, p50/p99);
* with a store (``MAIL_BENCH_STORE``), both phases end when ``/health`` reports no unsaved
  tasks: the time the store takes to catch up counts;
* first SSE event: request start to the first ``event:`` frame of ``stream: true`` (p50/p99
  over 200 streams, each read to its checked ``task_complete``);
* launch to healthy: ``mail server`` (the shipped ``mail.toml``, offline swarm) started as a
  subprocess until ``GET /health`` answers 200 (median of 5), with the bytecode of its
  imports cached (as on every launch after the first) and without (each launch compiles);
* ``mail --help`` wall time (median of 10).

``--metrics-compare ROUNDS`` measures instead what ``[server.metrics]`` costs: two servers
in this process, metrics off and on, run the sequential and concurrent phases in
alternating order for ``ROUNDS`` rounds (so that the machine's load falls on both alike);
the medians of each and their difference are printed.

The server runs in this process on the client's event loop by default (``--in-process``) or
in a child process (``--server-process``: client and server then share neither the GIL nor
the loop). On the 2-core VM of benchmarks/README.md the child process was not faster, so
in-process is the default. uvicorn with httptools; ``--loop`` picks asyncio or uvloop for
both; the client is one keep-alive aiohttp session (``--client httpx`` for comparison).

    uv run python benchmarks/http.py [--server-process] [--loop uvloop] [--client httpx]
    uv run python benchmarks/http.py --metrics-compare 6 --tasks 500
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file is named like the standard library's ``http``: keep its directory off the path.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import asyncio
import gc
import importlib.util
import os
import platform
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import httpx
import uvicorn

from mail import MAILAgentTemplate, MAILSwarmTemplate
from mail.config import load_config
from mail.server import create_app
from mail.testing import StaticAuth
from mail.testing.server import ServerProcess, start

ROOT = Path(__file__).resolve().parent.parent
API_KEY = "bench-user-key"
TURNS_PER_TASK = 3
#: Bound on any single wait (a request, a stream, a server start).
WAIT = 30.0


# --- the server --------------------------------------------------------------------------------


def _load_agents() -> Any:
    """benchmarks/_agents.py, the agents every benchmark runs (this directory is kept off
    the path, see above)."""
    spec = importlib.util.spec_from_file_location("_agents", Path(__file__).parent / "_agents.py")
    if spec is None or spec.loader is None:
        raise SystemExit("cannot load benchmarks/_agents.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


agents = _load_agents()


def _template() -> MAILSwarmTemplate:
    def factory(rule: Any) -> Any:
        return lambda **_params: agents.agent(rule)

    supervisor = MAILAgentTemplate(
        "supervisor",
        factory(agents.supervisor),
        ["worker"],
        [],
        {},
        enable_entrypoint=True,
        can_complete_tasks=True,
    )
    worker = MAILAgentTemplate("worker", factory(agents.worker), ["supervisor"], [], {})
    return MAILSwarmTemplate("bench", "1.0.0", [supervisor, worker], [], "supervisor")


def settle_after_start_up() -> None:
    """What this checkout's ``mail server`` does once its app is built (``run_server``):
    freeze what start-up left (``gc.freeze()``), or, in a checkout from before the
    simplification, apply its collector policy (``mail.settle_gc``). Two versions compared
    then each run as their ``mail server`` runs."""
    try:
        from mail import settle_gc  # type: ignore[attr-defined]
    except ImportError:
        gc.freeze()
    else:
        settle_gc()


def build_server(
    data_dir: Path, *, metrics: bool = False, telemetry: str | None = None
) -> uvicorn.Server:
    # MAIL_BENCH_STORE=sqlite keeps tasks in <data_dir>/mail.db; default: memory only
    store = os.environ.get("MAIL_BENCH_STORE", "memory")
    database: dict[str, Any] = {"persist": store != "memory"}
    if store == "sqlite":
        database["sqlite_path"] = str(data_dir / "mail.db")
    elif store == "postgres":
        database["url"] = os.environ["MAIL_BENCH_DATABASE_URL"]
    config = load_config(
        None,
        env={},
        search=False,
        overrides={
            "server": {
                "data_dir": str(data_dir),
                "metrics": {"enabled": metrics},
                # traces exported over OTLP/HTTP to ``telemetry`` (benchmarks/telemetry.py)
                "telemetry": {"enabled": telemetry is not None, "endpoint": telemetry},
            },
            "database": database,
        },
    )
    app = create_app(
        config, template=_template(), authenticator=StaticAuth({API_KEY: ("user", "bench")})
    )
    settle_after_start_up()
    # The event loop is the one running serve() (see _run), not uvicorn's choice.
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


async def _serve_child(data_dir: Path) -> None:
    """``--serve``: run the server until SIGTERM, announcing its port on stdout."""
    server = build_server(data_dir)
    task, url = await start(server, WAIT)
    print(url, flush=True)
    await task


def server_process(loop: str) -> tuple[ServerProcess, tempfile.TemporaryDirectory[str]]:
    """The benchmark server in a child process (``--serve``), with its data directory."""
    data_dir = tempfile.TemporaryDirectory(prefix="mail-bench-")
    argv = [sys.executable, __file__, "--serve", data_dir.name, "--loop", loop]
    return ServerProcess(argv, timeout=WAIT), data_dir


# --- clients -----------------------------------------------------------------------------------


class Client:
    """One keep-alive HTTP session: ``ask`` posts a task, ``first_event`` streams one."""

    async def ask(self, body: str) -> dict[str, Any]:
        raise NotImplementedError

    async def first_event(self, body: str) -> tuple[float, bytes]:
        """Seconds to the first ``event:`` line, and the whole stream."""
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError

    async def health(self) -> dict[str, Any]:
        raise NotImplementedError

    async def settle(self) -> float | None:
        """Wait until the server's store holds every task (``/health`` reports no unsaved
        ones); returns the seconds waited, ``None`` without a store."""
        start = time.perf_counter()
        while True:
            unsaved = (await self.health()).get("unsaved_tasks")
            if unsaved is None:
                return None
            if not unsaved:
                return time.perf_counter() - start
            if time.perf_counter() - start > WAIT:
                raise AssertionError("the store did not catch up")
            await asyncio.sleep(0.001)


class AiohttpClient(Client):
    def __init__(self, url: str) -> None:
        self.url = url + "/message"
        self.session = aiohttp.ClientSession(
            headers={"Authorization": f"Bearer {API_KEY}"},
            connector=aiohttp.TCPConnector(limit=100),
            timeout=aiohttp.ClientTimeout(total=WAIT),
        )

    async def ask(self, body: str) -> dict[str, Any]:
        async with self.session.post(self.url, json={"body": body}) as response:
            if response.status != 200:
                raise AssertionError(f"{response.status}: {await response.text()}")
            data: dict[str, Any] = await response.json()
            return data

    async def first_event(self, body: str) -> tuple[float, bytes]:
        start = time.perf_counter()
        first = 0.0
        chunks: list[bytes] = []
        async with self.session.post(self.url, json={"body": body, "stream": True}) as response:
            if response.status != 200:
                raise AssertionError(f"{response.status}: {await response.text()}")
            async for line in response.content:
                if not first and line.startswith(b"event:"):
                    first = time.perf_counter() - start
                chunks.append(line)
        return first, b"".join(chunks)

    async def aclose(self) -> None:
        await self.session.close()

    async def health(self) -> dict[str, Any]:
        async with self.session.get(self.url.removesuffix("/message") + "/health") as response:
            data: dict[str, Any] = await response.json()
            return data


class HttpxClient(Client):
    def __init__(self, url: str) -> None:
        self.client = httpx.AsyncClient(
            base_url=url,
            headers={"Authorization": f"Bearer {API_KEY}"},
            limits=httpx.Limits(max_connections=100, max_keepalive_connections=100),
            timeout=WAIT,
        )

    async def ask(self, body: str) -> dict[str, Any]:
        response = await self.client.post("/message", json={"body": body})
        if response.status_code != 200:
            raise AssertionError(f"{response.status_code}: {response.text}")
        data: dict[str, Any] = response.json()
        return data

    async def first_event(self, body: str) -> tuple[float, bytes]:
        start = time.perf_counter()
        first = 0.0
        lines: list[str] = []
        async with self.client.stream("POST", "/message", json={"body": body, "stream": True}) as r:
            if r.status_code != 200:
                raise AssertionError(f"{r.status_code}: {(await r.aread()).decode()}")
            async for line in r.aiter_lines():
                if not first and line.startswith("event:"):
                    first = time.perf_counter() - start
                lines.append(line + "\r\n")
        return first, "".join(lines).encode()

    async def aclose(self) -> None:
        await self.client.aclose()

    async def health(self) -> dict[str, Any]:
        data: dict[str, Any] = (await self.client.get("/health")).json()
        return data


CLIENTS: dict[str, Callable[[str], Client]] = {"aiohttp": AiohttpClient, "httpx": HttpxClient}


# --- measurements ------------------------------------------------------------------------------


def _check(body: str, answer: dict[str, Any]) -> None:
    if answer.get("response") != "answer:" + body or answer.get("status") != "completed":
        raise AssertionError(f"task {body!r} answered {answer!r}")


def _check_stream(body: str, stream: bytes) -> None:
    text = stream.decode()
    final = text.rstrip().rsplit("\r\n\r\n", 1)[-1]
    expected = '"response":"answer:' + body + '"'
    if not final.startswith("event: task_complete\r\n") or expected not in final:
        raise AssertionError(f"stream {body!r} ended with {final!r}")


async def _one(client: Client, body: str) -> float:
    start = time.perf_counter()
    answer = await client.ask(body)
    elapsed = time.perf_counter() - start
    _check(body, answer)
    return elapsed


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1e3, p99 * 1e3


def report(
    label: str, n: int, wall: float, latencies: list[float], settled: float | None = None
) -> dict[str, float]:
    """Print a phase's figures; ``wall`` includes ``settled``, the wait for the store."""
    p50, p99 = _percentiles(latencies)
    rate = n / wall
    store = "" if settled is None else f"  (store caught up {settled * 1e3:.0f} ms after)"
    print(
        f"{label:<34} {rate:>8,.0f} tasks/s  {rate * TURNS_PER_TASK:>8,.0f} turns/s  "
        f"p50 {p50:6.2f} ms  p99 {p99:6.2f} ms{store}"
    )
    return {"rate": rate, "p50": p50, "p99": p99}


async def sequential(client: Client, n: int, tag: str, label: str = "") -> dict[str, float]:
    start = time.perf_counter()
    latencies = [await _one(client, f"{tag}{i}") for i in range(n)]
    settled = await client.settle()
    wall = time.perf_counter() - start
    return report(label or f"sequential ({n:,})", n, wall, latencies, settled)


async def concurrent(
    client: Client, n: int, clients: int, tag: str, label: str = ""
) -> dict[str, float]:
    latencies: list[float] = []
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            latencies.append(await _one(client, f"{tag}{i}"))

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    settled = await client.settle()
    label = label or f"{clients} clients, one key ({n:,})"
    return report(label, n, time.perf_counter() - start, latencies, settled)


async def first_events(client: Client, n: int, tag: str) -> dict[str, float]:
    firsts: list[float] = []
    for i in range(n):
        body = f"{tag}{i}"
        first, stream = await client.first_event(body)
        _check_stream(body, stream)
        firsts.append(first)
    p50, p99 = _percentiles(firsts)
    print(
        f"{'first SSE event (' + format(n, ',') + ' streams)':<34} p50 {p50:6.2f} ms  p99 {p99:6.2f} ms"
    )
    return {"p50": p50, "p99": p99}


def process_cpu(pid: int) -> Callable[[], float]:
    """CPU seconds (user + system) a process has used so far, read from ``/proc``."""
    ticks = os.sysconf("SC_CLK_TCK")
    stat = Path(f"/proc/{pid}/stat")

    def seconds() -> float:
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    return seconds


async def throughput(
    url: str, args: argparse.Namespace, server_cpu: Callable[[], float] | None = None
) -> None:
    """The HTTP figures; with ``server_cpu`` (a server in its own process), also the
    server's CPU time per task: its throughput limit on one core, whatever the client's
    share of the machine."""
    client = CLIENTS[args.client](url)

    async def measured(phase: Awaitable[dict[str, float]], n: int) -> None:
        before = server_cpu() if server_cpu is not None else 0.0
        await phase
        if server_cpu is not None:
            per_task = (server_cpu() - before) / n
            print(f"{'':<34} server CPU {per_task * 1e6:,.0f} µs/task")

    try:
        # warm-up: creates the caller's runtime and opens the connections
        await sequential(client, 100, "warm", "warm-up, sequential")
        await concurrent(client, 100, args.clients, "warmc", "warm-up, concurrent")
        await measured(sequential(client, args.tasks, "s"), args.tasks)
        await measured(concurrent(client, args.tasks, args.clients, "c"), args.tasks)
        await first_events(client, args.streams, "e")
    finally:
        await client.aclose()


async def in_process(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="mail-bench-") as data_dir:
        server = build_server(Path(data_dir))
        task, url = await start(server, WAIT)
        try:
            await throughput(url, args)
        finally:
            server.should_exit = True
            await task


async def metrics_compare(args: argparse.Namespace) -> None:
    """Metrics off and on, alternating (see the module docstring)."""
    await off_and_on(
        "metrics",
        lambda v, data_dir: build_server(data_dir, metrics=v == "on"),
        rounds=args.metrics_compare,
        tasks=args.tasks,
        clients=args.clients,
        client_kind=args.client,
    )


async def off_and_on(
    label: str,
    build: Callable[[str, Path], uvicorn.Server],
    *,
    rounds: int,
    tasks: int,
    clients: int,
    client_kind: str,
) -> None:
    """Two servers, ``build("off", dir)`` and ``build("on", dir)``, driven in alternating
    rounds (sequential, then ``clients`` at once) by ``client_kind`` clients in this
    process; prints the medians of their rates, sequential p50 and CPU per task."""
    rates: dict[str, dict[str, list[float]]] = {
        v: {"sequential": [], "concurrent": [], "p50": [], "cpu": []} for v in ("off", "on")
    }
    with (
        tempfile.TemporaryDirectory(prefix="mail-bench-") as off_dir,
        tempfile.TemporaryDirectory(prefix="mail-bench-") as on_dir,
    ):
        servers = {"off": build("off", Path(off_dir)), "on": build("on", Path(on_dir))}
        started = {v: await start(server, WAIT) for v, server in servers.items()}
        http = {v: CLIENTS[client_kind](url) for v, (_task, url) in started.items()}
        try:
            for v, client in http.items():
                await sequential(client, 100, f"warm{v}", f"warm-up, {label} {v}")
            for r in range(rounds):
                for v in ("off", "on") if r % 2 == 0 else ("on", "off"):
                    client = http[v]
                    cpu = time.process_time()
                    seq = await sequential(client, tasks, f"s{v}{r}-", f"{label} {v}, sequential")
                    con = await concurrent(
                        client, tasks, clients, f"c{v}{r}-", f"{label} {v}, concurrent"
                    )
                    rates[v]["sequential"].append(seq["rate"])
                    rates[v]["p50"].append(seq["p50"])
                    rates[v]["cpu"].append((time.process_time() - cpu) / (2 * tasks))
                    rates[v]["concurrent"].append(con["rate"])
        finally:
            for client in http.values():
                await client.aclose()
            for v, server in servers.items():
                server.should_exit = True
                await started[v][0]
    for phase in ("sequential", "concurrent"):
        off, on = (statistics.median(rates[v][phase]) for v in ("off", "on"))
        print(
            f"median {phase:<11} off {off:>7,.0f} tasks/s  on {on:>7,.0f} tasks/s  "
            f"({(on - off) / off * 100:+.1f} %)"
        )
    off, on = (statistics.median(rates[v]["p50"]) for v in ("off", "on"))
    print(f"median sequential p50  off {off:.3f} ms  on {on:.3f} ms  ({(on - off) * 1e3:+.0f} µs)")
    off, on = (statistics.median(rates[v]["cpu"]) * 1e6 for v in ("off", "on"))
    print(
        f"median CPU per task      off {off:,.0f} µs  on {on:,.0f} µs  ({on - off:+,.0f} µs, "
        f"{(on - off) / off * 100:+.1f} %; client and server, one process)"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.0) as response:  # noqa: S310  # loopback URL
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def _launch_once(pycache: str, *, write_bytecode: bool) -> float:
    """Seconds from starting ``mail server`` to its first ``200`` on ``GET /health``, with
    its bytecode cache in ``pycache``."""
    with tempfile.TemporaryDirectory(prefix="mail-bench-launch-") as data_dir:
        port = _free_port()
        env = {
            **os.environ,
            "MAIL_DATA_DIR": data_dir,
            "SWARM_REGISTRY_FILE": str(Path(data_dir) / "registry.json"),
            "PYTHONPYCACHEPREFIX": pycache,
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        if write_bytecode:
            del env["PYTHONDONTWRITEBYTECODE"]
        command = [sys.executable, "-m", "mail.cli", "server", "-c", str(ROOT / "mail.toml")]
        command += ["-p", str(port), "-H", "127.0.0.1"]
        start = time.perf_counter()
        proc = subprocess.Popen(  # noqa: S603  # fixed arguments
            command, env=env, cwd=data_dir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            while not _healthy(f"http://127.0.0.1:{port}/health"):
                if proc.poll() is not None or time.perf_counter() - start > WAIT:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    raise RuntimeError(f"mail server did not become healthy: {err[-2000:]}")
                time.sleep(0.005)
            return time.perf_counter() - start
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def launch_to_healthy(runs: int) -> None:
    """``mail server`` as a subprocess until ``GET /health`` answers 200, two ways.

    * cached bytecode: every launch after the first on a usual machine, where Python keeps
      the bytecode of what it imports. A first, untimed launch writes it (to a private
      ``PYTHONPYCACHEPREFIX`` directory, so nothing in the project or its environment
      changes), then the timed launches read it;
    * no bytecode: each launch compiles every module it imports from source, as a first
      launch does, or every launch where ``PYTHONDONTWRITEBYTECODE`` is set and nothing
      was compiled at install time (``uv sync --compile-bytecode`` or
      ``UV_COMPILE_BYTECODE=1`` compile at install time).
    """
    for label, cached in (("cached bytecode", True), ("no bytecode", False)):
        with tempfile.TemporaryDirectory(prefix="mail-bench-pycache-") as cache:
            if cached:
                _launch_once(cache, write_bytecode=True)  # writes the cache
            times = [_launch_once(cache, write_bytecode=False) for _ in range(runs)]
        detail = ", ".join(f"{t:.2f}" for t in times)
        name = f"launch to healthy ({label})"
        print(f"{name:<34} median {statistics.median(times):.2f} s  ({detail})")


def help_time(runs: int) -> None:
    exe = shutil.which("mail", path=str(Path(sys.executable).parent)) or shutil.which("mail")
    command = [exe, "--help"] if exe else [sys.executable, "-m", "mail.cli", "--help"]
    times: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)  # noqa: S603  # fixed arguments
        times.append(time.perf_counter() - start)
    print(f"{'`mail --help`':<34} median {statistics.median(times) * 1e3:.0f} ms")


def _run(main: Callable[[], Awaitable[None]], loop: str) -> None:
    if loop == "uvloop":
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--in-process",
        dest="in_process",
        action="store_true",
        help="server on the client's event loop (default)",
    )
    mode.add_argument(
        "--server-process",
        dest="in_process",
        action="store_false",
        help="server in a child process",
    )
    parser.set_defaults(in_process=True)
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    parser.add_argument("--client", choices=sorted(CLIENTS), default="aiohttp")
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--help-runs", type=int, default=10)
    parser.add_argument("--skip-startup", action="store_true", help="only the HTTP figures")
    parser.add_argument(
        "--metrics-compare",
        type=int,
        metavar="ROUNDS",
        default=0,
        help="compare metrics off and on over ROUNDS alternating rounds (nothing else)",
    )
    parser.add_argument("--serve", type=Path, metavar="DATA_DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        _run(lambda: _serve_child(args.serve), args.loop)
        return
    print(
        f"# server {'in process' if args.in_process else 'in a child process'}, "
        f"loop {args.loop}, uvicorn+httptools, client {args.client}; "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs"
    )
    if args.metrics_compare:
        _run(lambda: metrics_compare(args), args.loop)
        return
    if args.in_process:
        _run(lambda: in_process(args), args.loop)
    else:
        server, data_dir = server_process(args.loop)
        try:
            cpu = process_cpu(server.proc.pid)
            _run(lambda: throughput(server.url, args, cpu), args.loop)
        finally:
            server.close()
            data_dir.cleanup()
    if not args.skip_startup:
        launch_to_healthy(args.launches)
        help_time(args.help_runs)


if __name__ == "__main__":
    main()
