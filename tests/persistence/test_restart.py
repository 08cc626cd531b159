"""Restart without loss, end to end: a real ``mail server`` killed with SIGKILL and started
again over the same store (SQLite; PostgreSQL when ``MAIL_TEST_POSTGRES_URL`` is set).

The kill comes once the store, read from the test's own read-only connection, holds what
the client has seen: no fixed wait for the server's batched writes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from mail.testing.persist_swarm import swarm_definition

pytestmark = pytest.mark.timeout(90)

REPO = Path(__file__).resolve().parents[2]
MAIL_TOML = REPO / "mail.toml"
READY_WITHIN = 15.0
STORED_WITHIN = 15.0
_MAIL_ENV = (
    "MAIL_CONFIG_PATH",
    "MAIL_DATA_DIR",
    "MAIL_LOG_LEVEL",
    "SWARM_NAME",
    "SWARM_SOURCE",
    "SWARM_REGISTRY_FILE",
    "BASE_URL",
    "AUTH_ENDPOINT",
    "TOKEN_INFO_ENDPOINT",
    "DATABASE_URL",
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class Server:
    def __init__(self, tmp: Path, database_url: str | None) -> None:
        self.tmp = tmp
        self.data = tmp / "data"
        self.database_url = database_url
        swarms = tmp / "swarms.json"
        swarms.write_text(json.dumps([swarm_definition()]), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in _MAIL_ENV}
        env |= {"MAIL_DATA_DIR": str(self.data), "MAIL_LOG_LEVEL": "WARNING"}
        if database_url is not None:
            env["DATABASE_URL"] = database_url
        self.env = env
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [sys.executable, "-m", "mail.cli", "server", "-c", str(MAIL_TOML)]
        self.command += ["-p", str(self.port), "-H", "127.0.0.1"]
        self.command += ["-n", "persist", "-s", str(swarms)]
        self.process: subprocess.Popen[bytes] | None = None
        self.log = tmp / "server.log"

    def start(self) -> None:
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(
                self.command, cwd=self.tmp, env=self.env, stdout=output, stderr=subprocess.STDOUT
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

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-3000:]

    def client(self) -> httpx.Client:
        credentials = json.loads((self.data / "credentials.json").read_text(encoding="utf-8"))
        key = next(k["key"] for k in credentials["keys"] if k["role"] == "user")
        return httpx.Client(
            base_url=self.url, timeout=15, headers={"Authorization": f"Bearer {key}"}
        )


def _frames(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    frame: dict[str, Any] = {}
    for line in lines:
        if not line:
            if "event" in frame:
                yield frame
            frame = {}
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "id":
            frame["id"] = int(value)
        elif name == "event":
            frame["event"] = value
        elif name == "data":
            frame["data"] = json.loads(value)


def _events(client: httpx.Client, task_id: str, last_id: int | None = None) -> list[dict[str, Any]]:
    headers = {} if last_id is None else {"Last-Event-ID": str(last_id)}
    with client.stream("GET", f"/tasks/{task_id}/events", headers=headers) as response:
        assert response.status_code == 200
        return [f for f in _frames(response.iter_lines()) if "id" in f]


@dataclass(frozen=True)
class Stored:
    """What the store holds of one task (read behind the server's back)."""

    state: str | None = None
    last_seq: int = 0
    histories: int = 0
    responses: int = 0
    breakpoints: int = 0


_PROBES = (
    "SELECT state FROM tasks WHERE task_id = {0}",
    "SELECT COALESCE(MAX(seq), 0) FROM task_events WHERE task_id = {0}",
    "SELECT COUNT(*) FROM agent_histories WHERE task_id = {0}",
    "SELECT COUNT(*) FROM task_responses WHERE task_id = {0}",
    "SELECT COUNT(*) FROM task_breakpoints WHERE task_id = {0}",
)


def _stored_sqlite(path: Path, task_id: str) -> Stored:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        values = [conn.execute(q.format("?"), (task_id,)).fetchone() for q in _PROBES]
    finally:
        conn.close()
    return Stored(*(None if v is None else v[0] for v in values))


def _stored_postgres(url: str, task_id: str) -> Stored:
    import asyncpg

    async def probe() -> Stored:
        conn = await asyncpg.connect(url, timeout=5)
        try:
            await conn.execute("SET default_transaction_read_only = on")
            return Stored(*[await conn.fetchval(q.format("$1"), task_id) for q in _PROBES])
        finally:
            await conn.close()

    return asyncio.run(probe())


def _wait_stored(server: Server, task_id: str, enough: Callable[[Stored], bool]) -> None:
    """Poll the store read-only until ``enough(Stored)`` holds for ``task_id``."""
    deadline = time.perf_counter() + STORED_WITHIN
    while True:
        if server.database_url is None:
            stored = _stored_sqlite(server.data / "mail.db", task_id)
        else:
            stored = _stored_postgres(server.database_url, task_id)
        if enough(stored):
            return
        if time.perf_counter() > deadline:
            pytest.fail(f"task {task_id} not stored within {STORED_WITHIN}s: {stored}")
        time.sleep(0.02)


def _restart_without_loss(server: Server) -> None:
    server.start()
    with server.client() as client:
        done = client.post("/message", json={"body": "hello"}).json()
        assert done["status"] == "completed"
        paused = client.post("/message", json={"body": "pause please"}).json()
        assert paused["status"] == "waiting_breakpoint"
        done_before = _events(client, done["task_id"])
        seen: list[dict[str, Any]] = []
        with client.stream("POST", "/message", json={"body": "slow job", "stream": True}) as r:
            for frame in _frames(r.iter_lines()):
                if "id" in frame:
                    seen.append(frame)
                if frame["event"] == "new_message" and "worker" in frame["data"]["description"]:
                    break
            # the kill comes once the store holds what the client saw, and the completed
            # and paused tasks whole: a crash now must lose nothing of it
            _wait_stored(
                server,
                done["task_id"],
                lambda s: (
                    s.state == "completed"
                    and s.last_seq == done_before[-1]["id"]
                    and s.responses == 1
                    and s.histories >= 1
                ),
            )
            _wait_stored(
                server,
                paused["task_id"],
                lambda s: (
                    s.state == "waiting_breakpoint" and s.breakpoints >= 1 and s.histories >= 1
                ),
            )
            _wait_stored(
                server,
                seen[0]["data"]["task_id"],
                lambda s: s.state == "running" and s.last_seq >= seen[-1]["id"],
            )
            server.kill()
    running_id = seen[0]["data"]["task_id"]
    last_seen = seen[1]["id"]  # the client "lost" what came after its second event

    server.start()
    with server.client() as client:
        # the completed task and all its events, in order
        assert _events(client, done["task_id"]) == done_before
        tasks = client.get("/tasks").json()
        assert {done["task_id"], paused["task_id"], running_id} <= set(tasks)
        # the SSE client resumes from its last event id and gets exactly what it missed
        missed = _events(client, running_id, last_seen)
        assert [f["id"] for f in missed] == list(range(last_seen + 1, last_seen + 1 + len(missed)))
        assert missed[: len(seen) - 2] == seen[2:]
        assert missed[-1]["event"] == "task_interrupted"
        # the paused task resumes and completes
        resumed = client.post(
            "/message",
            json={
                "task_id": paused["task_id"],
                "resume_from": "breakpoint_tool_call",
                "kwargs": {"breakpoint_tool_call_result": "Ada"},
            },
        ).json()
        assert resumed["status"] == "completed"
        assert resumed["response"] == "resumed after the breakpoint"
        # the interrupted task resumes with user_response
        again = client.post(
            "/message",
            json={"task_id": running_id, "resume_from": "user_response", "body": "finish now"},
        ).json()
        assert again["response"] == "done: finish now"
        health = client.get("/health").json()
        assert health["storage"] == "ok"
    server.stop()
    assert "Traceback" not in server.output()


def test_restart_without_loss_sqlite(tmp_path: Path) -> None:
    server = Server(tmp_path, None)
    try:
        _restart_without_loss(server)
    finally:
        server.stop()
    assert (server.data / "mail.db").exists()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    base = os.environ.get("MAIL_TEST_POSTGRES_URL")
    if not base:
        pytest.skip("MAIL_TEST_POSTGRES_URL is not set")
    asyncpg = pytest.importorskip("asyncpg")
    import asyncio

    name = f"mail_restart_{uuid.uuid4().hex[:12]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(base, timeout=5)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    try:
        asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError) as e:
        pytest.skip(f"PostgreSQL at MAIL_TEST_POSTGRES_URL is unreachable: {e}")
    head, _, _ = base.rpartition("/")
    try:
        yield f"{head}/{name}"
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_restart_without_loss_postgres(tmp_path: Path, postgres_url: str) -> None:
    server = Server(tmp_path, postgres_url)
    try:
        _restart_without_loss(server)
    finally:
        server.stop()
