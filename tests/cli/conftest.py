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

import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests._servers import Server, clean_env, credentials, free_port
from tests.client.conftest import gated, start  # noqa: F401  # fixtures, shared with tests/client

RunMail = Callable[..., "subprocess.CompletedProcess[str]"]

# Variables that would change what the CLI reads; subprocesses run without them.
_MAIL_ENV = ("MAIL_CONFIG_PATH", "MAIL_LOG_LEVEL", "SWARM_NAME", "SWARM_SOURCE", "DATABASE_URL")
REPO = Path(__file__).resolve().parents[2]
MAIL_TOML = REPO / "mail.toml"


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


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    data = tmp_path_factory.mktemp("server-data")
    port = free_port()
    env = clean_env(data) | {"MAIL_LOG_LEVEL": "WARNING"}
    command = [sys.executable, "-m", "mail.cli", "server", "-c", str(MAIL_TOML)]
    command += ["-p", str(port), "-H", "127.0.0.1", "--print-llm-streams", "false"]
    log = data.parent / f"{data.name}.log"
    url = f"http://127.0.0.1:{port}"
    with Server(command, env=env, cwd=data, log=log, url=url):
        keys = credentials(data)
        yield LiveServer(url, keys["user"], keys["admin"], data)
