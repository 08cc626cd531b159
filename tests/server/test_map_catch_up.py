"""A bound task's turns made from its events when its conversation is read (catch-ups),
against real servers: nothing written on the task's path while nobody subscribes, each
turn written once however many read at once, a subscriber told at once (only one that may
take the caller's turn events makes them written at once), only the events after the binding, and turns made after a restart from the stored events (SQLite and
PostgreSQL)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.db.conftest import postgres_admin_url, postgres_url
from tests.server.conftest import Running
from tests.server.test_map_events import subscribe, take
from tests.server.test_map_rpc import rpc, serving
from tests.server.test_map_send import turns
from tests.server.test_map_start import BACKENDS, config_for

__all__ = ["postgres_admin_url", "postgres_url"]  # the fixtures the restart test uses


def stored_kinds(server: Running) -> dict[str, int]:
    """How many conversation rows of each kind the server's SQLite file holds."""
    path = server.state.store.path  # type: ignore[union-attr]
    conn = sqlite3.connect(path, timeout=10)
    try:
        rows = conn.execute("SELECT kind, COUNT(*) FROM conversation_records GROUP BY kind")
        return dict(rows.fetchall())
    finally:
        conn.close()


async def bound_task(user: httpx.AsyncClient, task_id: str, body: str = "hi there") -> str:
    """A conversation bound to ``task_id``, which then runs one turn: the conversation."""
    created = await rpc(user, "mail/create", {"taskId": task_id})
    answer = await user.post("/message", json={"body": body, "task_id": task_id})
    assert answer.status_code == 200, answer.text
    return str(created["result"]["conversation"]["id"])


async def test_a_bound_task_writes_its_turns_when_they_are_read(offline: Running) -> None:
    user = await offline.user()
    cid = await bound_task(user, "task-lazy")
    assert "turn" not in stored_kinds(offline)  # nothing on the task's path
    recorded = await turns(user, cid)
    texts = [t["content"]["text"] for t in recorded if t["contentType"] == "text"]
    assert texts[0] == "hi there" and len(texts) >= 2
    assert any(t["contentType"] == "x-tool-call" for t in recorded)
    assert stored_kinds(offline)["turn"] == len(recorded)
    people = await rpc(user, "mail/get", {"conversationId": cid, "include": {"participants": True}})
    ids = {p["id"] for p in people["result"]["participants"]}
    assert {t["participantId"] for t in recorded} <= ids  # the authors joined
    assert await turns(user, cid) == recorded  # read again: the same turns, none added


async def test_reads_at_once_write_each_turn_once(offline: Running) -> None:
    user = await offline.user()
    cid = await bound_task(user, "task-raced")
    reads = await asyncio.gather(*(turns(user, cid) for _ in range(5)))
    assert all(r == reads[0] for r in reads) and reads[0]
    assert stored_kinds(offline)["turn"] == len(reads[0])
    ids = [t["source"].get("messageId") for t in reads[0] if t["contentType"] == "text"]
    assert len(ids) == len(set(ids))


async def test_a_subscriber_is_told_of_turns_nobody_read(offline: Running) -> None:
    user = await offline.user()
    sid = await subscribe(user, {"eventTypes": ["mail.turn.added"]})
    cid = await bound_task(user, "task-watched")
    async with user.stream("GET", f"/map/events?subscription={sid}") as stream:
        (first,) = await take(stream, 1)
    turn = first["event"]["data"]["turn"]
    assert turn["conversationId"] == cid and turn["content"]["text"] == "hi there"


async def test_only_a_subscription_that_may_take_turns_has_them_written_at_once(
    offline: Running,
) -> None:
    user, other, admin = await offline.user(), await offline.user2(), await offline.admin()
    interceptor = offline.state.interceptor
    assert interceptor is not None
    await subscribe(other, {})  # another caller's: not told of this caller's turns
    await subscribe(user, {"eventTypes": ["mail.closed"]})  # told of no turn
    await bound_task(user, "task-unseen")
    await interceptor.drain()
    assert "turn" not in stored_kinds(offline)
    await subscribe(admin, {"x-allCallers": True})  # an admin's of every caller
    await bound_task(user, "task-seen")
    await interceptor.drain()
    assert stored_kinds(offline)["turn"] > 0


async def test_binding_a_running_task_records_what_follows(offline: Running) -> None:
    user = await offline.user()
    answer = await user.post("/message", json={"body": "before", "task_id": "task-later"})
    assert answer.status_code == 200
    created = await rpc(user, "mail/create", {"taskId": "task-later"})
    cid = created["result"]["conversation"]["id"]
    again = await user.post(
        "/message",
        json={"body": "after", "task_id": "task-later", "resume_from": "user_response"},
    )
    assert again.status_code == 200
    recorded = await turns(user, cid)
    texts = [t["content"]["text"] for t in recorded if t["contentType"] == "text"]
    assert texts[0] == "after" and "before" not in texts


@BACKENDS
async def test_turns_are_made_after_a_restart_from_the_stored_events(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    config = config_for(tmp_path, backend, request)
    async with serving(config) as c:
        cid = await bound_task(c, "task-restarted", body="kept in events")
    async with serving(config) as c:
        recorded: list[dict[str, Any]] = await turns(c, cid)
    texts = [t["content"]["text"] for t in recorded if t["contentType"] == "text"]
    assert texts[0] == "kept in events" and len(texts) >= 2
    assert all(t["metadata"]["taskId"] == "task-restarted" for t in recorded)
