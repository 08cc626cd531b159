"""Cluster mode: three real `mail server` replicas on one PostgreSQL database and Redis.

Each replica is its own process with its own data directory and port. A key created on
one authenticates on the others, a peer registered on one is listed by the others, each
reports its own replica id, and `mail doctor` lists the three. The refusals (SQLite,
unreachable Redis) need neither server.

Needs PostgreSQL (``MAIL_TEST_POSTGRES_URL``, an admin URL: a database ``mail_test_<hex>``
is created and dropped) and Redis at ``MAIL_TEST_REDIS_URL`` (default
``redis://127.0.0.1:6379/14``; the replicas' heartbeat keys are removed afterwards);
skipped, with the reason, when either is unreachable.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from tests._servers import Server, clean_env, free_port

REPO = Path(__file__).resolve().parents[2]
SWARMS = REPO / "swarms.json"
SWARM = "offline"
POSTGRES_ENV = "MAIL_TEST_POSTGRES_URL"
REDIS_ENV = "MAIL_TEST_REDIS_URL"
REDIS_DEFAULT = "redis://127.0.0.1:6379/14"
SEEN_WITHIN = 10.0


def _server_command(port: int, swarms: Path = SWARMS, swarm: str = SWARM) -> list[str]:
    server = [sys.executable, "-m", "mail.cli", "server", "-n", swarm, "-s", str(swarms)]
    return [*server, "-p", str(port), "-H", "127.0.0.1"]


def _until(check: Callable[[], Any], within: float, what: str) -> Any:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` after ``within``."""
    deadline = time.monotonic() + within
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {within}s")
        time.sleep(0.05)


# --- refusals: one line, no traceback ------------------------------------------------------


def _refused(env: dict[str, str], tmp_path: Path) -> tuple[int, str]:
    env = clean_env() | env | {"MAIL_DATA_DIR": str(tmp_path / "data")}
    env["SWARM_REGISTRY_FILE"] = str(tmp_path / "registry.json")
    done = subprocess.run(
        _server_command(free_port()),
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stderr


def test_cluster_mode_on_sqlite_refuses_to_start_with_one_line(tmp_path: Path) -> None:
    code, stderr = _refused({"MAIL_REDIS_URL": "redis://127.0.0.1:6379/14"}, tmp_path)
    assert code != 0
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "needs the PostgreSQL store, not sqlite" in lines[0]
    assert not (tmp_path / "data" / "credentials.json").exists()  # nothing was started


def test_cluster_mode_in_memory_refuses_too(tmp_path: Path) -> None:
    path = tmp_path / "mail.toml"
    path.write_text("[database]\npersist = false\n", encoding="utf-8")
    env = {"MAIL_REDIS_URL": "redis://127.0.0.1:6379/14", "MAIL_CONFIG_PATH": str(path)}
    code, stderr = _refused(env, tmp_path)
    assert code != 0
    assert stderr.strip().splitlines() == [
        "mail server: cluster mode ([server.cluster] redis_url) needs the PostgreSQL store, "
        "not memory: set [database] url (DATABASE_URL) to the database the replicas share"
    ]


def test_unreachable_redis_refuses_to_start_with_one_line(tmp_path: Path) -> None:
    closed = free_port()  # nothing listens there
    env = {
        "MAIL_REDIS_URL": f"redis://:hunter2@127.0.0.1:{closed}/0",
        "DATABASE_URL": "postgresql://postgres@127.0.0.1:5432/unused",
    }
    code, stderr = _refused(env, tmp_path)
    assert code != 0
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert f"cannot reach Redis at redis://:***@127.0.0.1:{closed}/0" in lines[0]
    assert "hunter2" not in stderr


# --- three replicas ------------------------------------------------------------------------


def _postgres_admin_url() -> str:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(f"{POSTGRES_ENV} is not set: the cluster tests need PostgreSQL")
    import asyncio

    import asyncpg

    async def probe() -> None:
        conn = await asyncpg.connect(url, timeout=5)
        await conn.close()

    try:
        asyncio.run(probe())
    except Exception as e:
        pytest.skip(f"PostgreSQL ({POSTGRES_ENV}) is unreachable: {type(e).__name__}: {e}")
    return url


def _redis_url() -> str:
    url = os.environ.get(REDIS_ENV) or REDIS_DEFAULT
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port or 6379), timeout=2) as sock:
            sock.sendall(b"PING\r\n")
            answer = sock.recv(64)
    except OSError as e:
        pytest.skip(f"Redis at {parts.hostname}:{parts.port} is unreachable: {e}")
    if not answer.startswith(b"+PONG"):
        pytest.skip(f"Redis at {parts.hostname}:{parts.port} did not answer PING: {answer!r}")
    return url


