"""Admins observing other callers' conversations (R6), archiving (R8), and visibility (C25)
and history access (C26) between two real identities over HTTP: the owning user and an
admin observer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server.conftest import Running, Start
from tests.server.test_map_events import subscribe, take
from tests.server.test_map_rpc import rpc
from tests.server.test_map_start import BACKENDS, config_for, postgres_admin_url, postgres_url

__all__ = ["postgres_admin_url", "postgres_url"]  # the fixtures the PostgreSQL runs use

ADMIN = "admin:admin1"


async def result(client: httpx.AsyncClient, method: str, params: dict[str, Any]) -> Any:
    answer = await rpc(client, method, params)
    assert "result" in answer, (method, answer)
    return answer["result"]


async def code(client: httpx.AsyncClient, method: str, params: dict[str, Any]) -> int:
    answer = await rpc(client, method, params)
    assert "error" in answer, (method, answer)
    return int(answer["error"]["code"])


async def say(user: httpx.AsyncClient, cid: str, text: str, **extra: Any) -> str:
    params = {"conversationId": cid, "contentType": "text", "content": {"text": text}, **extra}
    return str((await result(user, "mail/turn", params))["turn"]["id"])


async def seen(client: httpx.AsyncClient, cid: str, method: str = "mail/turns/list") -> list[str]:
    turns = (await result(client, method, {"conversationId": cid}))["turns"]
    return [t["content"]["text"] for t in turns]


@BACKENDS
async def test_an_admin_observes_any_callers_conversation(
    start: Start, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    running = await start(config_for(tmp_path, backend, request))
    user, admin, other = await running.user(), await running.admin(), await running.user2()
    cid = (await result(user, "mail/create", {"subject": "plans"}))["conversation"]["id"]
    c = {"conversationId": cid}
    await say(user, cid, "We will ship on Friday.")
    # without joining: get, turns/list, replay, summary, thread/list
    got = await result(admin, "mail/get", {**c, "include": {"participants": True}})
    assert got["conversation"]["subject"] == "plans"
    assert [p["id"] for p in got["participants"]] == ["user:u1"]  # not recorded
    assert (
        await seen(admin, cid)
        == await seen(admin, cid, "mail/replay")
        == ["We will ship on Friday."]
    )
    summary = await result(admin, "mail/summary", c)
    assert summary["keyDecisions"] == ["We will ship on Friday."]
    assert (await result(admin, "mail/thread/list", c))["threads"] == []
    # callers stay isolated from each other
    assert await code(other, "mail/get", c) == 10000
    # an observer: no turns, invitations or other roles; joining as observer is recorded
    assert await code(admin, "mail/turn", {**c, "contentType": "text", "content": {}}) == 10002
    assert await code(admin, "mail/join", {**c, "role": "worker"}) == 10003
    joined = await result(admin, "mail/join", {**c, "catchUp": {"limit": 5}})
    assert (joined["participant"]["id"], joined["participant"]["role"]) == (ADMIN, "observer")
    assert [t["content"]["text"] for t in joined["history"]] == ["We will ship on Friday."]
    people = (await result(user, "mail/get", {**c, "include": {"participants": True}}))[
        "participants"
    ]
    assert [(p["id"], p["role"]) for p in people] == [("user:u1", "initiator"), (ADMIN, "observer")]
    assert await code(admin, "mail/turn", {**c, "contentType": "text", "content": {}}) == 10003
    invite = {**c, "participant": {"id": "user:u2"}}
    assert await code(admin, "mail/invite", invite) == 10003
    assert await code(admin, "mail/close", c) == 10003  # closing is the initiator's
    await result(admin, "mail/leave", c)
    assert await code(admin, "mail/leave", c) == 10002


async def test_an_admin_lists_every_caller_with_x_all_callers(offline: Running) -> None:
    user, admin, other = await offline.user(), await offline.admin(), await offline.user2()
    mine = (await result(user, "mail/create", {"type": "user-session"}))["conversation"]["id"]
    theirs = (await result(other, "mail/create", {}))["conversation"]["id"]
    own = (await result(admin, "mail/create", {}))["conversation"]["id"]
    assert [c["id"] for c in (await result(admin, "mail/list", {}))["conversations"]] == [own]
    every = {"filter": {"x-allCallers": True}}
    listed = (await result(admin, "mail/list", every))["conversations"]
    assert [c["id"] for c in listed] == [mine, theirs, own]
    assert [c["createdBy"] for c in listed] == ["user:u1", "user:u2", ADMIN]
    paged = await result(admin, "mail/list", {**every, "limit": 2})
    rest = await result(admin, "mail/list", {**every, "cursor": paged["nextCursor"]})
    assert [c["id"] for c in paged["conversations"] + rest["conversations"]] == [mine, theirs, own]
    narrowed = {"filter": {"x-allCallers": True, "participantId": "user:u2"}}
    assert [c["id"] for c in (await result(admin, "mail/list", narrowed))["conversations"]] == [
        theirs
    ]
    typed = {"filter": {"x-allCallers": True, "type": ["user-session"]}}
    assert [c["id"] for c in (await result(admin, "mail/list", typed))["conversations"]] == [mine]
    assert await code(user, "mail/list", every) == 10003


async def test_an_admin_archives_and_the_owner_is_told(offline: Running) -> None:
    user, admin = await offline.user(), await offline.admin()
    cid = (await result(user, "mail/create", {}))["conversation"]["id"]
    c = {"conversationId": cid}
    sid = await subscribe(user, {"eventTypes": ["mail.closed"]})
    assert await code(user, "mail/close", {**c, "status": "archived"}) == 10003
    assert await code(user, "mail/close", {**c, "status": "gone"}) == -32602
    await result(user, "mail/close", {**c, "reason": "done"})
    archived = await result(admin, "mail/close", {**c, "status": "archived", "reason": "old"})
    assert archived["conversation"]["status"] == "archived"
    assert await code(admin, "mail/close", {**c, "status": "archived"}) == 10001
    assert await code(user, "mail/turn", {**c, "contentType": "text", "content": {}}) == 10001
    async with user.stream("GET", f"/map/events?subscription={sid}") as stream:
        events = await take(stream, 2)
    assert [e["event"]["data"] for e in events] == [
        {"conversationId": cid, "closedBy": "user:u1", "reason": "done", "status": "completed"},
        {"conversationId": cid, "closedBy": ADMIN, "reason": "old", "status": "archived"},
    ]
    listed = await result(user, "mail/list", {"filter": {"status": ["archived"]}})
    assert [c["id"] for c in listed["conversations"]] == [cid]


async def test_visibility_between_the_owner_and_an_admin_observer(offline: Running) -> None:
    # C25
    user, admin = await offline.user(), await offline.admin()
    cid = (await result(user, "mail/create", {}))["conversation"]["id"]
    await result(admin, "mail/join", {"conversationId": cid})
    turns = {
        "all": {"type": "all"},
        "private": {"type": "private"},
        "to the admin": {"type": "participants", "participants": [ADMIN]},
        "to an agent": {"type": "participants", "participants": ["agent:w"]},
        "to observers": {"type": "role", "roles": ["observer"]},
        "to workers": {"type": "role", "roles": ["worker"]},
    }
    for text, visibility in turns.items():
        await say(user, cid, text, visibility=visibility)
    assert await seen(user, cid) == list(turns)  # the author sees its own turns
    visible = ["all", "to the admin", "to observers"]
    assert await seen(admin, cid) == visible
    assert await seen(admin, cid, "mail/replay") == visible
    got = await result(admin, "mail/get", {"conversationId": cid, "include": {"recentTurns": 10}})
    assert [t["content"]["text"] for t in got["recentTurns"]] == visible
    # an admin that has not joined reads as an observer too
    await result(admin, "mail/leave", {"conversationId": cid})
    assert await seen(admin, cid) == visible


@pytest.mark.parametrize(
    ("access", "expected"),
    [("full", ["before", "after"]), ("from-join", ["after"]), ("none", [])],
)
async def test_history_access_of_an_admin_observer(
    offline: Running, access: str, expected: list[str]
) -> None:  # C26
    user, admin = await offline.user(), await offline.admin()
    cid = (await result(user, "mail/create", {}))["conversation"]["id"]
    await say(user, cid, "before")
    joined = await result(
        admin,
        "mail/join",
        {"conversationId": cid, "permissions": {"historyAccess": access}, "catchUp": {}},
    )
    assert joined["participant"]["permissions"]["historyAccess"] == access
    history = [t["content"]["text"] for t in joined["history"]]
    assert history == [t for t in expected if t == "before"]
    await say(user, cid, "after")
    assert await seen(admin, cid) == expected
    assert await seen(admin, cid, "mail/replay") == expected
    got = await result(
        admin, "mail/get", {"conversationId": cid, "include": {"recentTurns": 5, "stats": True}}
    )
    assert got["stats"]["turnCount"] == len(expected)


async def test_joining_may_only_narrow_permissions(offline: Running) -> None:
    user, admin = await offline.user(), await offline.admin()
    cid = (await result(user, "mail/create", {}))["conversation"]["id"]
    c = {"conversationId": cid}
    assert await code(admin, "mail/join", {**c, "permissions": {"canSend": True}}) == 10003
    assert await code(admin, "mail/join", {**c, "permissions": {"historyAccess": "all"}}) == -32602
    assert await code(admin, "mail/join", {**c, "permissions": {"canFly": False}}) == -32602
    joined = await result(admin, "mail/join", {**c, "permissions": {"canObserve": False}})
    assert joined["participant"]["permissions"]["canObserve"] is False
    assert await code(admin, "mail/turns/list", c) == 10003


async def test_an_admins_subscription_may_follow_every_callers_conversations(
    start: Start, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    running = await start(config_for(tmp_path, "sqlite", request))
    user, admin, other = await running.user(), await running.admin(), await running.user2()
    assert await code(user, "map/subscribe", {"filter": {"x-allCallers": True}}) == 10003
    everyone = await subscribe(admin, {"x-allCallers": True, "eventTypes": ["mail.created"]})
    own = await subscribe(admin, {"eventTypes": ["mail.created"]})
    async with admin.stream("GET", f"/map/events?subscription={everyone}") as stream:
        assert stream.status_code == 200
        first = (await result(user, "mail/create", {"subject": "u1's"}))["conversation"]["id"]
        second = (await result(other, "mail/create", {"subject": "u2's"}))["conversation"]["id"]
        got = await take(stream, 2)
    assert [e["event"]["data"]["conversationId"] for e in got] == [first, second]
    # the admin's plain subscription got nothing of theirs: its first event is its own
    mine = (await result(admin, "mail/create", {"subject": "mine"}))["conversation"]["id"]
    async with admin.stream("GET", f"/map/events?subscription={own}") as stream:
        (event,) = await take(stream, 1)
    assert event["event"]["data"]["conversationId"] == mine
