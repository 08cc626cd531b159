"""A real `mail server` keeps its registry in `<data_dir>/registries/<swarm>.json`, so two
servers of one swarm and one mail.toml with different data directories do not share it;
a file in the old default place (`registries/` next to mail.toml) is still used."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
from tests._servers import Server, clean_env, start_server
from tests.interswarm.conftest import FakePeer

ROOT = Path(__file__).resolve().parents[2]


async def _register(server: Server, peer_url: str) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        response = await client.post(
            "/swarms",
            json={"name": "beta", "base_url": peer_url, "volatile": False},
            headers={"Authorization": f"Bearer {server.keys['admin']}"},
        )
    assert response.status_code == 200, response.text


async def test_two_data_directories_keep_two_registries(tmp_path: Path) -> None:
    deploy, one, two = tmp_path / "deploy", tmp_path / "one", tmp_path / "two"
    deploy.mkdir()
    (deploy / "mail.toml").write_text('[server.swarm]\nname = "offline"\n', encoding="utf-8")
    env = clean_env() | {"MAIL_CONFIG_PATH": str(deploy / "mail.toml")}
    async with FakePeer("beta") as peer:
        first = await asyncio.to_thread(start_server, "offline", ROOT / "swarms.json", env, one)
        try:
            second = await asyncio.to_thread(
                start_server, "offline", ROOT / "swarms.json", env, two
            )
            try:
                await _register(first, peer.url)
            finally:
                await asyncio.to_thread(second.stop)
        finally:
            await asyncio.to_thread(first.stop)

    registry = json.loads((one / "registries" / "offline.json").read_text(encoding="utf-8"))
    assert registry["endpoints"]["beta"]["base_url"] == peer.url
    assert registry["endpoints"]["beta"]["volatile"] is False
    theirs = two / "registries" / "offline.json"
    assert (
        not theirs.exists()
        or "beta" not in json.loads(theirs.read_text(encoding="utf-8"))["endpoints"]
    )
    assert not (deploy / "registries").exists()
    assert "old default place" not in first.output()


async def test_a_registry_next_to_mail_toml_is_still_used(tmp_path: Path) -> None:
    deploy, data = tmp_path / "deploy", tmp_path / "data"
    (deploy / "registries").mkdir(parents=True)
    (deploy / "mail.toml").write_text('[server.swarm]\nname = "offline"\n', encoding="utf-8")
    old = deploy / "registries" / "offline.json"
    old.write_text(json.dumps({"endpoints": {}}), encoding="utf-8")
    env = clean_env() | {"MAIL_CONFIG_PATH": str(deploy / "mail.toml")}
    async with FakePeer("beta") as peer:
        server = await asyncio.to_thread(start_server, "offline", ROOT / "swarms.json", env, data)
        try:
            await _register(server, peer.url)
        finally:
            await asyncio.to_thread(server.stop)
    assert "beta" in json.loads(old.read_text(encoding="utf-8"))["endpoints"]
    assert not (data / "registries").exists()
    assert "old default place, shared by every server" in server.output()
