"""Conversations shared by invitation, seen from the guest against a real server over real
sockets: its ``mail/list`` shows them (marked ``x-guest``), its subscriptions (all, or one
conversation) and ``map/replay`` get their events as far as it reads the turns, and the
owner's removal ends them."""

from __future__ import annotations

from typing import Any

import pytest
from tests.server.conftest import Running
from tests.server.test_map_rpc import rpc
from tests.server.test_map_socket import Peer, peer

pytestmark = pytest.mark.timeout(60)

HELLO = {"contentType": "text", "content": {"text": "hello"}}
ONLY_OWNER = {"type": "participants", "ids": ["user:u1"]}


async def say(client: Peer, cid: str, **extra: Any) -> str:
    turn = await client.result("mail/turn", {"conversationId": cid, **HELLO, **extra})
    return str(turn["turn"]["id"])


async def events_until(client: Peer, turn_id: str) -> dict[str, list[tuple[str, Any]]]:
    """The ``mail.*`` events ``client`` is notified of, by subscription, up to the one
    adding the turn ``turn_id`` (included): ``(type, the turn id or participant id it
    tells of)``; their sequence numbers must run 1, 2, 3, ... per subscription."""
    got: dict[str, list[tuple[str, Any]]] = {}
    numbers: dict[str, list[int]] = {}
    while True:
        note = await client.note()
        assert note["method"] == "map/event", note
        params = note["params"]
        event, sid = params["event"], params["subscriptionId"]
        numbers.setdefault(sid, []).append(params["sequenceNumber"])
        data = event["data"]
        told = (data.get("turn") or {}).get("id") or data.get("turnId")
        told = told or data.get("participantId") or (data.get("participant") or {}).get("id")
        got.setdefault(sid, []).append((event["type"], told))
        if event["type"] == "mail.turn.added" and told == turn_id:
            break
    for sequence in numbers.values():
        assert sequence == list(range(sequence[0], sequence[0] + len(sequence)))
    return got


async def test_a_guest_lists_and_follows_a_shared_conversation(offline: Running) -> None:
    async with peer(offline, "user-key") as owner, peer(offline, "user2-key") as guest:
        own = (await guest.result("mail/create", {"subject": "its own"}))["conversation"]["id"]
        everything = (await guest.result("map/subscribe", {}))["subscriptionId"]
        cid = (await owner.result("mail/create", {"subject": "shared"}))["conversation"]["id"]
        await owner.result("mail/create", {"subject": "not shared"})
        before = await guest.call("mail/get", {"conversationId": cid})
        invite = {"conversationId": cid, "participant": {"id": "user:u2"}}
        await owner.result("mail/invite", invite)
        one = {"filter": {"mail": {"conversationId": cid}}}
        only = (await guest.result("map/subscribe", one))["subscriptionId"]
        listed = await guest.result("mail/list", {"limit": 1})
        rest = await guest.result("mail/list", {"limit": 1, "cursor": listed["nextCursor"]})
        public = await say(owner, cid)
        await say(owner, cid, visibility=ONLY_OWNER)
        mine = await say(guest, cid)
        await owner.result("x-mail/turn/redact", {"conversationId": cid, "turnId": public})
        await owner.result("mail/leave", {"conversationId": cid, "participantId": "user:u2"})
        await say(owner, cid)  # after the removal: not the guest's
        last = await say(guest, own)  # the guest's own: ends what it waits for
        got = await events_until(guest, last)
        gone = await guest.call("mail/turns/list", {"conversationId": cid})
        after = await guest.result("mail/list", {})
    assert before["error"]["code"] == 10000
    assert [c["id"] for c in listed["conversations"] + rest["conversations"]] == [own, cid]
    assert listed["hasMore"] is True and rest["hasMore"] is False and rest["nextCursor"] is None
    shared = rest["conversations"][0]
    assert shared["x-guest"] == {"participantId": "user:u2", "role": "worker", "leftAt": None}
    assert shared["createdBy"] == "user:u1" and shared["participantCount"] == 2
    followed = [
        ("mail.participant.joined", "user:u2"),
        ("mail.turn.added", public),
        ("mail.turn.added", mine),
        ("mail.turn.updated", public),
        ("mail.participant.left", "user:u2"),
    ]
    assert got[everything] == [*followed, ("mail.turn.added", last)]
    assert got[only] == followed[1:]  # subscribed once invited
    assert gone["error"]["code"] == 10000
    assert [c["id"] for c in after["conversations"]] == [own]  # removed: no longer listed


async def test_a_guest_replays_the_events_it_may_read(offline: Running) -> None:
    async with peer(offline, "user-key") as owner:
        cid = (await owner.result("mail/create", {}))["conversation"]["id"]
        early = await say(owner, cid)
        invite = {"id": "user:u2", "permissions": {"historyAccess": "from-join"}}
        await owner.result("mail/invite", {"conversationId": cid, "participant": invite})
        public = await say(owner, cid)
        await say(owner, cid, visibility=ONLY_OWNER)
        await say(owner, cid, contentType="x-plan", content={"step": 1})  # internal
    guest = await offline.user2()  # over HTTP
    replayed = await rpc(guest, "map/replay", {"filter": {"mail": {"conversationId": cid}}})
    listed = await rpc(guest, "mail/list", {})
    told = [
        (e["event"]["type"], (e["event"]["data"].get("turn") or {}).get("id"))
        for e in replayed["result"]["events"]
    ]
    assert told == [("mail.participant.joined", None), ("mail.turn.added", public)]
    assert early != public
    assert [c["id"] for c in listed["result"]["conversations"]] == [cid]


async def test_an_agent_guest_follows_the_conversation_it_was_invited_to(
    offline: Running,
) -> None:
    async with peer(offline, "user-key") as owner, peer(offline, "agent-key") as agent:
        await agent.result("map/agents/register", {"agentId": "helper"})
        sub = (await agent.result("map/subscribe", {}))["subscriptionId"]
        cid = (await owner.result("mail/create", {}))["conversation"]["id"]
        invite = {"conversationId": cid, "participant": {"id": "agent:helper"}}
        await owner.result("mail/invite", invite)
        said = await say(owner, cid)
        listed = await agent.result("mail/list", {})
        got = await events_until(agent, said)
    assert got[sub] == [("mail.participant.joined", "agent:helper"), ("mail.turn.added", said)]
    assert [c["id"] for c in listed["conversations"]] == [cid]
    assert listed["conversations"][0]["x-guest"]["participantId"] == "agent:helper"