def _admin(url: str, *statements: str) -> None:
    import asyncio

    import asyncpg

    async def run() -> None:
        conn = await asyncpg.connect(url, timeout=5)
        try:
            for statement in statements:
                await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(run())


class Replica(Server):
    """A replica's ``mail server`` process: its id and data directory besides."""

    def __init__(self, name: str, env: dict[str, str], root: Path, swarms: Path, swarm: str):
        self.data = root / name
        self.data.mkdir(parents=True, exist_ok=True)
        self.id = f"{env['MAIL_TEST_TAG']}-{name}"
        port = free_port()
        super().__init__(
            _server_command(port, swarms, swarm),
            env=env
            | {
                "MAIL_DATA_DIR": str(self.data),
                "MAIL_REPLICA_ID": self.id,
                "SWARM_REGISTRY_FILE": str(self.data / "registry.json"),
            },
            cwd=self.data,
            log=root / f"{name}.log",
            url=f"http://127.0.0.1:{port}",
        )


@dataclass
class Cluster:
    replicas: list[Replica]
    env: dict[str, str]
    admin_key: str


def _start(
    name: str, env: dict[str, str], root: Path, swarms: Path = SWARMS, swarm: str = SWARM
) -> Replica:
    replica = Replica(name, env, root, swarms, swarm)
    replica.start()
    return replica


