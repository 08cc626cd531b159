"""``TaskStore.save_batch``, the recorder's write of a runtime's ``WriteBatch``: part of the
store suite, so every test runs against the memory, SQLite and PostgreSQL stores. It must
store exactly what ``save_changes`` stores for the same changes, and fail the same way."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.db.conftest import INJECTED
from tests.db.test_save_changes import breakpoint_row, prefill, stash_row, stored
from tests.db.test_store import KeyFactory, message

from mail.core._persist import TaskSnapshot, WriteBatch
from mail.core.events import EventName, MAILEvent
from mail.core.tasks import TaskState
from mail.db import SQLiteStore, TaskRow, TaskStore
from mail.db._common import changes_from_batch, dumps, loads

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def snapshot(task_id: str, n: int) -> TaskSnapshot:
    return TaskSnapshot(
        task_id=task_id,
        task_owner="user:u1@demo",
        task_contributors=["user:u1@demo", f"agent:a{n}@remote"],
        remote_swarms=["remote"] if n % 2 else [],
        state=[TaskState.RUNNING, TaskState.COMPLETED, TaskState.WAITING_BREAKPOINT][n % 3].value,
        title=f"task {n}" if n % 2 else None,
        start_time=T0 + timedelta(minutes=n),
        updated_at=T0 + timedelta(minutes=n, microseconds=123456),
    )


def runtime_event(task_id: str, seq: int) -> MAILEvent:
    """An event as the runtime makes it (an ``EventName`` member)."""
    name = [EventName.NEW_MESSAGE, EventName.TOOL_CALL, EventName.TASK_COMPLETE][seq % 3]
    extra: dict[str, Any] = {"seq": seq, "full_message": message(seq), "ok": [1, 2.5, None]}
    stamp = f"2025-01-01T12:00:{seq % 60:02d}.000001+00:00"  # the same in every batch_of()
    return MAILEvent(name, task_id, f"event {seq} of {task_id}", extra, stamp, seq)


def batch_of(ns: range) -> WriteBatch:
    """Tasks ``t{n}`` with every part set or not, varying with ``n``."""
    batch = WriteBatch()
    for n in ns:
        task_id = f"t{n:02d}"
        if n % 4:
            batch.tasks.append(snapshot(task_id, n))
        if n % 5:
            batch.events[task_id] = [runtime_event(task_id, s) for s in range(1, n % 5 + 1)]
        for agent in ("supervisor", "worker")[: n % 3]:
            history = [{"role": "user", "content": f"{agent} {n}"}]
            batch.histories.append((task_id, agent, history, "responses"))
        if n % 3 == 0:
            batch.responses.append((task_id, message(n)))
        if n % 3 == 1:
            rows = [breakpoint_row(n), breakpoint_row(n + 100)] if n % 2 else []
            batch.breakpoints[task_id] = [(r.call_id, r.agent, r.call, r.normalized) for r in rows]
        if n % 4 == 2:
            stash = [stash_row(n)] if n % 8 == 2 else []
            batch.stashes[task_id] = [(r.priority, r.seq, r.message) for r in stash]
    return batch


async def test_a_batch_stores_what_its_changes_store(store: TaskStore, key: KeyFactory) -> None:
    fast, changes = key(id="batch"), key(id="changes")
    batch = batch_of(range(24))
    for caller in (fast, changes):
        for n in range(0, 24, 3):
            await prefill(store, caller, f"t{n:02d}")

    assert await store.save_batch(fast, batch) == {}
    assert await store.save_changes(changes, list(changes_from_batch(batch).values())) == {}

    for n in range(24):
        task_id = f"t{n:02d}"
        assert await stored(store, fast, task_id) == await stored(store, changes, task_id)
    assert await store.load_tasks(fast) == await store.load_tasks(changes)
    # what the runtime gave, read back: plain event names, the events' own timestamps
    events = await store.load_events(fast, "t04")
    assert [(e.seq, e.event) for e in events] == [
        (1, "tool_call"),
        (2, "task_complete"),
        (3, "new_message"),
        (4, "tool_call"),
    ]
    assert events[0].data == batch.events["t04"][0].data()


async def test_events_read_back_as_they_were_sent(store: TaskStore, key: KeyFactory) -> None:
    """Timestamps formatted or not (the SQLite writer process formats those the server
    never read), and values ``marshal`` refuses but JSON holds (the server encodes those),
    come back as the runtime's ``data()`` gives them."""
    caller = key()
    when = datetime(2025, 1, 1, 12, 0, 59, 999999, tzinfo=UTC)
    extras: list[dict[str, Any]] = [
        {"full_message": message(1)},
        {"subject": EventName.TASK_COMPLETE, "when": when},  # a str subclass, a datetime
        {"n": 2**70, "text": 'é \u2028 \\ "'},  # beyond orjson: the standard encoder
        {"nan": float("nan"), "inf": float("inf")},  # JSON has no such numbers: null
    ]
    batch = WriteBatch()
    for n, extra in enumerate(extras):
        task_id = f"t{n}"
        batch.tasks.append(snapshot(task_id, n))
        batch.events[task_id] = [
            MAILEvent(EventName.TOOL_CALL, task_id, f"event {seq}", extra, None, seq)
            for seq in (1, 2)
        ]
        batch.events[task_id][1].timestamp  # noqa: B018  # formatted before it is stored
    assert await store.save_batch(caller, batch) == {}

    for task_id, events in batch.events.items():
        loaded = await store.load_events(caller, task_id)
        assert [e.data for e in loaded] == [loads(dumps(e.data())) for e in events]
    subject = (await store.load_events(caller, "t1"))[0].data["extra_data"]["subject"]
    assert subject == "task_complete"


