"""A ``mail/turn`` in one store write: the store reads the conversation, its participants
and the rows the turn names, the service's check judges them in the same transaction
(the errors in the order ``mail/turn`` checks them, nothing written when it refuses), and
the turn's event reaches the participants read there; a conversation bound to a task gets
its intercepted turns first."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from tests.conversations.conftest import KEY, actor
from tests.conversations.test_appending import _message
from tests.conversations.test_service import BOB, ME, code_of, new, say

from mail.conversations import ConversationService, EventBus, conversation_store_for
from mail.conversations.errors import MailPermissionDeniedError
from mail.conversations.interception import Interceptor
from mail.conversations.store import TurnWrite
from mail.core.events import EventLog, MAILEvent
from mail.db import SQLiteStore
from mail.errors import StorageError


def _turn(cid: str, turn_id: str, **refs: Any) -> dict[str, Any]:
    """A turn's wire object as the service hands it to the store."""
    return {
        "id": turn_id,
        "conversationId": cid,
        "participantId": ME.participant_id,
        "contentType": "text",
        "content": {"text": turn_id},
        "inReplyTo": None,
        "threadId": None,
        **refs,
    }


async def test_add_turn_reads_then_writes_only_what_its_check_passes(
    service: ConversationService,
) -> None:
    store = service.store
    cid = (await new(service, initialParticipants=[{"id": "agent:bob"}]))["conversation"]["id"]
    first = await say(service, cid, "first")
    seen: list[TurnWrite] = []

    def refuse(found: TurnWrite) -> bool:
        seen.append(found)
        raise MailPermissionDeniedError("no", permission="canSend")

    refs = {"inReplyTo": first["id"], "threadId": "thread-nope"}
    with pytest.raises(MailPermissionDeniedError):  # as raised, not a StorageError
        await store.add_turn(KEY, _turn(cid, "turn-refused", **refs), refuse)
    [found] = seen
    assert found.conversation is not None and found.conversation.record_id == cid
    assert [r.record_id for r in found.people] == [ME.participant_id, "agent:bob"]
    assert [(r.kind, r.record_id) for r in found.refs] == [("turn", first["id"])]
    assert found.turn is None
    later = await store.add_turn(KEY, _turn(cid, "turn-later"), lambda found: False)
    assert later.conversation is not None and later.turn is None
    written = await store.add_turn(KEY, _turn(cid, "turn-written"), lambda found: True)
    assert written.turn is not None and written.turn.seq == 2
    rows = await store.list_records(KEY, "turn", cid)
    assert [r.record_id for r in rows] == [first["id"], "turn-written"]
    nowhere = await store.add_turn(KEY, _turn("conv-nope", "turn-lost"), lambda found: True)
    assert nowhere.conversation is None and nowhere.people == [] and nowhere.turn is None
    assert await store.list_records(KEY, "turn", "conv-nope") == []


async def test_a_turn_is_refused_in_the_order_of_the_checks(
    service: ConversationService, bus: EventBus
) -> None:
    sub = bus.subscribe(KEY, {"eventTypes": ["mail.turn.added"]})
    cid = (await new(service))["conversation"]["id"]
    await service.call(
        "mail/invite",
        ME,
        {"conversationId": cid, "participant": {"id": "agent:eve", "role": "observer"}},
    )
    eve = actor("agent:eve")
    wrong = {"contentType": "foo", "inReplyTo": "turn-nope", "threadId": "thread-nope"}

    async def turn(who: Any, conversation: str = cid, **params: Any) -> int:
        body = {"conversationId": conversation, "content": {}, "contentType": "text", **params}
        return await code_of(service.call("mail/turn", who, body))

    assert await turn(ME, "conv-nope", **wrong) == 10000
    assert await turn(BOB, **wrong) == 10002
    assert await turn(eve, **wrong) == 10003
    assert await turn(ME, **wrong) == 10008
    assert await turn(ME, inReplyTo="turn-nope", threadId="thread-nope") == 10006
    assert await turn(ME, threadId="thread-nope") == 10007
    await service.call("mail/close", ME, {"conversationId": cid})
    assert await turn(BOB, **wrong) == 10001
    assert await service.store.list_records(KEY, "turn", cid) == []
    assert not sub.log


