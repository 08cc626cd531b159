"""Durable answers under load: 20 clients stream tasks from a real ``mail server``, which
is killed with SIGKILL in the middle of it, then started again over the same data. Every
task whose final event a client received is there, complete, with every event the client
saw (SQLite; PostgreSQL when ``MAIL_TEST_POSTGRES_URL`` is set)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.persistence.server_process import Server, postgres_database, read_line

pytestmark = pytest.mark.timeout(120)

CLIENTS = 20
#: completed streams before the kill
KILL_AFTER = 200


@dataclass
class Seen:
    """One stream as its client received it."""

    task_id: str = ""
    events: list[tuple[int, str]] = field(default_factory=list)
    final: str | None = None


async def _frames(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    frame: dict[str, Any] = {}
    async for line in response.aiter_lines():
        if (done := read_line(frame, line)) is not None:
            yield done


async def _stream(client: httpx.AsyncClient, n: int) -> Seen:
    seen = Seen()
    body = {"body": f"job {n}", "stream": True}
    async with client.stream("POST", "/message", json=body) as response:
        assert response.status_code == 200
        async for frame in _frames(response):
            seen.task_id = frame["data"]["task_id"]
            if "id" in frame:
                seen.events.append((frame["id"], frame["event"]))
            else:
                seen.final = frame["event"] if frame["event"] != "ping" else seen.final
    return seen


async def _load(server: Server, killed: asyncio.Event) -> list[Seen]:
    """Stream tasks from CLIENTS clients until the server dies; kill it after KILL_AFTER
    completed streams. Returns every stream whose final event arrived."""
    done: list[Seen] = []
    counter = iter(range(1_000_000))

    async def client_loop() -> None:
        async with server.async_client() as client:
            while not killed.is_set():
                try:
                    seen = await _stream(client, next(counter))
                except (httpx.TransportError, httpx.StreamError):
                    return  # the server is gone
                if seen.final is None:
                    return  # cut off before its final event: nothing was promised
                done.append(seen)
                if len(done) == KILL_AFTER:
                    server.kill()  # while the 19 others are mid-stream
                    killed.set()

    await asyncio.gather(*(client_loop() for _ in range(CLIENTS)))
    return done


def _check_after_restart(server: Server, done: list[Seen]) -> None:
    server.start()
    with server.client() as client:
        for seen in done:
            assert seen.final == "task_complete"
            task = client.get("/task", params={"task_id": seen.task_id})
            assert task.status_code == 200, f"task {seen.task_id} was lost"
            record = task.json()
            assert record["state"] == "completed", f"task {seen.task_id}: {record['state']}"
            stored = [(int(e["id"]), e["event"]) for e in record["events"]]
            # every event the client saw, in order, and nothing after them but the stored
            # task_complete the server adds once the turn ends
            assert stored[: len(seen.events)] == seen.events, f"task {seen.task_id}"
            assert [name for _, name in stored[len(seen.events) :]] in ([], ["task_complete"])
    server.stop()


def _run(server: Server) -> None:
    server.start()

    async def load() -> list[Seen]:
        return await _load(server, asyncio.Event())

    done = asyncio.run(load())
    assert len(done) >= KILL_AFTER
    _check_after_restart(server, done)


def test_a_killed_server_keeps_every_answered_task_sqlite(tmp_path: Path) -> None:
    server = Server(tmp_path, None)
    try:
        _run(server)
    finally:
        server.stop()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    yield from postgres_database()


def test_a_killed_server_keeps_every_answered_task_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    server = Server(tmp_path, postgres_url)
    try:
        _run(server)
    finally:
        server.stop()
