"""Appending turns: one store write for the turns of many conversations, turn seqs
allocated by the store (two servers sharing a database never give two turns one seq),
and the interceptor's batches (``drain`` not waiting for the gathering interval, a
failing conversation losing only its own turns)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.conversations.conftest import KEY
from tests.conversations.test_service import ME, new, say

from mail.conversations import ConversationService, EventBus, conversation_store_for
from mail.conversations.interception import Interceptor
from mail.core.events import EventLog, EventName, MAILEvent
from mail.db import PostgresStore, SQLiteStore, TaskStore

AT = "2026-11-27T06:00:00.123456+00:00"


def said(text: str) -> tuple[str, dict[str, Any], dict[str, Any], str]:
    """An intercepted turn of ``agent:a`` saying ``text`` (at ``AT``)."""
    params = {"contentType": "text", "content": {"text": text}}
    return "agent:a", params, {"type": "intercepted", "messageId": f"m-{text}"}, AT


@pytest.fixture
async def twin(tasks: TaskStore, request: pytest.FixtureRequest) -> AsyncIterator[TaskStore]:
    """A second task store on the database of ``tasks``: another server's."""
    other: TaskStore
    if isinstance(tasks, SQLiteStore):
        other = SQLiteStore(tasks.path)
    elif isinstance(tasks, PostgresStore):
        other = PostgresStore(request.getfixturevalue("postgres_url"), connect_timeout=5.0)
    else:
        pytest.skip("a memory store belongs to one server")
    await other.open()
    try:
        yield other
    finally:
        await other.close()


async def test_two_servers_never_give_two_turns_one_seq(tasks: TaskStore, twin: TaskStore) -> None:
    buses = (EventBus(), EventBus())
    here = ConversationService(conversation_store_for(tasks), bus=buses[0])
    there = ConversationService(conversation_store_for(twin), bus=buses[1])
    cid = (await new(here))["conversation"]["id"]
    subs = [bus.subscribe(KEY, {"eventTypes": ["mail.participant.joined"]}) for bus in buses]
    await say(here, cid, "1")
    await say(there, cid, "2")
    await say(here, cid, "3")  # a server that kept its own newest seq would write 2 again
    await here.intercept(KEY, {cid: [said("4")]})
    await there.intercept(KEY, {cid: [said("5")]})
    rows = await here.store.list_records(KEY, "turn", cid)
    assert [r.data["content"]["text"] for r in rows] == ["1", "2", "3", "4", "5"]
    assert [r.seq for r in rows] == [1, 2, 3, 4, 5]
    # both servers at once: every turn its own seq, the author joined once
    await asyncio.gather(
        *(
            s.intercept(KEY, {cid: [said(f"x{i}"), said(f"y{i}")]})
            for i, s in enumerate([here, there] * 5)
        )
    )
    rows = await there.store.list_records(KEY, "turn", cid)
    assert [r.seq for r in rows] == list(range(1, 26))
    people = await here.store.list_records(KEY, "participant", cid)
    assert sorted(r.record_id for r in people) == ["agent:a", ME.participant_id]
    joined = [e.data["participant"]["id"] for s in subs for _, e in s.log]
    assert joined == ["agent:a"]


async def test_one_write_records_many_conversations(
    service: ConversationService, bus: EventBus
) -> None:
    sub = bus.subscribe(KEY, {})
    first = (await new(service))["conversation"]["id"]
    second = (await new(service))["conversation"]["id"]
    closed = (await new(service))["conversation"]["id"]
    await service.call("mail/close", ME, {"conversationId": closed})
    await say(service, second, "before")
    seen = sub.last
    recorded = await service.intercept(
        KEY,
        {
            first: [said("a1"), said("a2")],
            "conv-unknown": [said("lost")],
            closed: [said("lost")],
            second: [said("b1")],
        },
    )
    assert {cid: [t["content"]["text"] for t in turns] for cid, turns in recorded.items()} == {
        first: ["a1", "a2"],
        second: ["b1"],
    }
    # stamped with the time of the event, not of the write; each its own id
    assert all(t["timestamp"] == 1795759200123 for turns in recorded.values() for t in turns)
    assert len({t["id"] for turns in recorded.values() for t in turns}) == 3
    assert [r.seq for r in await service.store.list_records(KEY, "turn", second)] == [1, 2]
    assert await service.store.list_records(KEY, "turn", closed) == []
    events = [e for _, e in sub.since(seen)]
    assert [
        (e.type, e.data["conversationId"]) for e in events if e.data["conversationId"] == first
    ] == [
        ("mail.participant.joined", first),
        ("mail.turn.added", first),
        ("mail.turn.added", first),
    ]
    assert [e.type for e in events if e.data["conversationId"] == second] == [
        "mail.participant.joined",
        "mail.turn.added",
    ]
    assert len(events) == 5
    # the new author joined as a worker after the turns that were there: it sees its own
    joined = await service.store.get(KEY, second, "participant", "agent:a")
    assert joined is not None
    assert joined.data["role"] == "worker" and joined.data["joinedAfterTurn"] == 1


