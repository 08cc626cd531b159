"""A :class:`ConversationService` over each conversation store: memory, SQLite and
PostgreSQL (skipped, with the reason, unless ``MAIL_TEST_POSTGRES_URL`` is set)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.db.conftest import admin_execute, postgres_admin_url, postgres_url

from mail.conversations import (
    Actor,
    ConversationService,
    EventBus,
    conversation_store_for,
)
from mail.db import CallerKey, MemoryStore, PostgresStore, SQLiteStore, TaskStore

__all__ = ["postgres_admin_url", "postgres_url"]

KEY = CallerKey(swarm="demo", role="user", id="u1")


def actor(pid: str = "user:u1", key: CallerKey = KEY) -> Actor:
    return Actor(key=key, participant_id=pid)


@pytest.fixture(params=("memory", "sqlite", "postgres"))
async def tasks(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    store: TaskStore
    if request.param == "memory":
        store = MemoryStore()
    elif request.param == "sqlite":
        store = SQLiteStore(tmp_path / "mail.db")
    else:
        url = request.getfixturevalue("postgres_url")
        store = PostgresStore(url, connect_timeout=5.0)
    await store.open()
    if request.param == "postgres":
        await admin_execute(
            request.getfixturevalue("postgres_url"), "TRUNCATE conversation_records"
        )
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
def bus() -> EventBus:
    return EventBus()


@pytest.fixture
def service(tasks: TaskStore, bus: EventBus) -> ConversationService:
    return ConversationService(conversation_store_for(tasks), bus=bus, max_thread_depth=3)