def _delete_heartbeats(redis_url: str, tag: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        for key in client.scan_iter(match=f"mail:replica:{tag}-*"):
            client.delete(key)
    finally:
        client.close()


@contextmanager
def running_replicas(
    root: Path,
    names: Sequence[str] = ("a", "b", "c"),
    *,
    swarms: Path = SWARMS,
    swarm: str = SWARM,
    env: Mapping[str, str] | None = None,
) -> Iterator[Cluster]:
    """Replicas ``names`` of ``swarm`` on a throwaway PostgreSQL database and the test
    Redis (3 s leases; ``env`` adds to their environment), with the admin key the first
    seeded; stopped, their heartbeats removed and the database dropped afterwards."""
    admin_url = _postgres_admin_url()
    redis_url = _redis_url()
    database = f"mail_test_{uuid.uuid4().hex}"
    _admin(admin_url, f'CREATE DATABASE "{database}"')
    tag = f"test-{uuid.uuid4().hex[:8]}"
    full_env = clean_env() | {
        "DATABASE_URL": urlsplit(admin_url)._replace(path=f"/{database}").geturl(),
        "MAIL_REDIS_URL": redis_url,
        "MAIL_LEASE_SECONDS": "3",
        "MAIL_TEST_TAG": tag,
        **(env or {}),
    }
    replicas: list[Replica] = []
    try:
        for name in names:
            replicas.append(_start(name, full_env, root, swarms, swarm))
        # the first replica seeded the shared keys from the credentials file it created
        keys = json.loads((replicas[0].data / "credentials.json").read_text(encoding="utf-8"))
        admin = next(k["key"] for k in keys["keys"] if k["role"] == "admin")
        yield Cluster(replicas, full_env, admin)
    finally:
        for replica in replicas:
            replica.stop()
        _delete_heartbeats(redis_url, tag)
        _admin(admin_url, f'DROP DATABASE "{database}" WITH (FORCE)')


def call(url: str, key: str, method: str, path: str, **options: Any) -> httpx.Response:
    """``method path`` on the replica at ``url`` with ``key`` (``options`` as httpx's)."""
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.request(
        method, f"{url}{path}", headers=headers, timeout=30, trust_env=False, **options
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_replicas(tmp_path_factory.mktemp("cluster")) as started:
        yield started


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_only_the_first_replica_writes_a_credentials_file(cluster: Cluster) -> None:
    a, b, c = cluster.replicas
    assert (a.data / "credentials.json").exists()
    assert not (b.data / "credentials.json").exists()
    assert not (c.data / "credentials.json").exists()


def test_each_replica_reports_its_own_id(cluster: Cluster) -> None:
    ids = []
    for replica in cluster.replicas:
        health = httpx.get(f"{replica.url}/health", trust_env=False).json()
        assert health["replica_id"] == replica.id
        assert health["owned_tasks"] == 0
        assert health["storage"] == "ok"
        ids.append(health["replica_id"])
    assert len(set(ids)) == 3


def test_the_seeded_admin_key_works_on_every_replica(cluster: Cluster) -> None:
    for replica in cluster.replicas:
        answer = httpx.get(
            f"{replica.url}/whoami", headers=_auth(cluster.admin_key), trust_env=False
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["role"] == "admin"


def test_a_key_created_on_a_authenticates_on_b_and_c(cluster: Cluster) -> None:
    a, b, c = cluster.replicas
    created = httpx.post(
        f"{a.url}/keys",
        json={"role": "user", "id": "alice"},
        headers=_auth(cluster.admin_key),
        trust_env=False,
    )
    assert created.status_code == 201, created.text
    key = created.json()["key"]
    assert key.startswith("mail-user-")
    for replica in (b, c, a):  # at once: no wait, no retry
        answer = httpx.get(f"{replica.url}/whoami", headers=_auth(key), trust_env=False)
        assert answer.status_code == 200, (replica.id, answer.text)
        assert answer.json() == {"id": "alice", "role": "user", "username": "alice"}
    # a user key is not an admin key on any replica
    refused = httpx.post(
        f"{c.url}/keys",
        json={"role": "admin", "id": "mallory"},
        headers=_auth(key),
        trust_env=False,
    )
    assert refused.status_code == 401
    assert "invalid role" in refused.json()["detail"]


def test_an_unknown_key_is_refused_everywhere(cluster: Cluster) -> None:
    for replica in cluster.replicas:
        answer = httpx.get(
            f"{replica.url}/whoami", headers=_auth("mail-user-not-a-key"), trust_env=False
        )
        assert answer.status_code == 401
        assert answer.json() == {"detail": "invalid API key"}


def test_a_bad_key_request_is_a_400(cluster: Cluster) -> None:
    answer = httpx.post(
        f"{cluster.replicas[1].url}/keys",
        json={"role": "root", "id": "x"},
        headers=_auth(cluster.admin_key),
        trust_env=False,
    )
    assert answer.status_code == 400
    assert "role" in answer.json()["detail"]


def _listed(replica: Replica, name: str) -> dict[str, Any] | None:
    swarms = httpx.get(f"{replica.url}/swarms", trust_env=False).json()["swarms"]
    return next((s for s in swarms if s["swarm_name"] == name), None)


def test_a_peer_registered_on_a_is_listed_by_b_and_c(cluster: Cluster) -> None:
    a, b, c = cluster.replicas
    peer = f"peer-{uuid.uuid4().hex[:6]}"
    for replica in (b, c):
        assert _listed(replica, peer) is None
    registered = httpx.post(
        f"{a.url}/swarms",
        json={"name": peer, "base_url": c.url, "auth_token": "raw-secret", "volatile": False},
        headers=_auth(cluster.admin_key),
        trust_env=False,
    )
    assert registered.status_code == 200, registered.text
    for replica in (b, c):
        entry = _until(lambda r=replica: _listed(r, peer), SEEN_WITHIN, f"{peer} on {replica.id}")
        assert entry["base_url"] == c.url
    # the token is stored by reference only
    dumped = subprocess.run(
        [
            "psql",
            cluster.env["DATABASE_URL"],
            "-Atc",
            "SELECT record::text FROM cluster_swarm_registry",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if dumped.returncode == 0:
        assert "raw-secret" not in dumped.stdout
        assert "${SWARM_AUTH_TOKEN_PEER_" in dumped.stdout


def test_doctor_lists_the_three_replicas(cluster: Cluster, tmp_path: Path) -> None:
    env = cluster.env | {"MAIL_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "mail.cli", "doctor", "-n", SWARM, "-s", str(SWARMS)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = done.stdout + done.stderr
    assert "✓ redis: Redis " in out, out
    line = next((x for x in out.splitlines() if x.startswith("✓ replicas:")), "")
    assert line, out
    for replica in cluster.replicas:
        assert replica.id in line
        assert replica.url in line
    assert "✓ leases: no task leases held" in out, out


def _heartbeat(redis_url: str, replica_id: str) -> bytes | None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        value: bytes | None = client.get(f"mail:replica:{replica_id}")
        return value
    finally:
        client.close()


def test_a_stopped_replica_removes_its_heartbeat_and_a_killed_one_expires(
    cluster: Cluster, tmp_path: Path
) -> None:
    redis_url = cluster.env["MAIL_REDIS_URL"]
    stopped = _start("d", cluster.env, tmp_path)
    killed = _start("e", cluster.env, tmp_path)
    try:
        for replica in (stopped, killed):
            beat = _heartbeat(redis_url, replica.id)
            assert beat is not None
            assert f'"url": "{replica.url}"' in beat.decode()
        stopped.stop()  # SIGINT: a clean stop deletes the key on the way out
        assert _heartbeat(redis_url, stopped.id) is None
        killed.kill()  # SIGKILL: the key lives out its lease (3 s here), no longer
        _until(lambda: _heartbeat(redis_url, killed.id) is None, 3 + 2, "the dead replica's key")
    finally:
        stopped.stop()
        killed.stop()
