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
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
from tests._servers import Server, clean_env, free_port

REPO = Path(__file__).resolve().parents[2]
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


class PeerProcess(Server):
    """``mail server`` of swarm ``beta`` (or ``name``) in a subprocess (module docstring),
    not started; its ``BASE_URL`` is its own URL."""

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
        self.port = free_port()
        url = f"http://127.0.0.1:{self.port}"
        env = clean_env(data) | {"MAIL_LOG_LEVEL": "WARNING", "PYTHONPATH": str(REPO)}
        command = [sys.executable, "-m", "mail.cli", "server", "-c", str(tmp / "mail.toml")]
        command += ["-p", str(self.port), "-H", "127.0.0.1"]
        super().__init__(
            command, env=env | {"BASE_URL": url}, cwd=tmp, log=tmp / "server.log", url=url
        )

    @classmethod
    def alpha(cls, tmp: Path) -> PeerProcess:
        """Swarm ``alpha``, whose supervisor asks ``weather@beta``."""
        return cls(tmp, name="alpha", definition=_alpha_definition())

    def user(self) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.name}-user"}
        return httpx.AsyncClient(base_url=self.url, timeout=20, headers=headers)

    def output(self) -> str:
        return self.tail()

    async def link(self, peer_name: str, peer_url: str, token: str) -> None:
        """Register ``peer_name`` at ``peer_url`` here, with the ``token`` to present to it
        (asynchronously: the peer may be served by this test's own event loop)."""
        body = {"name": peer_name, "base_url": peer_url, "auth_token": token, "volatile": True}
        headers = {"Authorization": f"Bearer {self.name}-admin"}
        async with httpx.AsyncClient(base_url=self.url, timeout=10, headers=headers) as client:
            response = await client.post("/swarms", json=body)
        assert response.status_code == 200, response.text
