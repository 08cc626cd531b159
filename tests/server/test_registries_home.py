"""A real `mail server` keeps its registry in `registries/<swarm>.json` next to its config
file (seed 001's mail.toml, seed 002's `-v ./registries:/app/registries`), while keys and
the task store stay in the data directory."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
from tests._servers import clean_env, start_server
from tests.interswarm.conftest import FakePeer

ROOT = Path(__file__).resolve().parents[2]


async def test_a_persistent_registration_lands_in_registries(tmp_path: Path) -> None:
    deploy, data = tmp_path / "deploy", tmp_path / "data"
    deploy.mkdir()
    (deploy / "mail.toml").write_text('[server.swarm]\nname = "offline"\n', encoding="utf-8")
    env = clean_env() | {"MAIL_CONFIG_PATH": str(deploy / "mail.toml")}
    async with FakePeer("beta") as peer:
        server = await asyncio.to_thread(start_server, "offline", ROOT / "swarms.json", env, data)
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
                response = await client.post(
                    "/swarms",
                    json={"name": "beta", "base_url": peer.url, "volatile": False},
                    headers={"Authorization": f"Bearer {server.keys['admin']}"},
                )
            assert response.status_code == 200, response.text
        finally:
            await asyncio.to_thread(server.stop)

    registry = json.loads((deploy / "registries" / "offline.json").read_text(encoding="utf-8"))
    assert registry["endpoints"]["beta"]["base_url"] == peer.url
    assert registry["endpoints"]["beta"]["volatile"] is False
    assert (data / "credentials.json").is_file()
    assert not (data / "registries").exists()
