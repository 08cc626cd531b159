"""MAILClient's MAP Mail methods against a real server."""

from __future__ import annotations

import json

import pytest
from tests.client.conftest import Connect

from mail.client import MapRpcError


async def test_conversation_round_trip(offline: str, connect: Connect) -> None:
    client = connect(offline)
    assert (await client.map_connect())["capabilities"]["mail"]["enabled"] is True
    created = await client.mail_create(
        subject="s", initialTurn={"contentType": "text", "content": {"text": "hello"}}
    )
    cid = created["conversation"]["id"]
    sid = await client.map_subscribe({"mail": {"conversationId": cid}})
    turn = (await client.mail_turn(conversationId=cid, contentType="data", content=[1]))["turn"]
    listed = await client.mail_turns_list(conversationId=cid)
    assert [t["id"] for t in listed["turns"]] == [created["initialTurn"]["id"], turn["id"]]
    stream = await client.map_events(sid)
    event = await anext(stream)
    assert event.event == "map/event"
    assert json.loads(event.data)["params"]["event"]["data"]["turn"] == turn
    await stream.aclose()
    assert await client.map_unsubscribe(sid) is True
    sent = await client.map_send(payload={"body": "hi"}, meta={"mail": {"conversationId": cid}})
    assert sent["status"] == "completed"
    replay = await client.mail_replay(conversationId=cid, fromTurnId=turn["id"])
    assert [t["source"]["type"] for t in replay["turns"]] == ["intercepted"]
    redacted = (await client.mail_turn_redact(conversationId=cid, turnId=turn["id"]))["turn"]
    assert (redacted["id"], redacted["status"], redacted["content"]) == (
        turn["id"],
        "redacted",
        None,
    )


async def test_errors_carry_the_code(offline: str, connect: Connect) -> None:
    client = connect(offline)
    with pytest.raises(MapRpcError) as caught:
        await client.mail_get(conversationId="conv-nope")
    assert caught.value.code == 10000
    assert caught.value.data["name"] == "CONVERSATION_NOT_FOUND"
    with pytest.raises(MapRpcError) as caught:
        await client.map_call("map/nope")
    assert caught.value.code == -32601
