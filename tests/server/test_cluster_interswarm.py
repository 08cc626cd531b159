"""Cluster mode, interswarm (issue 27, item 5): a peer may reach any replica. Swarm
``alpha`` runs on two replicas, A and B; its supervisor asks ``weather@beta``, a peer in its
own process, which knows ``alpha`` at B's address (as it would know a load balancer's).
A task started on A sends its request from A; beta's answer reaches B, which hands it to
A, and the task completes with the answer."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from tests.interswarm.peer_process import REPO, PeerProcess, _alpha_definition
from tests.server.test_cluster import Replica, call, running_replicas

pytestmark = pytest.mark.timeout(120)


@dataclass
class Federation:
    a: Replica
    b: Replica
    beta: PeerProcess
    admin: str
    user: str


def _post(url: str, key: str, path: str, body: dict[str, object]) -> httpx.Response:
    return call(url, key, "POST", path, json=body)


@pytest.fixture(scope="module")
def federation(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Federation]:
    root = tmp_path_factory.mktemp("cluster-interswarm")
    swarms = root / "swarms.json"
    swarms.write_text(json.dumps([_alpha_definition()]), encoding="utf-8")
    env = {
        "PYTHONPATH": str(REPO),
        "SWARM_AUTH_TOKEN_BETA": "alpha-to-beta",  # beta's key for alpha, on every replica
    }
    beta = PeerProcess(root / "beta")
    try:
        beta.start()
        with running_replicas(root, ("a", "b"), swarms=swarms, swarm="alpha", env=env) as started:
            a, b = started.replicas
            admin = started.admin_key
            user = _post(a.url, admin, "/keys", {"role": "user", "id": "dana"})
            peer = _post(a.url, admin, "/keys", {"role": "agent", "id": "beta"})
            assert user.status_code == 201 and peer.status_code == 201, (user.text, peer.text)
            body = {"name": "beta", "base_url": beta.url, "auth_token": "alpha-to-beta"}
            registered = _post(a.url, admin, "/swarms", {**body, "volatile": False})
            assert registered.status_code == 200, registered.text
            asyncio.run(beta.link("alpha", b.url, peer.json()["key"]))  # beta knows only B
            yield Federation(a, b, beta, admin, user.json()["key"])
    finally:
        beta.stop()


def test_a_peers_answer_reaching_another_replica_completes_the_task(
    federation: Federation,
) -> None:
    a, b = federation.a, federation.b
    task_id = f"t-{uuid.uuid4().hex[:8]}"
    answer = _post(a.url, federation.user, "/message", {"body": "Paris", "task_id": task_id})
    assert answer.status_code == 200, answer.text
    assert answer.json()["response"] == "weather@beta says: sunny in Paris"
    assert answer.json()["status"] == "completed"
    record = httpx.get(
        f"{b.url}/task",
        params={"task_id": task_id},
        headers={"Authorization": f"Bearer {federation.user}"},
        trust_env=False,
    ).json()
    names = [e["event"] for e in record["events"]]
    assert "interswarm_message_sent" in names
    assert "interswarm_message_received" in names
    # the notice telling beta the task completed is sent after the answer, and what it
    # records is stored under the task's lease too (its lease is freed only then)
    assert _stored_events(b, federation.user, task_id, "interswarm_message_sent", 2)


def _stored_events(replica: Replica, key: str, task_id: str, name: str, count: int) -> bool:
    """Whether the stored task comes to have ``count`` events ``name`` within 10 s."""
    deadline = time.monotonic() + 10
    while True:
        record = call(replica.url, key, "GET", "/task", params={"task_id": task_id}).json()
        if [e["event"] for e in record["events"]].count(name) >= count:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_an_answer_for_an_unknown_task_is_a_404_on_any_replica(federation: Federation) -> None:
    envelope = {
        "message_id": str(uuid.uuid4()),
        "source_swarm": "beta",
        "target_swarm": "alpha",
        "timestamp": "2026-11-27T00:00:00Z",
        "msg_type": "response",
        "task_owner": "user:dana@alpha",
        "task_contributors": ["user:dana@alpha", "agent:weather@beta"],
        "payload": {
            "task_id": "no-such-task",
            "request_id": str(uuid.uuid4()),
            "sender": {"address_type": "agent", "address": "weather@beta"},
            "recipient": {"address_type": "agent", "address": "supervisor@alpha"},
            "subject": "Re",
            "body": "sunny",
            "sender_swarm": "beta",
            "recipient_swarm": "alpha",
            "routing_info": {},
        },
    }
    peer_key = _post(
        federation.a.url, federation.admin, "/keys", {"role": "agent", "id": "beta"}
    ).json()["key"]
    for replica in (federation.a, federation.b):
        refused = _post(replica.url, peer_key, "/interswarm/back", {"message": envelope})
        assert refused.status_code == 404, refused.text
