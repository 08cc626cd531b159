"""``POST /keys`` on a single server: embedded keys go to the credentials file and work at
once; remote auth and StaticAuth cannot issue keys (400); only admins may ask."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.server.conftest import Start, make_config

from mail.server.auth import EmbeddedAuth


async def test_an_embedded_key_works_at_once_and_is_saved(start: Start, tmp_path: Path) -> None:
    config = make_config(tmp_path)
    auth = EmbeddedAuth(Path(config.auth.credentials_file))
    running = await start(config, authenticator=auth)
    admin = await running.client(auth.key_for("admin"))
    created = await admin.post("/keys", json={"role": "user", "id": "alice"})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["role"] == "user" and body["id"] == "alice"
    alice = await running.client(body["key"])
    assert (await alice.get("/whoami")).json() == {
        "id": "alice",
        "role": "user",
        "username": "alice",
    }
    path = Path(config.auth.credentials_file)
    saved = json.loads(await asyncio.to_thread(path.read_text, encoding="utf-8"))
    assert {"role": "user", "id": "alice", "key": body["key"]} in saved["keys"]
    # a user may not create keys
    refused = await alice.post("/keys", json={"role": "admin", "id": "alice"})
    assert refused.status_code == 401


async def test_health_has_no_cluster_fields_on_a_single_server(start: Start) -> None:
    running = await start()
    health = (await (await running.anon()).get("/health")).json()
    assert "replica_id" not in health
    assert "owned_tasks" not in health


async def test_an_authenticator_that_cannot_issue_keys_answers_400(start: Start) -> None:
    running = await start()  # StaticAuth: fixed keys
    answer = await (await running.admin()).post("/keys", json={"role": "user", "id": "bob"})
    assert answer.status_code == 400
    assert answer.json() == {
        "detail": "this server does not create API keys (with remote auth, the auth service does)"
    }


async def test_a_bad_body_is_a_400(start: Start) -> None:
    running = await start()
    admin = await running.admin()
    for body in ({"role": "root", "id": "x"}, {"role": "user", "id": ""}, {"role": "user"}):
        answer = await admin.post("/keys", json=body)
        assert answer.status_code == 400, body
