"""Statuses that follow a task, admins reaching another caller's rows, and redaction
rights, on every conversation store (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

from tests.conversations.conftest import KEY, actor
from tests.conversations.test_service import BOB, ME, code_of, new, say

from mail.conversations import Actor, ConversationService, EventBus
from mail.conversations._lifecycle import StatusFollower
from mail.core.tasks import MAILTask, TaskState
from mail.db import CallerKey

ADMIN = Actor(
    key=CallerKey(swarm="demo", role="admin", id="root"), participant_id="admin:root", admin=True
)


async def status(service: ConversationService, cid: str) -> str:
    got = await service.call("mail/get", ME, {"conversationId": cid})
    return str(got["conversation"]["status"])


async def test_a_conversation_follows_its_task(service: ConversationService, bus: EventBus) -> None:
    sub = bus.subscribe(KEY, {"eventTypes": ["x-mail.status.changed", "mail.closed"]})
    cid = (await new(service, taskId="t1"))["conversation"]["id"]
    follow = service.follow_task
    assert await follow(KEY, cid, "t1", "running") == "active"  # already: no event
    assert await follow(KEY, cid, "t1", "waiting_breakpoint") == "paused"
    assert await status(service, cid) == "paused"
    assert await follow(KEY, cid, "t1", "completed") == "active"
    assert await follow(KEY, cid, "t1", "cancelled") == "failed"
    assert await follow(KEY, cid, "t1", "running") == "failed"  # closed: it stays so
    assert await follow(KEY, "conv-nope", "t1", "failed") is None
    got = (await service.call("mail/get", ME, {"conversationId": cid}))["conversation"]
    assert (got["status"], got["closedBy"], got["closeReason"]) == (
        "failed",
        "system",
        "task 't1' was cancelled",
    )
    kinds = [e.type for _, e in sub.log]
    assert kinds == ["x-mail.status.changed", "x-mail.status.changed", "mail.closed"]


async def test_an_admin_reaches_another_callers_conversation(
    service: ConversationService,
) -> None:
    cid = (await new(service))["conversation"]["id"]
    await say(service, cid, "hello")
    got = await service.call("mail/get", ADMIN, {"conversationId": cid})
    assert got["conversation"]["id"] == cid
    listed = await service.call("mail/list", ADMIN, {"filter": {"x-allCallers": True}})
    assert [c["id"] for c in listed["conversations"]] == [cid]
    assert (await service.call("mail/list", ADMIN, {}))["conversations"] == []
    joined = await service.call("mail/join", ADMIN, {"conversationId": cid})
    assert joined["participant"]["role"] == "observer"
    stranger = actor("user:u2", CallerKey(swarm="demo", role="user", id="u2"))
    assert await code_of(service.call("mail/get", stranger, {"conversationId": cid})) == 10000


async def test_redaction_rights(service: ConversationService) -> None:
    cid = (await new(service, initialParticipants=[{"id": "agent:bob", "role": "worker"}]))[
        "conversation"
    ]["id"]
    mine = await say(service, cid, "mine")
    bobs = await say(service, cid, "bob's", who=BOB)
    redact = "x-mail/turn/redact"
    denied = service.call(redact, BOB, {"conversationId": cid, "turnId": mine["id"]})
    assert await code_of(denied) == 10003  # neither the author nor the initiator
    by_author = await service.call(redact, BOB, {"conversationId": cid, "turnId": bobs["id"]})
    assert by_author["turn"]["status"] == "redacted"
    by_initiator = await service.call(redact, ME, {"conversationId": cid, "turnId": mine["id"]})
    assert by_initiator["turn"]["content"] is None


async def test_a_follower_applies_a_pause_and_its_resume_in_order(
    service: ConversationService,
) -> None:
    follower = StatusFollower.over(service, lambda key, task_id: [cid] if task_id == "t1" else [])
    cid = (await new(service, taskId="t1"))["conversation"]["id"]
    follower.start()
    try:
        task = MAILTask("t1", "user:me", [])
        for state in ("running", "waiting_breakpoint", "running", "completed"):
            task.state = TaskState(state)
            follower.task_changed(KEY, task)  # both queued before either is applied
        await follower.drain()
        assert await status(service, cid) == "active"
        task.state = TaskState.WAITING_BREAKPOINT
        follower.task_changed(KEY, task)
        await follower.drain()
        assert await status(service, cid) == "paused"
        await service.call("mail/close", ME, {"conversationId": cid})
        task.state = TaskState.RUNNING
        follower.task_changed(KEY, task)  # closed elsewhere: it stays closed
        await follower.drain()
        assert await status(service, cid) == "completed"
    finally:
        await follower.close()
