"""Federated swarms served by real ``mail server`` processes, for the failure tests that
kill (SIGKILL), pause (SIGSTOP/SIGCONT) or stop (SIGTERM) a server.

:class:`PeerProcess` serves ``beta``, whose agents come from
:mod:`tests.interswarm.peer_agents`: ``weather`` answers ``sunny in <body>`` (``hang`` in
the body: its turn never ends), and its comm targets are the ``weather_targets`` given.
``PeerProcess.alpha`` serves ``alpha``, whose supervisor asks ``weather@beta``. The
credentials file is written beforehand: ``<other>-to-<name>`` (agent ``<other>``),
``<name>-admin`` and ``<name>-user`` (user ``u1``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server.conftest import MAIL_ENV, free_port

REPO = Path(__file__).resolve().parents[2]
READY_WITHIN = 20.0
_AGENTS = "python::tests.interswarm.peer_agents"


def _alpha_definition() -> dict[str, Any]:
    return {
        "name": "alpha",
        "version": "1.0.0",
        "description": "asks beta in its own process",
        "keywords": [],
        "public": True,
        "entrypoint": "supervisor",
        "enable_interswarm": True,
        "agents": [
            {
                "name": "supervisor",
                "factory": f"{_AGENTS}:asking",
                "comm_targets": ["weather@beta"],
                "enable_entrypoint": True,
                "can_complete_tasks": True,
                "enable_interswarm": True,
                "agent_params": {},
            }
        ],
        "actions": [],
    }


def _definition(weather_targets: Sequence[str]) -> dict[str, Any]:
    return {
        "name": "beta",
        "version": "1.0.0",
        "description": "a peer in its own process",
        "keywords": [],
        "public": True,
        "entrypoint": "supervisor",
        "enable_interswarm": True,
        "agents": [
            {
                "name": "supervisor",
                "factory": f"{_AGENTS}:supervisor",
                "comm_targets": ["weather"],
                "enable_entrypoint": True,
                "can_complete_tasks": True,
                "enable_interswarm": True,
                "agent_params": {},
            },
            {
                "name": "weather",
                "factory": f"{_AGENTS}:weather",
                "comm_targets": list(weather_targets),
                "enable_interswarm": True,
                "agent_params": {},
            },
        ],
        "actions": [],
    }


def _toml(name: str, interswarm: Mapping[str, float]) -> str:
    lines = [
        "[server]",
        'host = "127.0.0.1"',
        "[server.swarm]",
        f'name = "{name}"',
        'source = "swarms.json"',
        "[server.settings]",
        "print_llm_streams = false",
        "[server.interswarm]",
        *(f"{key} = {value}" for key, value in interswarm.items()),
    ]
    return "\n".join(lines) + "\n"


class PeerProcess:
    """``mail server`` of swarm ``beta`` (or ``name``) in a subprocess (module docstring)."""

    def __init__(
        self,
        tmp: Path,
        *,
        weather_targets: Sequence[str] = ("supervisor", "supervisor@alpha"),
        interswarm: Mapping[str, float] | None = None,
        name: str = "beta",
        definition: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.tmp = tmp
        tmp.mkdir(parents=True, exist_ok=True)
        data = tmp / "data"
        data.mkdir(mode=0o700, exist_ok=True)
        other = "alpha" if name == "beta" else "beta"
        keys = [
            {"role": "agent", "id": other, "key": f"{other}-to-{name}"},
            {"role": "admin", "id": "admin", "key": f"{name}-admin"},
            {"role": "user", "id": "u1", "key": f"{name}-user"},
        ]
        credentials = data / "credentials.json"
        credentials.write_text(json.dumps({"version": 1, "keys": keys}), encoding="utf-8")
        credentials.chmod(0o600)
        (tmp / "swarms.json").write_text(
            json.dumps([definition or _definition(weather_targets)]), encoding="utf-8"
        )
        (tmp / "mail.toml").write_text(_toml(name, interswarm or {}), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in MAIL_ENV}
        env |= {
            "MAIL_DATA_DIR": str(data),
            "SWARM_REGISTRY_FILE": str(data / "registry.json"),
            "MAIL_LOG_LEVEL": "WARNING",
            "PYTHONPATH": str(REPO),
        }
        self.env = env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [sys.executable, "-m", "mail.cli", "server", "-c", str(tmp / "mail.toml")]
        self.command += ["-p", str(self.port), "-H", "127.0.0.1"]
        self.process: subprocess.Popen[bytes] | None = None
        self.log = tmp / "server.log"

    @classmethod
    def alpha(cls, tmp: Path) -> PeerProcess:
        """Swarm ``alpha``, whose supervisor asks ``weather@beta``."""
        return cls(tmp, name="alpha", definition=_alpha_definition())

    def start(self) -> None:
        env = self.env | {"BASE_URL": self.url}
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(
                self.command, cwd=self.tmp, env=env, stdout=output, stderr=subprocess.STDOUT
            )
        # Polled for readiness: the subprocess has no other signal.
        deadline = time.perf_counter() + READY_WITHIN
        with httpx.Client(timeout=0.5) as client:
            while time.perf_counter() < deadline:
                if self.process.poll() is not None:
                    pytest.fail(f"mail server exited early:\n{self.output()}")
                try:
                    if client.get(f"{self.url}/health").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
        pytest.fail(f"mail server not healthy within {READY_WITHIN}s:\n{self.output()}")

    def signal(self, signum: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        assert self.process is not None
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)  # a paused server cannot stop
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def user(self) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.name}-user"}
        return httpx.AsyncClient(base_url=self.url, timeout=20, headers=headers)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-3000:]

    async def link(self, peer_name: str, peer_url: str, token: str) -> None:
        """Register ``peer_name`` at ``peer_url`` here, with the ``token`` to present to it
        (asynchronously: the peer may be served by this test's own event loop)."""
        body = {"name": peer_name, "base_url": peer_url, "auth_token": token, "volatile": True}
        headers = {"Authorization": f"Bearer {self.name}-admin"}
        async with httpx.AsyncClient(base_url=self.url, timeout=10, headers=headers) as client:
            response = await client.post("/swarms", json=body)
        assert response.status_code == 200, response.text