def _message(log: EventLog, text: str) -> None:
    sender = {"address_type": "user", "address": "u1"}
    full = {"id": f"m-{text}", "msg_type": "request", "message": {"sender": sender, "body": text}}
    log.emit(EventName.NEW_MESSAGE, "a message", {"full_message": full})


async def test_interceptor_batches_drain_at_once_and_fail_per_conversation(
    tmp_path: Path,
) -> None:
    tasks = SQLiteStore(tmp_path / "mail.db")
    await tasks.open()
    service = ConversationService(conversation_store_for(tasks))
    logs = {task: EventLog(task) for task in ("t-good", "t-bad", "t-unbound")}

    async def events(key: object, task_id: str, after: int) -> list[MAILEvent]:
        return logs[task_id].since(after) if task_id in logs else []

    # eager: caught up by the writer, whose 60 s of gathering drain() must not wait for
    interceptor = Interceptor(service, events, eager=True, interval=60.0)
    interceptor.start()
    try:
        good = (await new(service, taskId="t-good"))["conversation"]["id"]
        bad = (await new(service, taskId="t-bad"))["conversation"]["id"]
        conn = sqlite3.connect(tasks.path, timeout=10, isolation_level=None)
        try:
            conn.execute(
                "CREATE TRIGGER refuse_turns BEFORE INSERT ON conversation_records "
                f"WHEN NEW.kind = 'turn' AND NEW.conversation_id = '{bad}' "
                "BEGIN SELECT RAISE(ABORT, 'injected'); END"
            )
        finally:
            conn.close()
        for n in range(3):
            for log in logs.values():
                _message(log, f"{log.task_id}-{n}")
                interceptor.events_added(KEY, log)
        await asyncio.wait_for(interceptor.drain(), timeout=5.0)
        turns = await service.store.list_records(KEY, "turn", good)
        assert [r.data["content"]["text"] for r in turns] == ["t-good-0", "t-good-1", "t-good-2"]
        assert [r.data["source"]["messageId"] for r in turns] == [
            "m-t-good-0",
            "m-t-good-1",
            "m-t-good-2",
        ]
        assert await service.store.list_records(KEY, "turn", bad) == []
        await asyncio.wait_for(interceptor.drain(), timeout=5.0)  # nothing pending: at once
    finally:
        await interceptor.close()
        await tasks.close()


async def test_conversation_ids_sort_by_creation(service: ConversationService) -> None:
    # newer conversations' rows go to the end of the indexes keyed by conversation
    ids = [(await new(service))["conversation"]["id"] for _ in range(3)]
    assert len(set(ids)) == 3 and all(len(cid) == len("conv-") + 24 for cid in ids)
    created = [int(cid[5:17], 16) for cid in ids]  # epoch ms (ties within one ms)
    assert created == sorted(created)
    conv = await service.store.get(KEY, ids[0], "conversation", ids[0])
    assert conv is not None and abs(created[0] - conv.data["createdAt"]) < 1000


async def test_a_gated_log_is_caught_up_once_its_events_are_committed(
    service: ConversationService,
) -> None:
    # cluster mode: the turns are made of the events the store committed only
    log = EventLog("t-gated")
    log.committed_seq = 0

    async def events(key: object, task_id: str, after: int) -> list[MAILEvent]:
        committed = log.committed_seq or 0
        return [e for e in log.since(after) if (e.seq or 0) <= committed]

    interceptor = Interceptor(service, events, eager=True, interval=0.01)
    interceptor.start()
    try:
        cid = (await new(service, taskId="t-gated"))["conversation"]["id"]
        for n in range(2):
            _message(log, f"gated-{n}")
            interceptor.events_added(KEY, log)
        await asyncio.wait_for(interceptor.drain(), timeout=5.0)
        assert await service.store.list_records(KEY, "turn", cid) == []
        log.commit(log.last_seq)  # no new event tells the interceptor: it looks again
        await asyncio.wait_for(interceptor.drain(), timeout=5.0)
        turns = await service.store.list_records(KEY, "turn", cid)
        assert [r.data["content"]["text"] for r in turns] == ["gated-0", "gated-1"]
    finally:
        await interceptor.close()
