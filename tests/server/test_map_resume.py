"""Events a client can trust, on a real server: every ``map/event`` notification carries
its subscription's ``sequenceNumber`` and an ``eventId``; ``GET /map/events`` resumes
exactly after ``Last-Event-ID`` and gives every reader every event; ``map/replay`` (over
the WebSocket, as the official SDK calls it) returns the events after an ``eventId``;
positions no longer kept are refused (410, -32001)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from tests.server.conftest import Running, within
from tests.server.test_map_events import notifications, subscribe
from tests.server.test_map_rpc import rpc
from tests.server.test_map_socket import error_of, peer

pytestmark = pytest.mark.timeout(90)

TURNS = {"eventTypes": ["mail.turn.added"]}


def turn(cid: str, text: str) -> dict[str, Any]:
    return {"conversationId": cid, "contentType": "text", "content": {"text": text}}


async def conversation(user: httpx.AsyncClient) -> str:
    return str((await rpc(user, "mail/create", {"subject": "s"}))["result"]["conversation"]["id"])


async def say(user: httpx.AsyncClient, cid: str, *texts: str) -> None:
    for text in texts:
        assert "result" in await rpc(user, "mail/turn", turn(cid, text))


def text_of(params: dict[str, Any]) -> str:
    return str(params["event"]["data"]["turn"]["content"]["text"])


@contextlib.asynccontextmanager
async def stream(
    user: httpx.AsyncClient, sid: str, last: str | None = None
) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
    """An open ``GET /map/events`` of ``sid`` (after ``last``): its notifications' params."""
    headers = {"Last-Event-ID": last} if last is not None else {}
    params = {"subscription": sid}
    async with user.stream("GET", "/map/events", params=params, headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        async with contextlib.aclosing(notifications(response)) as found:
            yield found


async def take(found: AsyncIterator[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    return [await within(anext(found)) for _ in range(count)]


# --- GET /map/events --------------------------------------------------------------------------


async def test_notifications_carry_a_sequence_number_and_an_event_id(offline: Running) -> None:
    user = await offline.user()
    sid = await subscribe(user, TURNS)
    cid = await conversation(user)
    await say(user, cid, "n1", "n2", "n3")
    async with stream(user, sid) as found:
        got = await take(found, 3)
    assert [p["sequenceNumber"] for p in got] == [1, 2, 3]
    assert [text_of(p) for p in got] == ["n1", "n2", "n3"]
    ids = [p["eventId"] for p in got]
    assert len(set(ids)) == 3 and ids == [p["event"]["id"] for p in got]
    assert [int(i) for i in ids] == sorted(int(i) for i in ids)
    assert all(p["subscriptionId"] == sid for p in got)
    assert [p["timestamp"] for p in got] == [p["event"]["timestamp"] for p in got]


async def test_a_reconnect_with_last_event_id_gets_exactly_the_missed_events(
    offline: Running,
) -> None:
    # the bug: n2 of n2-n4, sent while the client was away, was lost
    user = await offline.user()
    sid = await subscribe(user, TURNS)
    cid = await conversation(user)
    async with stream(user, sid) as found:
        await say(user, cid, "n1")
        [first] = await take(found, 1)
    await say(user, cid, "n2", "n3", "n4")
    async with stream(user, sid, last=first["eventId"]) as found:
        missed = await take(found, 3)
        await say(user, cid, "n5")
        [live] = await take(found, 1)
    assert text_of(first) == "n1" and first["sequenceNumber"] == 1
    assert [text_of(p) for p in missed] == ["n2", "n3", "n4"]
    assert [p["sequenceNumber"] for p in missed] == [2, 3, 4]
    assert (text_of(live), live["sequenceNumber"]) == ("n5", 5)


async def test_two_readers_of_one_subscription_each_get_every_event(offline: Running) -> None:
    user, other = await offline.user(), await offline.client("user-key")
    sid = await subscribe(user, TURNS)
    cid = await conversation(user)
    async with stream(user, sid) as one, stream(other, sid) as two:
        await say(user, cid, "n1", "n2", "n3")
        first, second = await take(one, 3), await take(two, 3)
    assert [text_of(p) for p in first] == ["n1", "n2", "n3"]
    assert [(p["eventId"], p["sequenceNumber"]) for p in first] == [
        (p["eventId"], p["sequenceNumber"]) for p in second
    ]


async def test_positions_no_longer_kept_are_refused(offline: Running) -> None:
    user = await offline.user()
    sid = await subscribe(user, TURNS)
    cid = await conversation(user)
    batch = [
        {"jsonrpc": "2.0", "id": i, "method": "mail/turn", "params": turn(cid, f"t{i}")}
        for i in range(1, 1003)
    ]  # a subscription keeps its last 1000: t1 and t2 are dropped from it
    answers = (await user.post("/map", json=batch, timeout=60)).json()
    assert all("result" in a for a in answers)
    # map/replay keeps the server's last 10,000: pages of at most 1000
    page = (await rpc(user, "map/replay", {"filter": TURNS, "limit": 1000}))["result"]
    assert page["hasMore"] is True and len(page["events"]) == 1000
    rest = await rpc(user, "map/replay", {"afterEventId": page["events"][-1]["eventId"]})
    assert [e["event"]["data"]["turn"]["content"]["text"] for e in rest["result"]["events"]] == [
        "t1001",
        "t1002",
    ]
    assert rest["result"]["hasMore"] is False
    t1, t2 = (e["eventId"] for e in page["events"][:2])
    gone = await user.get(
        "/map/events", params={"subscription": sid}, headers={"Last-Event-ID": t1}
    )
    assert gone.status_code == 410 and "no longer kept" in gone.json()["detail"]
    async with stream(user, sid, last=t2) as found:  # nothing after t2 was dropped
        [third] = await take(found, 1)
    assert (text_of(third), third["sequenceNumber"]) == ("t3", 3)
    bad = await user.get(
        "/map/events", params={"subscription": sid}, headers={"Last-Event-ID": "x"}
    )
    assert bad.status_code == 400 and "Last-Event-ID" in bad.json()["detail"]


# --- map/replay ---------------------------------------------------------------------------------


async def test_replay_on_the_socket_then_the_events_go_on_without_duplicates(
    offline: Running,
) -> None:
    stranger = await offline.user2()
    elsewhere = await conversation(stranger)
    async with peer(offline, "user-key") as client:
        sid = (await client.result("map/subscribe", {"filter": TURNS}))["subscriptionId"]
        cid = (await client.result("mail/create", {"subject": "s"}))["conversation"]["id"]
        for text in ("n1", "n2", "n3"):
            await client.result("mail/turn", turn(cid, text))
        await say(stranger, elsewhere, "not yours")
        notes = [(await client.note())["params"] for _ in range(3)]
        replayed = await client.result(
            "map/replay", {"afterEventId": notes[0]["eventId"], "filter": TURNS}
        )
        everything = await client.result("map/replay", {"filter": TURNS})
        await client.result("mail/turn", turn(cid, "n4"))
        live = (await client.note())["params"]
        left = client.notes_now()
    assert [(p["subscriptionId"], p["sequenceNumber"]) for p in notes] == [
        (sid, 1),
        (sid, 2),
        (sid, 3),
    ]
    assert replayed["hasMore"] is False
    assert [e["eventId"] for e in replayed["events"]] == [p["eventId"] for p in notes[1:]]
    assert [e["event"] for e in replayed["events"]] == [p["event"] for p in notes[1:]]
    assert [e["timestamp"] for e in replayed["events"]] == [p["timestamp"] for p in notes[1:]]
    # the caller's own events only (user2's turn is not there)
    assert [e["eventId"] for e in everything["events"]] == [p["eventId"] for p in notes]
    assert (text_of(live), live["sequenceNumber"]) == ("n4", 4)
    assert left == []


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"afterEventId": "abc"}, "afterEventId"),
        ({"afterEventId": 5}, "afterEventId"),
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"limit": "5"}, "limit"),
        ({"fromTimestamp": -1}, "fromTimestamp"),
        ({"filter": "all"}, "filter"),
        ({"filter": {"mail": {"nope": 1}}}, "filter"),
    ],
)
async def test_bad_replay_params_are_invalid_params(
    offline: Running, params: dict[str, Any], field: str
) -> None:
    answer = await rpc(await offline.user(), "map/replay", params)
    code, message = error_of(answer)
    assert code == -32602 and f"params.{field}" in message


async def test_replay_from_before_what_is_kept_is_refused(offline: Running) -> None:
    user = await offline.user()
    await conversation(user)
    before_start = await rpc(user, "map/replay", {"afterEventId": "1"})
    too_early = await rpc(user, "map/replay", {"fromTimestamp": 0})
    code, message = error_of(before_start)
    assert code == -32001 and "no longer kept" in message
    assert before_start["error"]["data"]["name"] == "EVENTS_NOT_RETAINED"
    assert before_start["error"]["data"]["oldestEventId"].isdigit()
    assert error_of(too_early)[0] == -32001
    everyone = await rpc(user, "map/replay", {"filter": {"x-allCallers": True}})
    assert error_of(everyone)[0] == 10003  # admins only, as for map/subscribe
