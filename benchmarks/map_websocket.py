"""MAP over WebSocket (issue 36): ``mail/turn`` and its event fan-out, ``mail server``
against the official SDK's reference server in the same run.

* ``mail``: a real ``mail server`` process (the ``offline`` swarm of swarms.json), MAP
  Mail's turns durable in SQLite (the default store; a ``mail/turn`` is answered once its
  turn is committed), a user key made with ``POST /keys``;
* ``reference``: ``@multi-agent-protocol/sdk/server``'s ``MAPServer`` with ``{mail:
  {enabled: true}}``, an API-key authenticator and the SDK's in-memory stores, each
  socket's writes queued one at a time (packages/map-sdk-tests/test/_reference.mjs, run
  by bench/reference-server.mjs).

Both listen on loopback. The client is the same for both (packages/map-sdk-tests/bench/
driver.mjs, a Node process per phase): the SDK's ``ClientConnection``, or with ``--client
raw`` the same calls as plain JSON-RPC on a ``ws`` socket, without the SDK client's own
cost. A phase opens ``--subscribers`` connections subscribed to ``mail.turn.added`` and
N writer connections (``--connections``), each recording its share of ``--turns`` turns
in a conversation of its own, one turn after the other; it is timed from the first
request to the last answer (turns/s), and each subscriber notes when each turn's
``map/event`` arrives: the latency from the turn's ``mail/turn`` request handed to its
socket to the event delivered to the subscriber (so it includes the recording). A round
runs every phase on every server, in an order that rotates from round to round. With
``--memory``, ``mail server --no-persist`` runs too, as ``memory`` (its conversations
in memory, as the reference's are: the store's share of the difference); with
``--against PATH``, the ``mail server`` of another checkout (its ``.venv``), as
``against`` (a before/after comparison).

Prints per phase and server: turns/s and the ratio to the reference (median of the
rounds' ratios, with their range), the subscriber's latency p50 / p99 (all rounds'
turns), and the CPU time the server process and the client used per turn (less
disturbed by other work on the machine than wall times).

Needs Node 20+ with npm (``npm ci`` runs in packages/map-sdk-tests when its
``node_modules`` is missing).

    uv run python benchmarks/map_websocket.py [--rounds 7] [--turns 1000]
        [--connections 1,20] [--subscribers 1] [--client sdk|raw] [--memory]
        [--against PATH]
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # benchmarks/http.py would shadow the standard library's http

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "packages" / "map-sdk-tests"
WAIT = 60.0  # seconds for a server to start, a phase to finish
#: what would change where ``mail server`` looks: it gets its own
_DROPPED = ("MAIL_", "SWARM_", "DATABASE_URL", "BASE_URL", "AUTH_ENDPOINT", "TOKEN_INFO_")
_LISTENING = re.compile(r"listening (ws://\S+) key (\S+)")


@dataclass
class Server:
    name: str
    url: str  # ws://127.0.0.1:PORT/map
    key: str
    process: subprocess.Popen[bytes]
    log: Path

    def cpu(self) -> float:
        """CPU seconds (user + system) the server process has used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """SIGINT, as Ctrl-C would; SIGKILL after 15 s."""
        self.process.send_signal(signal.SIGINT)  # no-op once it has exited
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SystemExit(f"map_websocket.py: `{name}` is not on PATH: install Node 20+ with npm")
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _launch(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> Any:
    with log.open("wb") as out:
        return subprocess.Popen(  # noqa: S603  # fixed arguments
            command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches this script, which stops it
        )  # fmt: skip


def _failed(name: str, log: Path) -> SystemExit:
    return SystemExit(f"map_websocket.py: {name} did not start:\n{log.read_text()[-2000:]}")


def start_mail(
    root: Path, name: str = "mail", checkout: Path = ROOT, *, persist: bool = True
) -> Server:
    """``mail server`` of ``checkout`` (its ``.venv``) with its data (SQLite) in
    ``root/name`` (``persist=False``: its tasks and conversations in memory); a user key
    of it."""
    data = root / name
    data.mkdir()
    config = root / "mail.toml"
    config.write_text("[server]\naccess_log = false\n", encoding="utf-8")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)} | {
        "MAIL_DATA_DIR": str(data),
        "MAIL_LOG_LEVEL": "WARNING",
        "MAIL_CONFIG_PATH": str(config),
        "SWARM_REGISTRY_FILE": str(data / "registry.json"),
    }
    python = sys.executable if checkout == ROOT else str(checkout / ".venv" / "bin" / "python")
    command = [python, "-m", "mail.cli", "server", "-n", "offline"]
    command += ["-s", str(ROOT / "swarms.json"), "-p", str(port), "-H", "127.0.0.1"]
    command += [] if persist else ["--no-persist"]
    log = root / f"{name}.log"
    process = _launch(command, env, data, log)
    http = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + WAIT
    while not _healthy(http):  # a subprocess offers no other readiness signal
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise _failed(f"mail server ({name})", log)
        time.sleep(0.05)
    keys = json.loads((data / "credentials.json").read_text(encoding="utf-8"))["keys"]
    admin = next(k["key"] for k in keys if k["role"] == "admin")
    made = httpx.post(
        f"{http}/keys",
        json={"role": "user", "id": "bench"},
        headers={"Authorization": f"Bearer {admin}"},
        trust_env=False,
    )
    key: str = made.raise_for_status().json()["key"]
    return Server(name, f"ws://127.0.0.1:{port}/map", key, process, log)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/health", timeout=1.0, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def start_reference(root: Path, node: str) -> Server:
    """The SDK's reference server (bench/reference-server.mjs) on a free port."""
    log = root / "reference.log"
    process = _launch([node, "bench/reference-server.mjs"], dict(os.environ), PACKAGE, log)
    deadline = time.monotonic() + WAIT
    while (found := _LISTENING.search(log.read_text())) is None:  # it prints its URL
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise _failed("the reference server", log)
        time.sleep(0.05)
    return Server("reference", found.group(1), found.group(2), process, log)


