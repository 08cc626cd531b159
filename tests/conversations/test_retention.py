"""Pruning a task deletes the conversations bound to it, with all their rows; the others
stay (SQLite and PostgreSQL: the memory stores keep tasks and conversations apart)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from tests.conversations.conftest import KEY, actor

from mail.conversations import ConversationService, conversation_store_for
from mail.db import TaskRow, TaskStore


async def test_prune_takes_the_bound_conversations(tasks: TaskStore) -> None:
    if tasks.backend == "memory":
        pytest.skip("the memory task store does not hold conversations")
    now = datetime.now(UTC)
    await tasks.save_task(
        KEY,
        TaskRow(
            task_id="t1",
            task_owner="user:u1@demo",
            state="completed",
            start_time=now,
            updated_at=now,
        ),
    )
    store = conversation_store_for(tasks)
    service = ConversationService(store)
    me = actor()
    bound = (await service.call("mail/create", me, {"taskId": "t1"}))["conversation"]["id"]
    await service.call(
        "mail/turn", me, {"conversationId": bound, "contentType": "text", "content": {"text": "x"}}
    )
    free = (await service.call("mail/create", me, {}))["conversation"]["id"]
    assert await tasks.prune(keep_last=0) == 1
    assert [r.record_id for r in await store.list_records(KEY, "conversation")] == [free]
    for kind in ("participant", "turn"):
        assert await store.list_records(KEY, kind, bound) == []  # type: ignore[arg-type]
    assert len(await store.list_records(KEY, "participant", free)) == 1
