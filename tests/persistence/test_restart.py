"""Restart without loss, end to end: a real ``mail server`` killed with SIGKILL and started
again over the same store (SQLite; PostgreSQL when ``MAIL_TEST_POSTGRES_URL`` is set).

What a client was told (a task completed, a task paused) is in the store when the answer
arrives, read from the test's own read-only connection; the events of a running task are
stored a moment later, and the kill waits for those."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.persistence.server_process import Server, frames, postgres_database

pytestmark = pytest.mark.timeout(90)

STORED_WITHIN = 15.0


def _events(client: httpx.Client, task_id: str, last_id: int | None = None) -> list[dict[str, Any]]:
    headers = {} if last_id is None else {"Last-Event-ID": str(last_id)}
    with client.stream("GET", f"/tasks/{task_id}/events", headers=headers) as response:
        assert response.status_code == 200
        return [f for f in frames(response.iter_lines()) if "id" in f]


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


def _stored(server: Server, task_id: str) -> Stored:
    if server.database_url is None:
        return _stored_sqlite(server.data / "mail.db", task_id)
    return _stored_postgres(server.database_url, task_id)


def _wait_stored(server: Server, task_id: str, enough: Callable[[Stored], bool]) -> None:
    """Poll the store read-only until ``enough(Stored)`` holds for ``task_id``."""
    deadline = time.perf_counter() + STORED_WITHIN
    while not enough(stored := _stored(server, task_id)):
        if time.perf_counter() > deadline:
            pytest.fail(f"task {task_id} not stored within {STORED_WITHIN}s: {stored}")
        time.sleep(0.02)


def _restart_without_loss(server: Server) -> None:
    server.start()
    with server.client() as client:
        done = client.post("/message", json={"body": "hello"}).json()
        assert done["status"] == "completed"
        # the answer left once the task was stored: no waiting for it
        stored = _stored(server, done["task_id"])
        assert (stored.state, stored.responses) == ("completed", 1)
        assert stored.histories >= 1
        paused = client.post("/message", json={"body": "pause please"}).json()
        assert paused["status"] == "waiting_breakpoint"
        stored = _stored(server, paused["task_id"])
        assert stored.state == "waiting_breakpoint"
        assert stored.breakpoints >= 1
        done_before = _events(client, done["task_id"])
        # the stream shows all but the stored task_complete, which its final event replaces
        assert _stored(server, done["task_id"]).last_seq == done_before[-1]["id"] + 1
        seen: list[dict[str, Any]] = []
        with client.stream("POST", "/message", json={"body": "slow job", "stream": True}) as r:
            for frame in frames(r.iter_lines()):
                if "id" in frame:
                    seen.append(frame)
                if frame["event"] == "new_message" and "worker" in frame["data"]["description"]:
                    break
            # a running task's events are stored a moment after they are sent: the kill
            # comes once the store holds what the client saw
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
    yield from postgres_database()


def test_restart_without_loss_postgres(tmp_path: Path, postgres_url: str) -> None:
    server = Server(tmp_path, postgres_url)
    try:
        _restart_without_loss(server)
    finally:
        server.stop()
