"""Servers for tests, started one way.

* :class:`Server` runs a command that serves (``mail server`` or any other) as a child
  process on loopback, its output appended to a log file. :meth:`Server.start` waits until
  ``GET /health`` answers 200 (or, for a command that prints its URL, until it has printed
  it), at most :data:`READY_WITHIN` seconds, and fails the test with the log's tail if it
  does not. :meth:`~Server.stop` is Ctrl-C (SIGINT, SIGKILL after a bound),
  :meth:`~Server.terminate` SIGTERM, :meth:`~Server.kill` SIGKILL. A server can be started
  again. A test that fails while a server runs, or after one stopped during it, gets the
  log's tail as a report section (the hook is in ``tests/conftest.py``).
* :func:`start_server` starts ``mail server -n SWARM -s SOURCE`` with a data directory on a
  free port and reads the keys it wrote.
* :func:`serve`: an app served by uvicorn in the test's own event loop on ``127.0.0.1:0``,
  ``async with serve(app) as url`` (:func:`mail.testing.server.serve`).
* :func:`clean_env` (the environment without what MAIL and LiteLLM read), :func:`free_port`,
  :func:`credentials` (the keys a server wrote).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

import httpx
import pytest

from mail.testing.server import serve

__all__ = [
    "READY_WITHIN",
    "Server",
    "clean_env",
    "credentials",
    "free_port",
    "serve",
    "servers_since",
    "start_server",
]

#: Bound for a server process to be ready: a cold start imports a lot, and the README's
#: first ``uv run`` in a fresh clone builds its virtual environment too.
READY_WITHIN = 60.0
STOP_WITHIN = 15.0
LOG_TAIL = 3000
# What would change where the server or LiteLLM look: each test sets what it needs.
_DROPPED = (
    "MAIL_CONFIG_PATH", "MAIL_LOG_LEVEL", "SWARM_NAME", "SWARM_SOURCE", "DATABASE_URL",
    "MAIL_DATA_DIR", "MAIL_PORT", "SWARM_REGISTRY_FILE", "BASE_URL", "AUTH_ENDPOINT",
    "TOKEN_INFO_ENDPOINT", "MAIL_SERVER_OVERRIDES", "LITELLM_PROXY_API_BASE",
    "LITELLM_PROXY_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL", "OPENAI_API_KEY",
    "LITELLM_LOG", "MAIL_TELEMETRY", "MAIL_TELEMETRY_ENDPOINT", "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SERVICE_NAME",
    "OTEL_SDK_DISABLED",
)  # fmt: skip

_started: weakref.WeakSet[Server] = weakref.WeakSet()


def clean_env(data: Path | None = None) -> dict[str, str]:
    """``os.environ`` without the variables MAIL and LiteLLM read; with ``data``, the data
    directory and the registry file (``data/registry.json``) are there."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    if data is not None:
        env |= {"MAIL_DATA_DIR": str(data), "SWARM_REGISTRY_FILE": str(data / "registry.json")}
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def credentials(data: Path) -> dict[str, str]:
    """Role -> key, from the credentials file a server wrote in its data directory."""
    keys = json.loads((data / "credentials.json").read_text(encoding="utf-8"))["keys"]
    return {k["role"]: k["key"] for k in keys}


