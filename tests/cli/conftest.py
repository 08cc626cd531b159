"""Fixtures for command-line tests.

* ``run_mail(*args, cwd=None)`` runs ``python -m mail.cli ARGS`` in a subprocess with a clean
  MAIL environment and returns the ``CompletedProcess`` (text, captured output).
* ``mail_env`` is ``os.environ`` without the variables MAIL reads, for other subprocesses.
* ``restore_logging`` keeps the root logger's handlers and level as they were, for tests that
  call ``main(["server", ...])`` in-process (the CLI configures logging).
* ``live_server`` (session): a real ``mail server`` process of the repository's offline swarm
  on a free loopback port, data in a temporary directory; a :class:`LiveServer` with its URL
  and the keys it wrote.
* ``closed_url``: an http URL of a loopback port nobody listens on.
* ``empty_toml``: an empty mail.toml, for in-process commands that must not read the
  checkout's file.
* ``start(template=None, **server)`` (from tests/client/conftest.py): a real server of a
  scripted swarm in this test's event loop, with the static keys ``user-key`` (user ``u1``)
  and ``admin-key``; returns its URL. Commands that run their own event loop (``main``,
  the REPL's process) reach it from a worker thread or a child process.
* ``gated`` (from tests/client/conftest.py): such a server whose ``worker`` agent waits for
  ``gated.gate`` mid-task.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.client.conftest import gated, start  # noqa: F401  # fixtures, shared with tests/client

RunMail = Callable[..., "subprocess.CompletedProcess[str]"]

# Variables that would change what the CLI reads; subprocesses run without them.
_MAIL_ENV = ("MAIL_CONFIG_PATH", "MAIL_LOG_LEVEL", "SWARM_NAME", "SWARM_SOURCE", "DATABASE_URL")
# What the server subprocess must not inherit either.
_SERVER_ENV = (
    *_MAIL_ENV, "MAIL_DATA_DIR", "SWARM_REGISTRY_FILE", "BASE_URL", "AUTH_ENDPOINT",
    "TOKEN_INFO_ENDPOINT",
)  # fmt: skip
REPO = Path(__file__).resolve().parents[2]
MAIL_TOML = REPO / "mail.toml"
#: Bound for the server subprocess to answer GET /health (a cold start imports a lot).
READY_WITHIN = 30.0


@pytest.fixture
def mail_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in _MAIL_ENV}


@pytest.fixture
def run_mail(mail_env: dict[str, str]) -> RunMail:
    def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mail.cli", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=cwd,
            env=mail_env,
        )

    return run


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def closed_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
def empty_toml(tmp_path: Path) -> Path:
    path = tmp_path / "empty-mail.toml"
    path.write_text("", encoding="utf-8")
    return path


@dataclass(frozen=True)
class LiveServer:
    url: str
    user_key: str
    admin_key: str
    data_dir: Path


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=0.5) as answer:  # noqa: S310
            return bool(answer.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    data = tmp_path_factory.mktemp("server-data")
    url = f"http://127.0.0.1:{(port := free_port())}"
    env = {k: v for k, v in os.environ.items() if k not in _SERVER_ENV}
    env |= {
        "MAIL_DATA_DIR": str(data),
        "SWARM_REGISTRY_FILE": str(data / "registry.json"),
        "MAIL_LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, "-m", "mail.cli", "server", "-c", str(MAIL_TOML)]
    command += ["-p", str(port), "-H", "127.0.0.1", "--print-llm-streams", "false"]
    log_path = data.parent / f"{data.name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=data, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        # Polling a subprocess for readiness is the one place these tests sleep.
        deadline = time.monotonic() + READY_WITHIN
        while not _healthy(url):
            if process.poll() is not None or time.monotonic() > deadline:
                output = log_path.read_text(encoding="utf-8", errors="replace")
                pytest.fail(f"mail server did not become healthy:\n{output[-3000:]}")
            time.sleep(0.05)
        keys = json.loads((data / "credentials.json").read_text(encoding="utf-8"))["keys"]
        by_role = {k["role"]: k["key"] for k in keys}
        yield LiveServer(url, by_role["user"], by_role["admin"], data)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
