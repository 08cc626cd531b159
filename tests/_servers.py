"""`mail server` as a subprocess, for tests that follow the docs' commands.

``start_server(swarm, source, env, data)`` runs ``python -m mail.cli server -n SWARM -s
SOURCE`` on a free loopback port with ``env`` (see :func:`clean_env`) in ``data`` (its data
directory), waits for ``GET /health`` and returns the process and a :class:`Server` (URL,
keys, log file). :func:`stop` ends a process with SIGINT, as Ctrl-C would.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

READY_WITHIN = 30.0
# What would change where the server or LiteLLM look: each test sets what it needs.
_DROPPED = (
    "MAIL_CONFIG_PATH", "MAIL_LOG_LEVEL", "SWARM_NAME", "SWARM_SOURCE", "DATABASE_URL",
    "MAIL_DATA_DIR", "MAIL_PORT", "SWARM_REGISTRY_FILE", "BASE_URL", "AUTH_ENDPOINT", "TOKEN_INFO_ENDPOINT",
    "LITELLM_PROXY_API_BASE", "LITELLM_PROXY_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL",
    "OPENAI_API_KEY", "LITELLM_LOG",
)  # fmt: skip


def clean_env() -> dict[str, str]:
    """``os.environ`` without the variables MAIL and LiteLLM read."""
    return {k: v for k, v in os.environ.items() if k not in _DROPPED}


def stop(process: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """SIGINT, then kill after 15 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@dataclass(frozen=True, slots=True)
class Server:
    url: str
    keys: dict[str, str]  # role -> key, from the credentials file the server wrote
    log: Path

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=0.5, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def start_server(
    swarm: str, source: Path, env: dict[str, str], data: Path
) -> tuple[subprocess.Popen[bytes], Server]:
    """Start ``mail server -n swarm -s source`` with data directory ``data`` (created)."""
    data.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{(port := free_port())}"
    command = [sys.executable, "-m", "mail.cli", "server", "-n", swarm, "-s", str(source.resolve())]
    command += ["-p", str(port), "-H", "127.0.0.1"]
    log = data.parent / f"{data.name}.log"
    if "MAIL_CONFIG_PATH" not in env:
        # else the checkout's mail.toml is found, and its registries/ would collect the file
        env = {"SWARM_REGISTRY_FILE": str(data / "registry.json")} | env
    env = env | {"MAIL_DATA_DIR": str(data)}
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=data, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + READY_WITHIN
    while not _healthy(url):  # polling a subprocess for readiness: it offers no other signal
        if process.poll() is not None or time.monotonic() > deadline:
            stop(process)
            pytest.fail(f"mail server did not become healthy:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)
    keys = json.loads((data / "credentials.json").read_text(encoding="utf-8"))["keys"]
    return process, Server(url, {k["role"]: k["key"] for k in keys}, log)
