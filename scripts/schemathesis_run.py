"""Fuzz the live MAIL HTTP server with schemathesis; exit non-zero on any failure.

Starts the server in this process (uvicorn on 127.0.0.1, a free port, debug mode so the
debug-only routes are served too) over the offline swarm of ``swarms.json`` with fixed
in-memory API keys, then runs ``schemathesis run`` against its ``/openapi.json``: every
operation, positive and negative inputs, checks ``not_a_server_error`` (no 5xx) and
``response_schema_conformance`` (documented responses match their schemas). One pass per
role: admin, user and agent (the role of peer swarms).

    uv run python scripts/schemathesis_run.py [--max-examples 25] [--seed 20261125]

Streams (``stream: true``, ``/tasks/{id}/events``) end by themselves with the offline swarm;
``--request-timeout`` bounds every request anyway. Nothing leaves the machine: generated
``base_url``s are pointed at the server itself (``scripts/schemathesis_hooks.py``) and the
server's own outgoing connections are refused unless they go to loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from gen_openapi import ADMIN_KEY, AGENT_KEY, USER_KEY, build_app

HOOKS = Path(__file__).resolve().parent / "schemathesis_hooks.py"
CHECKS = "not_a_server_error,response_schema_conformance"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%", maxsplit=1)[0]).is_loopback
    except ValueError:
        return False


def _confine(loop: asyncio.AbstractEventLoop) -> None:
    """Make ``loop`` refuse to resolve or connect to anything but loopback."""
    resolve, connect = loop.getaddrinfo, loop.sock_connect

    async def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if not _loopback(name):
            raise socket.gaierror(socket.EAI_NONAME, f"{name}: not resolved during fuzzing")
        return await resolve(host, *args, **kwargs)

    async def sock_connect(sock: socket.socket, address: Any) -> None:
        if not _loopback(str(address[0])):
            raise ConnectionRefusedError(f"{address[0]}: only loopback during fuzzing")
        await connect(sock, address)

    loop.getaddrinfo = getaddrinfo  # type: ignore[method-assign]
    loop.sock_connect = sock_connect  # type: ignore[method-assign]


@contextmanager
def live_server(data_dir: Path) -> Iterator[str]:
    """Serve the offline app on a free loopback port in a thread; yield its base URL."""
    app = build_app(data_dir, debug=True)
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=0, loop="asyncio", log_level="warning", access_log=False
        )
    )
    failure: list[BaseException] = []

    def run() -> None:
        # a Runner cancels what is left on its loop when it closes (sse-starlette's
        # shutdown watcher, for one)
        with asyncio.Runner() as runner:
            _confine(runner.get_loop())
            try:
                runner.run(server.serve())
            except BaseException as e:  # noqa: BLE001  # reported by the main thread
                failure.append(e)

    thread = threading.Thread(target=run, name="mail-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if failure or not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the server did not start: {failure or 'timeout'}")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def run_schemathesis(
    base: str, key: str, label: str, args: argparse.Namespace, workdir: Path
) -> int:
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--no-color",
        "run",
        f"{base}/openapi.json",
        "--checks",
        CHECKS,
        "--header",
        f"Authorization: Bearer {key}",
        "--generation-with-security-parameters",
        "false",
        "--max-examples",
        str(args.max_examples),
        "--seed",
        str(args.seed),
        "--request-timeout",
        str(args.request_timeout),
        "--workers",
        "1",
        "--generation-database",
        "none",
        # hypothesis' own health checks judge the generator (slow or filtered generation on a
        # busy machine), not the server: they would only make CI flaky
        "--suppress-health-check",
        "all",
        "--output-truncate",
        "false",
    ]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": str(HOOKS), "MAIL_ST_PEER_URL": base}
    print(f"--- schemathesis, {label} key: {' '.join(command[3:6])} ...", flush=True)
    start = time.perf_counter()
    # schemathesis keeps a crash cache in its working directory: keep it out of the checkout
    # Its report is long and ends in a pytest-like footer: print it whole only when it fails,
    # else the line that counts the generated cases.
    result = subprocess.run(
        command, env=env, cwd=workdir, check=False, capture_output=True, text=True
    )
    output = result.stdout + result.stderr
    if result.returncode != 0:
        print(output, flush=True)
    else:
        lines = output.splitlines()
        counts = [lines[i + 1].strip() for i, line in enumerate(lines[:-1]) if "Test cases" in line]
        print(f"    {counts[-1] if counts else 'no case count in the report'}")
    print(
        f"--- {label} pass: exit {result.returncode} in {time.perf_counter() - start:.1f} s",
        flush=True,
    )
    return result.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-examples", type=int, default=25, help="per operation and phase")
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--request-timeout", type=float, default=20.0, help="seconds")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    failed = []
    with tempfile.TemporaryDirectory(prefix="mail-schemathesis-") as tmp:
        data_dir, workdir = Path(tmp) / "data", Path(tmp) / "work"
        workdir.mkdir()
        with live_server(data_dir) as base:
            for label, key in (("admin", ADMIN_KEY), ("user", USER_KEY), ("agent", AGENT_KEY)):
                if run_schemathesis(base, key, label, args, workdir) != 0:
                    failed.append(label)
    verdict = f"FAILED ({', '.join(failed)})" if failed else "passed"
    print(f"schemathesis {verdict} in {time.perf_counter() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