async def test_a_turn_is_one_transaction_in_sqlite(tmp_path: Path) -> None:
    tasks = SQLiteStore(tmp_path / "mail.db")
    await tasks.open()
    try:
        bus = EventBus()
        service = ConversationService(conversation_store_for(tasks), bus=bus)
        cid = (await new(service, initialParticipants=[{"id": "agent:bob"}]))["conversation"]["id"]
        sub = bus.subscribe(KEY, {"eventTypes": ["mail.turn.added"]})
        statements: list[str] = []

        def trace(conn: sqlite3.Connection) -> None:
            conn.set_trace_callback(statements.append)

        await tasks.run("trace", trace)
        turn = await say(service, cid, "one")
        await tasks.run("trace", lambda conn: conn.set_trace_callback(None))
        assert statements[0] == "BEGIN IMMEDIATE" and statements[-1] == "COMMIT"
        assert sum(s.startswith("BEGIN") for s in statements) == 1  # nothing read apart
        [(_, event)] = sub.log
        assert event.data["turn"]["id"] == turn["id"]
        # the participants read in the same transaction
        assert event.guests == {ME.participant_id: ME.participant_id, "agent:bob": "agent:bob"}
    finally:
        await tasks.close()
    with pytest.raises(StorageError):  # a closed store: the store's error, not the check's
        await say(service, cid, "closed")


async def test_a_turn_in_a_bound_conversation_follows_its_intercepted_turns(
    service: ConversationService,
) -> None:
    log = EventLog("t-bound")

    async def events(key: object, task_id: str, after: int) -> list[MAILEvent]:
        return log.since(after) if task_id == log.task_id else []

    Interceptor(service, events)  # its catch-ups, run before the turn is written
    cid = (await new(service, taskId="t-bound"))["conversation"]["id"]
    _message(log, "asked")
    _message(log, "answered")
    await say(service, cid, "mine")
    rows = await service.store.list_records(KEY, "turn", cid)
    assert [r.data["content"]["text"] for r in rows] == ["asked", "answered", "mine"]
    assert [r.seq for r in rows] == [1, 2, 3]


async def test_turns_written_together_share_one_transaction_in_sqlite(tmp_path: Path) -> None:
    tasks = SQLiteStore(tmp_path / "mail.db")
    await tasks.open()
    try:
        service = ConversationService(conversation_store_for(tasks), bus=EventBus())
        cid = (await new(service))["conversation"]["id"]
        other = (await new(service))["conversation"]["id"]
        statements: list[str] = []
        await tasks.run("trace", lambda conn: conn.set_trace_callback(statements.append))
        said = await asyncio.gather(
            *(say(service, cid if n % 2 else other, f"turn {n}") for n in range(20))
        )
        await tasks.run("trace", lambda conn: conn.set_trace_callback(None))
        # fewer transactions than turns: the turns made while one was written share the next
        assert 1 <= sum(s.startswith("BEGIN") for s in statements) < 20
        for conversation in (cid, other):
            rows = await service.store.list_records(KEY, "turn", conversation)
            # each conversation's turns numbered one after the other, in the order asked
            assert [r.seq for r in rows] == list(range(1, 11))
            mine = [t["id"] for t in said if t["conversationId"] == conversation]
            assert [r.record_id for r in rows] == mine
    finally:
        await tasks.close()


async def test_a_turn_that_fails_the_shared_write_costs_only_itself(tmp_path: Path) -> None:
    tasks = SQLiteStore(tmp_path / "mail.db")
    await tasks.open()
    try:
        store = conversation_store_for(tasks)
        service = ConversationService(store, bus=EventBus())
        cid = (await new(service))["conversation"]["id"]

        def broken(found: TurnWrite) -> bool:
            raise RuntimeError("the check broke")

        def refused(found: TurnWrite) -> bool:
            raise MailPermissionDeniedError("no", permission="canSend")

        checks = [lambda found: True, broken, refused, lambda found: True]
        results = await asyncio.gather(
            *(store.add_turn(KEY, _turn(cid, f"t{n}"), check) for n, check in enumerate(checks)),
            return_exceptions=True,
        )
        assert isinstance(results[1], StorageError) and "the check broke" in str(results[1])
        assert isinstance(results[2], MailPermissionDeniedError)  # as raised
        written = [r for r in results if isinstance(r, TurnWrite)]
        assert [w.turn.record_id for w in written if w.turn] == ["t0", "t3"]
        rows = await store.list_records(KEY, "turn", cid)
        assert [(r.record_id, r.seq) for r in rows] == [("t0", 1), ("t3", 2)]
    finally:
        await tasks.close()
