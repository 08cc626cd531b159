"""``map/send`` and tasks bound to conversations, against a real server: intercepted turns
(C2, C7-C10, C28), tool calls as ``x-tool-call`` turns, ``mail/close`` stopping the
recording."""

from __future__ import annotations

import sqlite3
from typing import Any

import httpx
from tests.server.conftest import Running
from tests.server.test_map_events import subscribe, take
from tests.server.test_map_rpc import rpc

from mail.core.events import EventName


def sent_message_ids(server: Running, task_id: str) -> list[str]:
    """The ids of the messages the caller (user u1) sent into ``task_id`` (white-box)."""
    swarm = server.state.swarms.lookup("user", "u1")
    assert swarm is not None
    task = swarm.get_task_by_id(task_id)
    assert task is not None
    return [
        e.extra_data["full_message"]["id"]
        for e in task.log.all()
        if e.event == EventName.NEW_MESSAGE
        and e.extra_data["full_message"]["message"]["sender"]["address_type"] == "user"
    ]


async def send(user: httpx.AsyncClient, body: str, **params: Any) -> dict[str, Any]:
    answer = await rpc(user, "map/send", {"payload": {"body": body}, **params})
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


async def turns(user: httpx.AsyncClient, cid: str) -> list[dict[str, Any]]:
    listed = await rpc(user, "mail/turns/list", {"conversationId": cid})
    result: list[dict[str, Any]] = listed["result"]["turns"]
    return result


async def test_send_with_meta_mail_records_one_intercepted_turn(offline: Running) -> None:
    # C2, C7, C8, C9, C28
    user = await offline.user()
    cid = (await rpc(user, "mail/create", {}))["result"]["conversation"]["id"]
    sid = await subscribe(user, {"eventTypes": ["mail.turn.added"]})
    plain = await send(user, "hello")
    with_mail = await send(user, "hello", meta={"mail": {"conversationId": cid}})
    assert with_mail["response"] == plain["response"]  # delivered as without mail
    assert with_mail["status"] == plain["status"] == "completed"
    recorded = await turns(user, cid)
    assert len(recorded) == 1
    assert recorded[0]["source"] == {
        "type": "intercepted",
        "messageId": sent_message_ids(offline, with_mail["taskId"])[0],
    }
    assert recorded[0]["content"]["text"] == "hello"
    async with user.stream("GET", f"/map/events?subscription={sid}") as stream:
        (event,) = await take(stream, 1)
    assert event["event"]["data"]["turn"] == recorded[0]


async def test_send_is_delivered_whatever_happens_to_the_turn(offline: Running) -> None:  # C10
    user = await offline.user()
    expected = (await send(user, "ping"))["response"]
    unknown = await send(user, "ping", meta={"mail": {"conversationId": "conv-unknown"}})
    assert unknown["response"] == expected
    cid = (await rpc(user, "mail/create", {}))["result"]["conversation"]["id"]
    await rpc(user, "mail/close", {"conversationId": cid})
    closed = await send(user, "ping", meta={"mail": {"conversationId": cid}})
    assert closed["response"] == expected
    assert await turns(user, cid) == []
    # the conversation store refuses every turn: the message still goes through
    live = (await rpc(user, "mail/create", {}))["result"]["conversation"]["id"]
    path = offline.state.store.path  # type: ignore[union-attr]
    conn = sqlite3.connect(path, timeout=10, isolation_level=None)
    try:
        conn.execute(
            "CREATE TRIGGER refuse_turns BEFORE INSERT ON conversation_records "
            "WHEN NEW.kind = 'turn' BEGIN SELECT RAISE(ABORT, 'injected'); END"
        )
    finally:
        conn.close()
    failing = await send(user, "ping", meta={"mail": {"conversationId": live}})
    assert failing["response"] == expected and failing["status"] == "completed"
    assert await turns(user, live) == []


async def test_a_bound_task_records_its_messages_and_tool_calls(offline: Running) -> None:
    user = await offline.user()
    task_id = "task-bound-1"
    cid = (await rpc(user, "mail/create", {"taskId": task_id}))["result"]["conversation"]["id"]
    answer = await user.post("/message", json={"body": "hi there", "task_id": task_id})
    assert answer.status_code == 200
    await offline.state.interceptor.drain()  # type: ignore[union-attr]
    recorded = await turns(user, cid)
    messages = [t for t in recorded if t["contentType"] == "text"]
    assert [t["source"]["messageId"] for t in messages][:1] == sent_message_ids(offline, task_id)
    assert all(t["source"]["type"] == "intercepted" for t in recorded)
    assert len(messages) >= 2  # the caller's message and the agents' answers
    tools = [t for t in recorded if t["contentType"] == "x-tool-call"]
    assert tools and all(t["participantId"].startswith("agent:") for t in tools)
    assert all(t["content"]["toolName"] for t in tools)
    count = len(recorded)
    await rpc(user, "mail/close", {"conversationId": cid})
    again = await user.post(
        "/message", json={"body": "more", "task_id": task_id, "resume_from": "user_response"}
    )
    assert again.status_code == 200  # the task goes on; the conversation records nothing
    await offline.state.interceptor.drain()  # type: ignore[union-attr]
    assert len(await turns(user, cid)) == count


async def test_a_task_with_no_conversation_writes_no_conversation_row(offline: Running) -> None:
    user = await offline.user()
    cid = (await rpc(user, "mail/create", {"taskId": "another-task"}))["result"]["conversation"][
        "id"
    ]
    answer = await user.post("/message", json={"body": "hi", "task_id": "plain-task"})
    assert answer.status_code == 200
    await offline.state.interceptor.drain()  # type: ignore[union-attr]
    path = offline.state.store.path  # type: ignore[union-attr]
    conn = sqlite3.connect(path, timeout=10)
    try:
        kinds = conn.execute(
            "SELECT kind, COUNT(*) FROM conversation_records GROUP BY kind ORDER BY kind"
        ).fetchall()
    finally:
        conn.close()
    assert kinds == [("conversation", 1), ("participant", 1)]  # only mail/create's rows
    assert await turns(user, cid) == []


async def test_a_refused_send_is_a_server_error_with_the_http_status(offline: Running) -> None:
    user = await offline.user()
    answer = await rpc(
        user,
        "map/send",
        {"payload": {"body": "x", "task_id": "never-ran", "resume_from": "user_response"}},
    )
    error = answer["error"]
    assert error["code"] == -32000 and error["data"]["status"] == 404
    bad = await rpc(user, "map/send", {"payload": {"body": "x", "msg_type": "nope"}})
    assert bad["error"]["code"] == -32602