@contextmanager
def servers(node: str, args: argparse.Namespace) -> Iterator[dict[str, Server]]:
    """``mail``, ``reference``, with ``--memory`` ``memory`` (``mail server
    --no-persist``), with ``--against`` ``against`` (that checkout's server)."""
    with tempfile.TemporaryDirectory(prefix="mail-bench-map-ws-") as tmp, ExitStack() as stack:
        root = Path(tmp)
        starts: dict[str, Callable[[], Server]] = {
            "mail": lambda: start_mail(root),
            "reference": lambda: start_reference(root, node),
        }
        if args.memory:
            starts["memory"] = lambda: start_mail(root, "memory", persist=False)
        if args.against is not None:
            starts["against"] = lambda: start_mail(root, "against", args.against)
        started: dict[str, Server] = {}
        try:
            for name, start in starts.items():
                started[name] = start()
                stack.callback(started[name].stop)
            yield started
        except Exception:
            for s in started.values():  # what the servers said, before it is deleted
                print(
                    f"--- {s.name}:\n{s.log.read_text(errors='replace')[-3000:]}", file=sys.stderr
                )
            raise


@dataclass
class Phase:
    """One server's figures for one number of connections, over the rounds."""

    rates: list[float] = field(default_factory=list)  # turns/s per round
    latencies: list[float] = field(default_factory=list)  # ms, every turn and subscriber
    server_cpu: list[float] = field(default_factory=list)  # µs per turn, per round
    client_cpu: list[float] = field(default_factory=list)

    def add(self, figures: dict[str, Any]) -> None:
        turns = figures["turns"]
        self.rates.append(turns / figures["seconds"])
        self.latencies += figures["latenciesMs"]
        self.server_cpu.append(figures["serverCpu"] * 1e6 / turns)
        self.client_cpu.append(figures["clientCpuMs"] * 1e3 / turns)


