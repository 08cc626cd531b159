"""The ``mail/*`` methods on every store (the brief's C11-C26 at the service level)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from tests.conversations.conftest import KEY, actor

from mail.conversations import ConversationService, EventBus, MailProtocolError

ME = actor()
BOB = actor("agent:bob")
TEXT = {"contentType": "text", "content": {"text": "hi"}}


async def code_of(coro: Any) -> int:
    with pytest.raises(MailProtocolError) as caught:
        await coro
    return caught.value.code


async def new(service: ConversationService, **params: Any) -> dict[str, Any]:
    return await service.call("mail/create", ME, {"type": "multi-agent", **params})


async def say(
    service: ConversationService, cid: str, text: str, who: Any = ME, **extra: Any
) -> dict[str, Any]:
    params = {"conversationId": cid, "contentType": "text", "content": {"text": text}, **extra}
    return (await service.call("mail/turn", who, params))["turn"]


async def test_create_makes_the_caller_initiator_of_an_active_conversation(
    service: ConversationService,
) -> None:  # C11, C12
    created = await new(
        service, subject="plan", initialTurn={"contentType": "text", "content": {"text": "hi"}}
    )
    assert created["participant"]["role"] == "initiator"
    assert created["participant"]["id"] == "user:u1"
    assert created["conversation"]["status"] == "active"
    cid = created["conversation"]["id"]
    listed = await service.call("mail/turns/list", ME, {"conversationId": cid})
    assert [t["id"] for t in listed["turns"]] == [created["initialTurn"]["id"]]


async def test_everything_reads_back_from_a_reopened_store(tasks: Any) -> None:  # C1
    from mail.conversations import conversation_store_for

    store = conversation_store_for(tasks)
    service = ConversationService(store)
    cid = (await new(service, initialParticipants=[{"id": "agent:bob", "role": "worker"}]))[
        "conversation"
    ]["id"]
    turn = await say(service, cid, "root")
    await service.call("mail/thread/create", ME, {"conversationId": cid, "rootTurnId": turn["id"]})
    if tasks.backend != "memory":  # the memory store keeps nothing beyond its object
        await tasks.close()
        await tasks.open()
        store = conversation_store_for(tasks)
    again = ConversationService(store)
    got = await again.call(
        "mail/get", ME, {"conversationId": cid, "include": {"participants": True, "threads": True}}
    )
    assert {p["id"] for p in got["participants"]} == {"user:u1", "agent:bob"}
    assert [t["rootTurnId"] for t in got["threads"]] == [turn["id"]]
    turns = await again.call("mail/turns/list", ME, {"conversationId": cid})
    assert [t["content"] for t in turns["turns"]] == [{"text": "root"}]


async def test_close_completes_and_refuses_changes(
    service: ConversationService, bus: EventBus
) -> None:  # C13, C14
    sub = bus.subscribe(KEY, {"eventTypes": ["mail.closed"]})
    cid = (await new(service))["conversation"]["id"]
    turn = await say(service, cid, "x")
    await service.call("mail/close", ME, {"conversationId": cid, "reason": "done"})
    got = await service.call("mail/get", ME, {"conversationId": cid})
    assert got["conversation"]["status"] == "completed"
    [(_, event)] = sub.log
    assert event.data == {
        "conversationId": cid,
        "closedBy": "user:u1",
        "reason": "done",
        "status": "completed",
    }
    c = {"conversationId": cid}
    assert await code_of(say(service, cid, "late")) == 10001
    assert (
        await code_of(service.call("mail/invite", ME, {**c, "participant": {"id": "z"}})) == 10001
    )
    assert (
        await code_of(service.call("mail/thread/create", ME, {**c, "rootTurnId": turn["id"]}))
        == 10001
    )
    assert await code_of(service.call("mail/join", BOB, c)) == 10001


async def test_content_types_and_participation(service: ConversationService) -> None:
    # C15, C16, C17, C18
    cid = (await new(service))["conversation"]["id"]
    assert await code_of(say(service, cid, "hi", who=BOB)) == 10002
    for content_type in ("text", "data", "event", "reference", "x-foo"):
        params = {"conversationId": cid, "contentType": content_type, "content": {"text": "a"}}
        assert (await service.call("mail/turn", ME, params))["turn"]["contentType"] == content_type
    bad = {"conversationId": cid, "contentType": "foo", "content": {}}
    assert await code_of(service.call("mail/turn", ME, bad)) == 10008
    assert await code_of(service.call("mail/join", ME, {"conversationId": cid})) == 10004
    joined = await service.call(
        "mail/join", BOB, {"conversationId": cid, "catchUp": {"from": 0, "limit": 2}}
    )
    assert len(joined["history"]) == 2 and "summary" not in joined
    assert joined["history"][-1]["contentType"] == "reference"  # x-foo is internal to a worker
    await service.call("mail/leave", BOB, {"conversationId": cid})
    assert await code_of(say(service, cid, "gone", who=BOB)) == 10002
    joined = await service.call(
        "mail/join", BOB, {"conversationId": cid, "catchUp": {"includeSummary": True}}
    )
    assert "summary" in joined


async def test_unknown_references(service: ConversationService) -> None:  # C19
    cid = (await new(service))["conversation"]["id"]
    c = {"conversationId": cid}
    assert await code_of(say(service, cid, "x", inReplyTo="turn-nope")) == 10006
    assert await code_of(say(service, cid, "x", threadId="thread-nope")) == 10007
    assert await code_of(service.call("mail/thread/create", ME, {**c, "rootTurnId": "t"})) == 10006
    assert await code_of(service.call("mail/replay", ME, {**c, "fromTurnId": "t"})) == 10006
    assert await code_of(service.call("mail/get", ME, {"conversationId": "conv-nope"})) == 10000
    assert await code_of(service.call("mail/leave", ME, {**c, "participantId": "ghost"})) == 10005


async def test_thread_nesting_limit(service: ConversationService) -> None:  # C20
    cid = (await new(service))["conversation"]["id"]
    root = (await say(service, cid, "root"))["id"]
    parent = None
    for _ in range(3):
        params = {"conversationId": cid, "rootTurnId": root, "parentThreadId": parent}
        parent = (await service.call("mail/thread/create", ME, params))["thread"]["id"]
    params = {"conversationId": cid, "rootTurnId": root, "parentThreadId": parent}
    assert await code_of(service.call("mail/thread/create", ME, params)) == 10009
    children = await service.call(
        "mail/thread/list", ME, {"conversationId": cid, "parentThreadId": parent}
    )
    assert children["threads"] == []


async def test_list_filters_and_cursor_visits_each_once(service: ConversationService) -> None:
    # C21
    ids = [
        (await new(service, type="mixed" if i % 2 else "user-session"))["conversation"]["id"]
        for i in range(7)
    ]
    await service.call("mail/close", ME, {"conversationId": ids[0]})
    seen: list[str] = []
    cursor = None
    while True:
        page = await service.call("mail/list", ME, {"limit": 3, "cursor": cursor})
        assert len(page["conversations"]) <= 3
        seen += [c["id"] for c in page["conversations"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))
    mixed = await service.call("mail/list", ME, {"filter": {"type": ["mixed"]}})
    assert {c["id"] for c in mixed["conversations"]} == set(ids[1::2])
    active = await service.call("mail/list", ME, {"filter": {"status": ["completed"]}})
    assert [c["id"] for c in active["conversations"]] == [ids[0]]
    await service.call("mail/invite", ME, {"conversationId": ids[3], "participant": {"id": "b"}})
    with_b = await service.call("mail/list", ME, {"filter": {"participantId": "b"}})
    assert [c["id"] for c in with_b["conversations"]] == [ids[3]]


async def test_turns_list_filters_order_and_replay(service: ConversationService) -> None:
    # C22, C23
    cid = (await new(service))["conversation"]["id"]
    await service.call(
        "mail/invite", ME, {"conversationId": cid, "participant": {"id": "agent:bob"}}
    )
    first = await say(service, cid, "one")
    thread = (
        await service.call(
            "mail/thread/create", ME, {"conversationId": cid, "rootTurnId": first["id"]}
        )
    )["thread"]
    second = await say(service, cid, "two", who=BOB, threadId=thread["id"])
    data = (
        await service.call(
            "mail/turn", ME, {"conversationId": cid, "contentType": "data", "content": [1]}
        )
    )["turn"]
    c = {"conversationId": cid}

    async def ids(**params: Any) -> list[str]:
        return [
            t["id"] for t in (await service.call("mail/turns/list", ME, {**c, **params}))["turns"]
        ]

    assert await ids(filter={"threadId": thread["id"]}) == [second["id"]]
    assert await ids(filter={"contentTypes": ["data"]}) == [data["id"]]
    assert await ids(filter={"participantId": "agent:bob"}) == [second["id"]]
    assert await ids(filter={"afterTimestamp": first["timestamp"] - 1}) == [
        first["id"],
        second["id"],
        data["id"],
    ]
    assert await ids(order="desc", limit=2) == [data["id"], second["id"]]
    page = await service.call("mail/turns/list", ME, {**c, "limit": 2})
    rest = await service.call("mail/turns/list", ME, {**c, "cursor": page["nextCursor"]})
    assert [t["id"] for t in rest["turns"]] == [data["id"]] and rest["nextCursor"] is None
    replay = await service.call("mail/replay", ME, {**c, "fromTurnId": first["id"]})
    assert [t["id"] for t in replay["turns"]] == [second["id"], data["id"]]
    replay = await service.call(
        "mail/replay", ME, {**c, "fromTurnId": first["id"], "contentTypes": ["text"], "limit": 1}
    )
    assert [t["id"] for t in replay["turns"]] == [second["id"]]


async def test_summary_is_cached_until_regenerated(
    service: ConversationService, bus: EventBus
) -> None:  # C24
    sub = bus.subscribe(KEY, {"eventTypes": ["mail.summary.generated"]})
    cid = (await new(service))["conversation"]["id"]
    await say(service, cid, "We decided to ship on Friday. Who writes the notes?")
    c = {"conversationId": cid}
    summary = await service.call("mail/summary", ME, {**c, "include": {"keyDecisions": False}})
    assert "keyDecisions" not in summary
    assert summary["openQuestions"] == ["Who writes the notes?"]
    assert isinstance(summary["summary"], str) and summary["generated"] is True
    assert len(sub.log) == 1
    assert sub.log[0][1].data["summary"] == summary["summary"]  # the text, as the SDK reads it
    await say(service, cid, "More.")
    cached = await service.call("mail/summary", ME, c)
    assert cached["turnCount"] == 1 and len(sub.log) == 1
    assert cached["generated"] is False and cached["cachedAt"] == summary["cachedAt"]
    assert cached["keyDecisions"] == ["We decided to ship on Friday."]
    fresh = await service.call("mail/summary", ME, {**c, "regenerate": True})
    assert fresh["turnCount"] == 2 and len(sub.log) == 2 and fresh["generated"] is True


async def test_visibility_per_participant(service: ConversationService) -> None:  # C25
    cid = (await new(service))["conversation"]["id"]
    for pid, role in (("agent:bob", "worker"), ("agent:eve", "observer")):
        await service.call(
            "mail/invite", ME, {"conversationId": cid, "participant": {"id": pid, "role": role}}
        )
    private = await say(service, cid, "p", visibility={"type": "private"})
    to_bob = await say(
        service, cid, "b", visibility={"type": "participants", "participants": ["agent:bob"]}
    )
    observers = await say(service, cid, "o", visibility={"type": "role", "roles": ["observer"]})

    async def seen(pid: str) -> set[str]:
        listed = await service.call("mail/turns/list", actor(pid), {"conversationId": cid})
        return {t["id"] for t in listed["turns"]}

    assert await seen("user:u1") == {private["id"], to_bob["id"], observers["id"]}
    assert await seen("agent:bob") == {to_bob["id"]}
    assert await seen("agent:eve") == {observers["id"]}


async def test_history_access(service: ConversationService) -> None:  # C26
    cid = (await new(service))["conversation"]["id"]
    old = await say(service, cid, "before")
    for pid, access in (("a:none", "none"), ("a:join", "from-join"), ("a:full", "full")):
        await service.call(
            "mail/invite",
            ME,
            {
                "conversationId": cid,
                "participant": {"id": pid, "permissions": {"historyAccess": access}},
            },
        )
    new_turn = await say(service, cid, "after")

    async def seen(pid: str) -> list[str]:
        listed = await service.call("mail/turns/list", actor(pid), {"conversationId": cid})
        return [t["id"] for t in listed["turns"]]

    assert await seen("a:none") == []
    assert await seen("a:join") == [new_turn["id"]]
    assert await seen("a:full") == [old["id"], new_turn["id"]]


async def test_disabled_mail_answers_10010(service: ConversationService) -> None:  # C27
    from mail.conversations import METHODS

    service.enabled = False
    for method in METHODS:
        assert await code_of(service.call(method, ME, {"conversationId": "c"})) == 10010


async def test_callers_do_not_see_each_others_conversations(service: ConversationService) -> None:
    cid = (await new(service))["conversation"]["id"]
    other = actor("user:u2", key=KEY.__class__(swarm="demo", role="user", id="u2"))
    assert await code_of(service.call("mail/get", other, {"conversationId": cid})) == 10000
    # the same participant id from another key is not its principal either
    forged = actor(key=KEY.__class__(swarm="demo", role="user", id="u2"), pid="user:u1")
    forged = replace(forged, principal="user:u2")
    assert await code_of(service.call("mail/get", forged, {"conversationId": cid})) == 10000


async def test_an_invitation_shares_a_conversation_in_every_store(
    service: ConversationService,
) -> None:
    cid = (await new(service))["conversation"]["id"]
    c = {"conversationId": cid}
    guest = actor("user:u2", key=KEY.__class__(swarm="demo", role="user", id="u2"))
    invite = {**c, "participant": {"id": "user:u2", "role": "observer"}}
    await service.call("mail/invite", ME, invite)
    got = await service.call("mail/get", guest, c)
    muted = await code_of(service.call("mail/turn", guest, {**c, **TEXT}))
    await service.call("mail/turn", ME, {**c, **TEXT})
    seen = await service.call("mail/turns/list", guest, c)
    await service.call("mail/leave", ME, {**c, "participantId": "user:u2"})
    removed = await code_of(service.call("mail/get", guest, c))
    assert got["conversation"]["id"] == cid
    assert muted == 10003  # the invitation's role: an observer
    assert [t["participantId"] for t in seen["turns"]] == ["user:u1"]
    assert removed == 10000


@pytest.mark.parametrize("status", ["completed", "failed", "archived"])
async def test_leaving_a_closed_conversation_is_10001(
    service: ConversationService, status: str
) -> None:
    created = await new(service, initialParticipants=[{"id": "agent:bob"}])
    cid = created["conversation"]["id"]
    conv = await service.store.get(KEY, cid, "conversation", cid)
    assert conv is not None
    await service.close_as(ME, conv, status, "over")
    c = {"conversationId": cid}
    assert await code_of(service.call("mail/leave", ME, c)) == 10001
    assert await code_of(service.call("mail/leave", BOB, c)) == 10001
    assert (
        await code_of(service.call("mail/leave", ME, {**c, "participantId": "agent:bob"})) == 10001
    )
    got = await service.call("mail/get", ME, {**c, "include": {"participants": True}})
    assert {p["id"] for p in got["participants"]} == {"user:u1", "agent:bob"}