class Server:
    """``command`` serving in a child process (see the module docstring).

    ``url`` is where it serves; or ``printed``, a pattern whose first group is the URL the
    process prints once it listens (``health=False``: that line is readiness enough).
    ``new_session`` starts it in a process group of its own, which :meth:`kill` kills
    whole (``uv run`` and its child). ``env`` is read at each :meth:`start`.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        log: Path,
        url: str = "",
        printed: re.Pattern[str] | None = None,
        health: bool = True,
        new_session: bool = False,
    ) -> None:
        if not url and printed is None:
            raise ValueError("a server needs its url or the pattern of the line that prints it")
        self.command = list(command)
        self.env = dict(env)
        self.cwd = cwd
        self.log = log
        self.url = url
        self.printed = printed
        self.health = health
        self.new_session = new_session
        self.keys: dict[str, str] = {}  # role -> key, when started by start_server
        self.ready_in = 0.0  # seconds from launch to ready, at the last start
        self.stopped_at: float | None = None  # time.time() when it was last stopped
        self._process: subprocess.Popen[bytes] | None = None
        self._log_start = 0

    @property
    def process(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            raise RuntimeError(f"{self.command[:4]} was not started")
        return self._process

    def start(self) -> Server:
        """Launch the command and wait until it is ready; fails the test, with the log's
        tail, when it exits first or is not ready within :data:`READY_WITHIN` seconds."""
        __tracebackhide__ = True
        self._log_start = self.log.stat().st_size if self.log.exists() else 0
        if self.printed is not None:
            self.url = ""
        with self.log.open("ab") as output:
            self._process = subprocess.Popen(
                self.command, cwd=self.cwd, env=self.env, stdout=output,
                stderr=subprocess.STDOUT, start_new_session=self.new_session,
            )  # fmt: skip
        self.stopped_at = None
        _started.add(self)
        launched = time.monotonic()
        if not self._wait_ready(launched + READY_WITHIN):
            exited = self.process.poll() is not None
            status = self.stop()
            what = f"exited with status {status}" if exited else f"not ready in {READY_WITHIN}s"
            pytest.fail(f"{' '.join(self.command[:5])}: {what}; {self.log}:\n{self.tail()}")
        self.ready_in = time.monotonic() - launched
        return self

    def _wait_ready(self, deadline: float) -> bool:
        with httpx.Client(timeout=0.5, trust_env=False) as http:  # no proxy for loopback
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    return False
                if self._ready(http):
                    return True
                time.sleep(0.05)  # polling a child process: it offers no other signal
        return False

    def _ready(self, http: httpx.Client) -> bool:
        if not self.url:
            assert self.printed is not None
            since = self.log.read_bytes()[self._log_start :]  # this start's output
            found = self.printed.search(since.decode("utf-8", errors="replace"))
            if found is None:
                return False
            self.url = found.group(1)
        if not self.health:
            return True
        try:
            return http.get(f"{self.url}/health").status_code == httpx.codes.OK
        except httpx.TransportError:
            return False

    def signal(self, signum: signal.Signals) -> None:
        self.process.send_signal(signum)

    def stop(self, timeout: float = STOP_WITHIN) -> int | None:
        """Ctrl-C: SIGINT, then SIGKILL after ``timeout`` s. The exit status (None when it
        was never started); a stopped server's status again."""
        return self._end(signal.SIGINT, timeout)

    def terminate(self, timeout: float = STOP_WITHIN) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout`` s; the exit status."""
        return self._end(signal.SIGTERM, timeout)

    def kill(self) -> int | None:
        """SIGKILL (to its process group, when it has one of its own); the exit status."""
        return self._end(signal.SIGKILL, 10)

    def _end(self, signum: signal.Signals, timeout: float) -> int | None:
        if self._process is None:
            return None
        process = self._process
        if process.poll() is None:
            if signum == signal.SIGKILL and self.new_session:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout)
            else:
                process.send_signal(signal.SIGCONT)  # a paused process cannot stop
                process.send_signal(signum)
                try:
                    process.wait(timeout)
                except subprocess.TimeoutExpired:
                    return self.kill()
        if self.stopped_at is None:
            self.stopped_at = time.time()
        return process.wait(5)

    def output(self) -> str:
        return self._text()

    def tail(self, chars: int = LOG_TAIL) -> str:
        return self._text()[-chars:]

    def _text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def __enter__(self) -> Server:
        return self if self._process is not None else self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def servers_since(started: float) -> list[Server]:
    """The servers running, or stopped since ``started`` (``time.time()``), with a log."""
    return [
        s for s in list(_started)  # a copy: a test's threads may start one meanwhile
        if (s.stopped_at is None or s.stopped_at >= started) and s.log.exists()
    ]  # fmt: skip


def start_server(swarm: str, source: Path, env: Mapping[str, str], data: Path) -> Server:
    """``mail server -n swarm -s source`` on a free loopback port with data directory
    ``data`` (created) and environment ``env`` (see :func:`clean_env`), started, its keys
    read; its log is ``data``'s sibling ``<data name>.log``."""
    data.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{(port := free_port())}"
    command = [sys.executable, "-m", "mail.cli", "server", "-n", swarm, "-s", str(source.resolve())]
    command += ["-p", str(port), "-H", "127.0.0.1"]
    if "MAIL_CONFIG_PATH" not in env:
        # under a fixed name in the data directory, whatever mail.toml is found
        env = {"SWARM_REGISTRY_FILE": str(data / "registry.json")} | dict(env)
    env = dict(env) | {"MAIL_DATA_DIR": str(data)}
    server = Server(command, env=env, cwd=data, log=data.parent / f"{data.name}.log", url=url)
    server.start()
    server.keys = credentials(data)
    return server
