"""``map/subscribe`` and ``GET /map/events`` on a real server: the events of mail/* actions
reach a matching subscription with their data, and the mail filter narrows (C4, C6, C9)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from tests.server.conftest import Running, within
from tests.server.test_map_rpc import rpc


async def notifications(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The ``map/event`` notifications of a stream, as they arrive."""
    buffer = b""
    async for chunk in response.aiter_raw():
        buffer += chunk
        while b"\r\n\r\n" in buffer:
            raw, buffer = buffer.split(b"\r\n\r\n", 1)
            lines = dict(line.split(": ", 1) for line in raw.decode().split("\r\n"))
            if lines["event"] == "map/event":
                note = json.loads(lines["data"])
                assert (
                    note["method"] == "map/event" and lines["id"] == note["params"]["event"]["id"]
                )
                yield note["params"]


async def take(response: httpx.Response, count: int) -> list[dict[str, Any]]:
    async def collect() -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = []
        async for params in notifications(response):
            got.append(params)
            if len(got) == count:
                break
        return got

    return await within(collect())


async def subscribe(user: httpx.AsyncClient, filter_: dict[str, Any]) -> str:
    return str((await rpc(user, "map/subscribe", {"filter": filter_}))["result"]["subscriptionId"])


async def test_every_action_emits_its_event(offline: Running) -> None:  # C4, C9
    # every event of the seed's table (section 1.4); x-mail.status.changed, our extension,
    # is in test_map_start.py
    user = await offline.user()
    sid = await subscribe(user, {})
    async with user.stream("GET", f"/map/events?subscription={sid}") as stream:
        assert stream.status_code == 200
        cid = (await rpc(user, "mail/create", {"type": "mixed", "subject": "s"}))["result"][
            "conversation"
        ]["id"]
        c = {"conversationId": cid}
        turn = (
            await rpc(user, "mail/turn", {**c, "contentType": "text", "content": {"text": "a"}})
        )["result"]["turn"]
        await rpc(user, "mail/thread/create", {**c, "rootTurnId": turn["id"]})
        await rpc(user, "mail/invite", {**c, "participant": {"id": "agent:math"}})
        await rpc(user, "mail/leave", {**c, "participantId": "agent:math", "reason": "bye"})
        await rpc(user, "mail/summary", c)
        await rpc(user, "x-mail/turn/redact", {**c, "turnId": turn["id"]})
        await rpc(user, "mail/close", {**c, "reason": "done"})
        events = await take(stream, 9)
    assert all(e["subscriptionId"] == sid for e in events)
    by_type = {e["event"]["type"]: e["event"]["data"] for e in events}
    assert list(by_type) == [
        "mail.created",
        "mail.participant.joined",
        "mail.turn.added",
        "mail.thread.created",
        "mail.participant.left",
        "mail.summary.generated",
        "mail.turn.updated",
        "mail.closed",
    ]
    assert by_type["mail.created"] == {
        "conversationId": cid,
        "type": "mixed",
        "subject": "s",
        "createdBy": "user:u1",
    }
    assert by_type["mail.turn.added"]["turn"] == turn
    assert by_type["mail.thread.created"]["thread"]["rootTurnId"] == turn["id"]
    assert by_type["mail.participant.left"] == {
        "conversationId": cid,
        "participantId": "agent:math",
        "reason": "bye",
    }
    generated = by_type["mail.summary.generated"]
    assert generated["conversationId"] == cid and isinstance(generated["summary"], str)
    assert by_type["mail.turn.updated"] == {
        "conversationId": cid,
        "turnId": turn["id"],
        "status": "redacted",
    }
    assert by_type["mail.closed"] == {
        "conversationId": cid,
        "closedBy": "user:u1",
        "reason": "done",
        "status": "completed",
    }


async def test_mail_filter_combines_with_and(offline: Running) -> None:  # C6
    user = await offline.user()
    x = (await rpc(user, "mail/create", {}))["result"]["conversation"]["id"]
    y = (await rpc(user, "mail/create", {}))["result"]["conversation"]["id"]
    root = (
        await rpc(
            user,
            "mail/turn",
            {"conversationId": x, "contentType": "text", "content": {"text": "r"}},
        )
    )["result"]["turn"]
    thread = (
        await rpc(user, "mail/thread/create", {"conversationId": x, "rootTurnId": root["id"]})
    )["result"]["thread"]
    only_x = await subscribe(user, {"mail": {"conversationId": x}})
    x_thread = await subscribe(
        user,
        {
            "eventTypes": ["mail.turn.added"],
            "mail": {"conversationId": x, "threadId": thread["id"]},
        },
    )

    async def say(cid: str, text: str, **extra: Any) -> str:
        params = {"conversationId": cid, "contentType": "text", "content": {"text": text}}
        return str((await rpc(user, "mail/turn", {**params, **extra}))["result"]["turn"]["id"])

    await say(y, "in y")
    outside = await say(x, "in x")
    inside = await say(x, "in the thread", threadId=thread["id"])
    async with user.stream("GET", f"/map/events?subscription={only_x}") as stream:
        got = await take(stream, 2)
    assert [e["event"]["data"]["turn"]["id"] for e in got] == [outside, inside]
    async with user.stream("GET", f"/map/events?subscription={x_thread}") as stream:
        got = await take(stream, 1)
    assert got[0]["event"]["data"]["turn"]["id"] == inside


async def test_unknown_or_foreign_subscription_is_404(offline: Running) -> None:
    user, other = await offline.user(), await offline.user2()
    sid = await subscribe(user, {})
    assert (await other.get(f"/map/events?subscription={sid}")).status_code == 404
    assert (await rpc(user, "map/unsubscribe", {"subscriptionId": sid}))["result"] == {
        "unsubscribed": True
    }
    assert (await user.get(f"/map/events?subscription={sid}")).status_code == 404
