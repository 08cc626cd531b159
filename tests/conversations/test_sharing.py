"""Conversations shared by invitation, on every store: a guest's ``mail/list`` shows them
(marked ``x-guest``) among its own, paged over both; its subscriptions get their events
as far as it reads them; and counts are made when read, never stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conversations.conftest import KEY, actor

from mail.conversations import Actor, ConversationService, EventBus, Reader
from mail.db import CallerKey, SQLiteStore

OWNER = actor()
U2 = CallerKey(swarm="demo", role="user", id="u2")
GUEST = actor("user:u2", key=U2)
TEXT = {"contentType": "text", "content": {"text": "hi"}}


async def create(service: ConversationService, who: Any, **params: Any) -> str:
    created = await service.call("mail/create", who, params)
    return str(created["conversation"]["id"])


async def invite(service: ConversationService, cid: str, pid: str, **extra: Any) -> None:
    participant = {"id": pid, **extra}
    await service.call("mail/invite", OWNER, {"conversationId": cid, "participant": participant})


async def say(service: ConversationService, who: Any, cid: str, **extra: Any) -> str:
    params = {"conversationId": cid, **TEXT, **extra}
    return str((await service.call("mail/turn", who, params))["turn"]["id"])


async def pages(service: ConversationService, who: Any, **params: Any) -> list[dict[str, Any]]:
    """Every conversation ``mail/list`` gives ``who``, following the cursors."""
    seen: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = await service.call("mail/list", who, {**params, "cursor": cursor})
        assert len(page["conversations"]) <= params.get("limit", 50)
        seen += page["conversations"]
        cursor = page["nextCursor"]
        assert page["hasMore"] is (cursor is not None)
        if cursor is None:
            return seen


async def test_a_guest_lists_the_conversations_shared_with_it(
    service: ConversationService,
) -> None:
    first = await create(service, GUEST, subject="its own, first")
    shared = await create(service, OWNER, subject="shared")
    await create(service, OWNER, subject="not shared")
    observed = await create(service, OWNER, subject="as observer")
    removed = await create(service, OWNER, subject="removed")
    last = await create(service, GUEST, subject="its own, last")
    await invite(service, shared, "user:u2")
    await invite(service, observed, "user:u2", role="observer")
    await invite(service, removed, "user:u2")
    await invite(service, shared, "u2")  # another id: stands for itself, shares nothing
    await service.call("mail/leave", OWNER, {"conversationId": removed, "participantId": "user:u2"})
    await service.call("mail/leave", GUEST, {"conversationId": observed})  # may come back

    listed = await pages(service, GUEST, limit=1)
    ids = [c["id"] for c in listed]
    assert sorted(ids) == sorted([first, shared, observed, last])  # each once
    assert ids == [c["id"] for c in sorted(listed, key=lambda c: (c["createdAt"], c["id"]))]
    by_id = {c["id"]: c for c in listed}
    assert "x-guest" not in by_id[first] and "x-guest" not in by_id[last]
    mark = {"participantId": "user:u2", "role": "worker", "leftAt": None}
    assert by_id[shared]["x-guest"] == mark
    assert by_id[observed]["x-guest"]["role"] == "observer"
    assert by_id[observed]["x-guest"]["leftAt"] is not None
    counts = {cid: c["participantCount"] for cid, c in by_id.items()}
    assert counts == {first: 1, shared: 3, observed: 1, last: 1}
    assert by_id[shared]["createdBy"] == "user:u1"  # the owner's conversation
    # the filters apply to shared conversations too; the owner's list is its own
    active = await pages(service, GUEST, filter={"participantId": "u2"})
    assert [c["id"] for c in active] == [shared]
    assert [c["id"] for c in await pages(service, GUEST, filter={"taskId": "t"})] == []
    owners = await pages(service, OWNER, limit=2)
    assert len(owners) == 4 and all("x-guest" not in c for c in owners)


async def test_an_agent_lists_what_was_shared_with_it_as_its_keys_agent(
    service: ConversationService,
) -> None:
    agents = CallerKey(swarm="demo", role="swarm", id="k1")
    first = Actor(key=agents, participant_id="agent:a1", principal="agent:k1")
    second = Actor(key=agents, participant_id="agent:a2", principal="agent:k1")
    cid = await create(service, OWNER)
    service.principal_of = lambda pid: "agent:k1" if pid.startswith("agent:") else pid
    await invite(service, cid, "agent:a1")
    assert [c["id"] for c in await pages(service, first)] == [cid]
    assert await pages(service, second) == []  # its key's, not its own participant


async def test_a_guest_subscription_gets_what_it_may_read(
    service: ConversationService, bus: EventBus
) -> None:
    cid = await create(service, OWNER)
    reader = Reader(key=U2, participant_id="user:u2", principal="user:u2")
    everything = bus.subscribe(U2, {}, reader)
    keyed_only = bus.subscribe(U2, {})  # no participant: its caller's own events only
    other = actor("user:u3", key=CallerKey(swarm="demo", role="user", id="u3"))
    stranger = bus.subscribe(other.key, {}, Reader(key=other.key, participant_id="user:u3"))
    before = await say(service, OWNER, cid)
    await invite(service, cid, "user:u2", permissions={"historyAccess": "from-join"})
    public = await say(service, OWNER, cid)
    await say(service, OWNER, cid, visibility={"type": "participants", "ids": ["user:u1"]})
    await say(service, OWNER, cid, contentType="x-note", content={"n": 1})  # internal
    own = await say(service, GUEST, cid)
    turn_ids = [before, public, own]
    for turn_id in turn_ids:
        await service.call("x-mail/turn/redact", OWNER, {"conversationId": cid, "turnId": turn_id})
    await service.call("mail/leave", OWNER, {"conversationId": cid, "participantId": "user:u2"})
    await say(service, OWNER, cid)  # after the removal

    got = [(e.type, _turn_of(e.data)) for _, e in everything.log]
    assert got == [
        ("mail.participant.joined", None),
        ("mail.turn.added", public),
        ("mail.turn.added", own),
        ("mail.turn.updated", public),
        ("mail.turn.updated", own),
        ("mail.participant.left", None),
    ]
    assert [seq for seq, _ in everything.log] == [1, 2, 3, 4, 5, 6]
    assert not keyed_only.log and not stranger.log
    assert bus.listening_to(KEY) and bus.listening_to(OWNER.key, "mail.turn.added")


def _turn_of(data: dict[str, Any]) -> str | None:
    """The id of the turn an event tells of (``None``: none)."""
    return str(data["turn"]["id"]) if "turn" in data else data.get("turnId")


async def test_counts_are_not_stored(service: ConversationService) -> None:
    cid = await create(service, OWNER, initialParticipants=[{"id": "agent:bob"}])
    turn = await say(service, OWNER, cid)
    params = {"conversationId": cid, "rootTurnId": turn}
    thread = (await service.call("mail/thread/create", OWNER, params))["thread"]
    stored = await service.store.get(KEY, cid, "conversation", cid)
    stored_thread = await service.store.get(KEY, cid, "thread", thread["id"])
    assert stored is not None and "participantCount" not in stored.data
    assert stored_thread is not None
    assert not {"turnCount", "participantCount", "updatedAt"} & set(stored_thread.data)
    got = await service.call(
        "mail/get", OWNER, {"conversationId": cid, "include": {"threads": True}}
    )
    assert got["conversation"]["participantCount"] == 2
    assert (thread["turnCount"], got["threads"][0]["turnCount"]) == (0, 0)


async def test_sqlite_finds_a_guests_conversations_through_the_principal_index(
    tmp_path: Path,
) -> None:
    from mail.conversations._sql_store import _SQLITE_SHARED

    tasks = SQLiteStore(tmp_path / "mail.db")
    await tasks.open()
    try:
        plan = await tasks.run(
            "plan",
            lambda conn: conn.execute(
                f"EXPLAIN QUERY PLAN {_SQLITE_SHARED}", ("demo", "user:u2")
            ).fetchall(),
        )
    finally:
        await tasks.close()
    steps = " / ".join(str(row[-1]) for row in plan)
    assert "SEARCH p USING INDEX idx_conversation_records_principal" in steps, steps