async def test_a_retried_batch_stores_its_events_once(store: TaskStore, key: KeyFactory) -> None:
    first = batch_of(range(1, 5))
    assert await store.save_batch(key(), first) == {}
    again = batch_of(range(1, 5))
    again.events["t04"].append(runtime_event("t04", 5))
    assert await store.save_batch(key(), again) == {}
    assert [e.seq for e in await store.load_events(key(), "t04")] == [1, 2, 3, 4, 5]
    assert [e.seq for e in await store.load_events(key(), "t01")] == [1]


# an object marshal refuses (the server encodes the batch), a set it takes (the SQLite
# writer process encodes it, fails, and the server finds the task at fault)
@pytest.mark.parametrize("bad", [object(), {1, 2}], ids=["object", "set"])
async def test_a_value_json_cannot_hold_fails_only_its_task(
    store: TaskStore, key: KeyFactory, bad: object
) -> None:
    batch = batch_of(range(1, 4))
    batch.tasks.append(snapshot("bad", 1))
    batch.events["bad"] = [runtime_event("bad", 1)]
    batch.histories.append(("bad", "a", [{"x": bad}], "completions"))
    failures = await store.save_batch(key(), batch)
    assert list(failures) == ["bad"]
    assert "save_changes failed" in str(failures["bad"])
    assert isinstance(failures["bad"].__cause__, TypeError)
    assert await store.load_task(key(), "bad") is None
    assert await store.load_events(key(), "bad") == []
    assert [e.seq for e in await store.load_events(key(), "t02")] == [1, 2]
    assert await store.load_response(key(), "t03") == message(3)


@pytest.mark.usefixtures("refuse_bad_events")
async def test_a_refused_row_fails_only_its_task(store: TaskStore, key: KeyFactory) -> None:
    batch = batch_of(range(1, 9))
    batch.tasks.insert(2, snapshot("bad", 1))
    batch.events["bad"] = [runtime_event("bad", 1)]
    failures = await store.save_batch(key(), batch)
    assert list(failures) == ["bad"]
    assert INJECTED in str(failures["bad"])
    assert await store.load_task(key(), "bad") is None
    assert [e.seq for e in await store.load_events(key(), "t03")] == [1, 2, 3]
    assert await store.load_task(key(), "t05") is not None


async def test_an_empty_batch_stores_nothing(store: TaskStore, key: KeyFactory) -> None:
    assert await store.save_batch(key(), WriteBatch()) == {}
    assert await store.load_tasks(key()) == []


async def test_rows_with_enum_members_are_stored(store: TaskStore, key: KeyFactory) -> None:
    """The SQLite writer process takes rows as ``marshal`` data, which refuses subclasses
    of ``str``: rows a caller gives with enum members still go through (pickled)."""
    caller = key()
    row = TaskRow(
        task_id="t1",
        task_owner="user:u1@demo",
        state=TaskState.COMPLETED,
        start_time=T0,
        updated_at=T0,
    )
    await store.save_task(caller, row)
    loaded = await store.load_task(caller, "t1")
    assert loaded is not None
    assert loaded.state == "completed"


async def test_sqlite_keeps_json_as_text(store: TaskStore, key: KeyFactory) -> None:
    """The SQLite statements take JSON as bytes (no decoding on the event loop) and cast it:
    what is stored is text, as other tools reading the file expect."""
    if not isinstance(store, SQLiteStore):
        pytest.skip("SQLite only")
    assert await store.save_batch(key(), batch_of(range(6))) == {}
    with sqlite3.connect(store.path) as conn:
        kinds = {
            column: {row[0] for row in conn.execute(f"SELECT typeof({column}) FROM {table}")}  # noqa: S608
            for table, column in (
                ("task_events", "event_data"),
                ("agent_histories", "history"),
                ("task_responses", "response"),
                ("tasks", "task_contributors"),
            )
        }
    assert all(found == {"text"} for found in kinds.values()), kinds