def run_phase(node: str, server: Server, connections: int, args: argparse.Namespace) -> Any:
    """One driver run against ``server``: its JSON line, with the server's CPU seconds."""
    turns = max(args.turns, connections)
    command = [node, "bench/driver.mjs", server.url, server.key, str(connections), str(turns)]
    before = server.cpu()
    result = subprocess.run(  # noqa: S603  # fixed arguments
        [*command, str(args.subscribers), args.client],
        cwd=PACKAGE, capture_output=True, text=True, timeout=WAIT * 2, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        raise SystemExit(
            f"map_websocket.py: the driver failed against {server.name} "
            f"(exit {result.returncode}):\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        )
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    figures["serverCpu"] = server.cpu() - before
    return figures


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(results: dict[int, dict[str, Phase]], args: argparse.Namespace) -> None:
    client = "the SDK's ClientConnection" if args.client == "sdk" else "raw JSON-RPC on `ws`"
    print(
        f"MAP over WebSocket: mail/turn, {args.subscribers} subscriber(s), {args.rounds} "
        f"rounds of {args.turns} turns per phase; client: {client} (Node)"
    )
    header = (
        f"  {'server':<10} {'turns/s':>8} {'/ reference (rounds)':>22} "
        f"{'latency p50 / p99 ms':>21} {'server CPU µs/turn':>19} {'client CPU':>11}"
    )
    for connections, by_server in results.items():
        print(f"{connections} writer connection(s):")
        print(header)
        reference = by_server["reference"].rates
        for name, phase in by_server.items():
            ratios = [a / b for a, b in zip(phase.rates, reference, strict=True)]
            ratio = f"{statistics.median(ratios):.2f} ({min(ratios):.2f} - {max(ratios):.2f})"
            latency = "-"
            if phase.latencies:
                p50, p99 = (_percentile(phase.latencies, q) for q in (0.5, 0.99))
                latency = f"{p50:.2f} / {p99:.2f}"
            print(
                f"  {name:<10} {statistics.median(phase.rates):>8.0f} {ratio:>22} "
                f"{latency:>21} {statistics.median(phase.server_cpu):>19.0f} "
                f"{statistics.median(phase.client_cpu):>11.0f}"
            )
    print(
        "turns/s and CPU: medians of the rounds; / reference: the rounds' ratios (median, "
        "range); latency: a turn's request sent to its map/event delivered, every turn of "
        "every round"
    )


def main(args: argparse.Namespace) -> None:
    node, npm = _tool("node"), _tool("npm")
    if not (PACKAGE / "node_modules").is_dir():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=PACKAGE, check=True)  # noqa: S603
    counts = [int(c) for c in args.connections.split(",")]
    with servers(node, args) as started:
        results = {c: {name: Phase() for name in started} for c in counts}
        for server in started.values():  # warm-up, untimed
            run_phase(node, server, max(counts), args)
        names = list(started)
        for r in range(args.rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            for connections in counts:
                for name in order:
                    results[connections][name].add(
                        run_phase(node, started[name], connections, args)
                    )
    report(results, args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description="MAP over WebSocket (issue 36): mail server against the SDK's reference"
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--turns", type=int, default=1000, help="turns per phase (all writers)")
    parser.add_argument(
        "--connections", default="1,20", help="writer connections of each phase, comma-separated"
    )
    parser.add_argument("--subscribers", type=int, default=1)
    parser.add_argument(
        "--client",
        choices=("sdk", "raw"),
        default="sdk",
        help="sdk: the SDK's ClientConnection; raw: plain JSON-RPC on a `ws` socket",
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="also run `mail server --no-persist` (turns in memory, as the reference's)",
    )
    parser.add_argument(
        "--against", metavar="PATH", help="also run the `mail server` of another checkout"
    )
    arguments = parser.parse_args()
    if arguments.against:
        arguments.against = Path(arguments.against).resolve()
        if not (arguments.against / ".venv" / "bin" / "python").exists():
            raise SystemExit(f"{arguments.against}: no .venv (run `uv sync` there first)")
    if min(arguments.rounds, arguments.turns, arguments.subscribers + 1) < 1:
        raise SystemExit("--rounds and --turns must be at least 1, --subscribers at least 0")
    main(arguments)
