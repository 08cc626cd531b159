"""The store test suite: every test runs against the memory, SQLite and PostgreSQL stores."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mail.core.events import EventName
from mail.core.tasks import TaskState
from mail.db import (
    BreakpointRow,
    CallerKey,
    EventRow,
    StashRow,
    TaskRow,
    TaskStore,
    latest_version,
)
from mail.errors import ConfigurationError, StorageError

KeyFactory = Callable[..., CallerKey]
T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def task_row(task_id: str, *, state: str = "running", minutes: int = 0, **kw: Any) -> TaskRow:
    """A task started ``minutes`` after T0 and last updated then too (unless given)."""
    at = T0 + timedelta(minutes=minutes)
    fields: dict[str, Any] = {
        "task_owner": "user:u1@demo",
        "task_contributors": ["user:u1@demo"],
        "remote_swarms": [],
        "title": None,
        "start_time": at,
        "updated_at": at,
    }
    fields.update(kw)
    return TaskRow(task_id=task_id, state=state, **fields)


def event(task_id: str, seq: int, name: str = "new_message") -> EventRow:
    return EventRow(
        task_id=task_id,
        seq=seq,
        event=name,
        data={
            "timestamp": f"2025-01-01T12:00:{seq % 60:02d}.000000+00:00",
            "description": f"event {seq} of {task_id}",
            "task_id": task_id,
            "extra_data": {"seq": seq, "nested": {"list": [1, 2.5, None, True]}},
        },
    )


def message(n: int) -> dict[str, Any]:
    return {
        "id": f"m{n}",
        "msg_type": "request",
        "message": {"subject": f"s{n}", "body": "héllo ✓ 🐝", "sender": {"address": "a"}},
    }


# -- round trips --------------------------------------------------------------------------


async def test_task_round_trip(store: TaskStore, key: KeyFactory) -> None:
    row = task_row(
        "t1",
        state="waiting_breakpoint",
        title="A title",
        task_contributors=["user:u1@demo", "agent:x@remote"],
        remote_swarms=["remote", "other"],
        updated_at=T0 + timedelta(seconds=5, microseconds=123456),
    )
    await store.save_task(key(), row)
    assert await store.load_task(key(), "t1") == row
    assert await store.load_tasks(key()) == [row]


async def test_save_task_replaces_the_record(store: TaskStore, key: KeyFactory) -> None:
    await store.save_task(key(), task_row("t1"))
    done = task_row("t1", state="completed", title="Done", updated_at=T0 + timedelta(hours=1))
    await store.save_task(key(), done)
    assert await store.load_tasks(key()) == [done]


async def test_tasks_load_oldest_first(store: TaskStore, key: KeyFactory) -> None:
    for task_id, minutes in (("b", 2), ("c", 3), ("a", 1)):
        await store.save_task(key(), task_row(task_id, minutes=minutes))
    assert [t.task_id for t in await store.load_tasks(key())] == ["a", "b", "c"]


async def test_naive_datetimes_are_taken_as_utc(store: TaskStore, key: KeyFactory) -> None:
    naive = datetime(2025, 3, 4, 5, 6, 7, 890)
    await store.save_task(key(), task_row("t1", start_time=naive, updated_at=naive))
    loaded = await store.load_task(key(), "t1")
    assert loaded is not None
    assert loaded.start_time == naive.replace(tzinfo=UTC)
    assert loaded.start_time.utcoffset() == timedelta(0)


async def test_events_round_trip_in_order(store: TaskStore, key: KeyFactory) -> None:
    rows = [event("t1", seq, name) for seq, name in enumerate(["a", "b", "c", "d"], start=1)]
    await store.append_events(key(), rows[:2])
    await store.append_events(key(), rows[2:])
    await store.append_events(key(), [])
    assert await store.load_events(key(), "t1") == rows


async def test_load_events_after_and_limit(store: TaskStore, key: KeyFactory) -> None:
    await store.append_events(key(), [event("t1", seq) for seq in range(1, 31)])
    seqs = [e.seq for e in await store.load_events(key(), "t1", after=10, limit=5)]
    assert seqs == [11, 12, 13, 14, 15]
    assert [e.seq for e in await store.load_events(key(), "t1", after=28)] == [29, 30]
    assert await store.load_events(key(), "t1", after=30) == []
    assert [e.seq for e in await store.load_events(key(), "t1", limit=2)] == [1, 2]
    assert await store.load_events(key(), "t1", limit=0) == []


async def test_events_out_of_order_are_read_in_order(store: TaskStore, key: KeyFactory) -> None:
    await store.append_events(key(), [event("t1", 3), event("t1", 1)])
    await store.append_events(key(), [event("t1", 2)])
    assert [e.seq for e in await store.load_events(key(), "t1")] == [1, 2, 3]


async def test_retried_batch_is_stored_once(store: TaskStore, key: KeyFactory) -> None:
    batch = [event("t1", seq) for seq in range(1, 14)]
    await store.append_events(key(), batch)
    await store.append_events(key(), batch)  # the same batch, retried
    # an overlapping retry: the first write of a sequence number wins
    changed = [EventRow(task_id="t1", seq=13, event="other", data={"x": 1}), event("t1", 14)]
    await store.append_events(key(), changed)
    assert await store.load_events(key(), "t1") == [*batch, event("t1", 14)]


async def test_concurrent_appends_from_20_tasks(store: TaskStore, key: KeyFactory) -> None:
    rng = random.Random(8)

    async def produce(task_id: str) -> None:
        seq = 0
        while seq < 60:
            size = rng.randint(1, 13)
            batch = [event(task_id, s) for s in range(seq + 1, min(seq + size, 60) + 1)]
            await store.append_events(key(), batch)
            if rng.random() < 0.3:  # a retry of the same batch, as after a lost answer
                await store.append_events(key(), batch)
            seq = batch[-1].seq
            await asyncio.sleep(0)

    task_ids = [f"task-{n:02d}" for n in range(20)]
    await asyncio.gather(*(produce(task_id) for task_id in task_ids))
    for task_id in task_ids:
        assert await store.load_events(key(), task_id) == [event(task_id, s) for s in range(1, 61)]


async def test_history_is_replaced_not_concatenated(store: TaskStore, key: KeyFactory) -> None:
    history: list[dict[str, Any]] = [{"role": "system", "content": "be brief"}]
    await store.save_history(key(), "t1", "supervisor", history, "completions")
    history.append({"role": "user", "content": "hi"})
    await store.save_history(key(), "t1", "supervisor", history, "completions")
    await store.save_history(key(), "t1", "weather", [{"type": "message"}], "responses")
    assert await store.load_histories(key(), "t1") == {
        "supervisor": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
        ],
        "weather": [{"type": "message"}],
    }
    await store.save_history(key(), "t1", "weather", [], "responses")
    assert (await store.load_histories(key(), "t1"))["weather"] == []


async def test_saved_values_are_snapshots(store: TaskStore, key: KeyFactory) -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "one"}]
    contributors = ["user:u1@demo"]
    await store.save_history(key(), "t1", "a", history, "completions")
    await store.save_task(key(), task_row("t1", task_contributors=contributors))
    history[0]["content"] = "changed"
    history.append({"role": "user"})
    contributors.append("agent:late@demo")
    assert await store.load_histories(key(), "t1") == {"a": [{"role": "user", "content": "one"}]}
    loaded = await store.load_task(key(), "t1")
    assert loaded is not None
    assert loaded.task_contributors == ["user:u1@demo"]
    loaded.task_contributors.append("x")  # rows handed out are fresh objects
    again = await store.load_task(key(), "t1")
    assert again is not None
    assert again.task_contributors == ["user:u1@demo"]


async def test_response_round_trip(store: TaskStore, key: KeyFactory) -> None:
    assert await store.load_response(key(), "t1") is None
    await store.save_response(key(), "t1", message(1))
    await store.save_response(key(), "t1", message(2))
    assert await store.load_response(key(), "t1") == message(2)


async def test_breakpoints_are_replaced(store: TaskStore, key: KeyFactory) -> None:
    calls = [
        BreakpointRow(
            call_id=f"call_{n}",
            agent="supervisor",
            call={
                "tool_name": "get_weather",
                "tool_args": {"city": "Paris"},
                "tool_call_id": f"call_{n}",
            },
            normalized={"name": "get_weather", "arguments": {"city": "Paris"}, "n": n},
        )
        for n in range(3)
    ]
    await store.save_breakpoints(key(), "t1", calls)
    assert await store.load_breakpoints(key(), "t1") == calls
    await store.save_breakpoints(key(), "t1", calls[2:0:-1])
    assert await store.load_breakpoints(key(), "t1") == [calls[2], calls[1]]
    await store.save_breakpoints(key(), "t1", [])
    assert await store.load_breakpoints(key(), "t1") == []


async def test_stash_is_replaced(store: TaskStore, key: KeyFactory) -> None:
    rows = [StashRow(priority=p, seq=s, message=message(s)) for p, s in ((3, 10), (1, 11), (3, 9))]
    await store.save_stash(key(), "t1", rows)
    assert await store.load_stash(key(), "t1") == rows
    await store.save_stash(key(), "t1", rows[:1])
    assert await store.load_stash(key(), "t1") == rows[:1]
    await store.save_stash(key(), "t1", [])
    assert await store.load_stash(key(), "t1") == []


async def test_unknown_task_reads_empty(store: TaskStore, key: KeyFactory) -> None:
    assert await store.load_tasks(key()) == []
    assert await store.load_task(key(), "nope") is None
    assert await store.load_events(key(), "nope") == []
    assert await store.load_histories(key(), "nope") == {}
    assert await store.load_response(key(), "nope") is None
    assert await store.load_breakpoints(key(), "nope") == []
    assert await store.load_stash(key(), "nope") == []


async def test_writes_apply_in_call_order(store: TaskStore, key: KeyFactory) -> None:
    # fired together, never awaited one by one: the last call wins everywhere
    await asyncio.gather(
        *(
            store.save_history(
                key(), "t1", "a", [{"role": "user", "content": str(n)}], "completions"
            )
            for n in range(10)
        ),
        *(store.save_task(key(), task_row("t1", title=str(n))) for n in range(10)),
    )
    assert await store.load_histories(key(), "t1") == {"a": [{"role": "user", "content": "9"}]}
    loaded = await store.load_task(key(), "t1")
    assert loaded is not None
    assert loaded.title == "9"


async def test_reads_see_writes_made_before_them(store: TaskStore, key: KeyFactory) -> None:
    write = asyncio.ensure_future(store.append_events(key(), [event("t1", 1)]))
    await asyncio.sleep(0)  # the write is queued, not yet committed
    assert [e.seq for e in await store.load_events(key(), "t1")] == [1]
    await write


# -- isolation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "other", [{"swarm": "elsewhere"}, {"role": "admin"}, {"id": "u2"}], ids=["swarm", "role", "id"]
)
async def test_callers_are_isolated(
    store: TaskStore, key: KeyFactory, other: dict[str, str]
) -> None:
    mine, theirs = key(), key(**other)
    await store.save_task(mine, task_row("t1", title="mine"))
    await store.append_events(mine, [event("t1", 1)])
    await store.save_history(mine, "t1", "a", [{"role": "user"}], "completions")
    await store.save_response(mine, "t1", message(1))
    await store.save_breakpoints(
        mine, "t1", [BreakpointRow(call_id="c", agent="a", call={}, normalized={})]
    )
    await store.save_stash(mine, "t1", [StashRow(priority=1, seq=1, message=message(1))])

    assert await store.load_tasks(theirs) == []
    assert await store.load_task(theirs, "t1") is None
    assert await store.load_events(theirs, "t1") == []
    assert await store.load_histories(theirs, "t1") == {}
    assert await store.load_response(theirs, "t1") is None
    assert await store.load_breakpoints(theirs, "t1") == []
    assert await store.load_stash(theirs, "t1") == []

    # the same task id for the other caller is a different task
    await store.save_task(theirs, task_row("t1", title="theirs"))
    await store.append_events(theirs, [event("t1", 1, "other")])
    assert [t.title for t in await store.load_tasks(mine)] == ["mine"]
    assert (await store.load_events(mine, "t1"))[0].event == "new_message"


# -- retention ----------------------------------------------------------------------------


async def _fill_for_pruning(store: TaskStore, key: KeyFactory) -> None:
    now = datetime.now(UTC)
    old, recent = now - timedelta(days=30), now - timedelta(minutes=5)
    states = {
        "old-completed": ("completed", old),
        "old-failed": ("failed", old - timedelta(seconds=1)),
        "old-cancelled": ("cancelled", old - timedelta(seconds=2)),
        "old-running": ("running", old),
        "old-paused": ("waiting_breakpoint", old),
        "old-interrupted": ("interrupted", old),
        "new-completed": ("completed", recent),
        "new-failed": ("failed", recent - timedelta(seconds=1)),
    }
    for n, (task_id, (state, at)) in enumerate(states.items()):
        caller = key(id=f"u{n % 3}")
        await store.save_task(caller, task_row(task_id, state=state, start_time=at, updated_at=at))
        await store.append_events(caller, [event(task_id, 1), event(task_id, 2)])
        await store.save_history(caller, task_id, "a", [{"role": "user"}], "completions")


async def _task_ids(store: TaskStore, key: KeyFactory) -> set[str]:
    ids: set[str] = set()
    for n in range(3):
        ids.update(t.task_id for t in await store.load_tasks(key(id=f"u{n}")))
    return ids


UNFINISHED = {"old-running", "old-paused", "old-interrupted"}


async def test_prune_by_age_keeps_unfinished_tasks(store: TaskStore, key: KeyFactory) -> None:
    await _fill_for_pruning(store, key)
    assert await store.prune(older_than=timedelta(days=1)) == 3
    assert await _task_ids(store, key) == {*UNFINISHED, "new-completed", "new-failed"}


async def test_prune_by_count_keeps_unfinished_tasks(store: TaskStore, key: KeyFactory) -> None:
    await _fill_for_pruning(store, key)
    # finished tasks, newest first: new-completed, new-failed, old-completed, old-failed, ...
    assert await store.prune(keep_last=3) == 2
    assert await _task_ids(store, key) == {
        *UNFINISHED,
        "new-completed",
        "new-failed",
        "old-completed",
    }
    assert await store.prune(keep_last=0) == 3
    assert await _task_ids(store, key) == UNFINISHED


async def test_prune_by_age_or_count(store: TaskStore, key: KeyFactory) -> None:
    await _fill_for_pruning(store, key)
    assert await store.prune(older_than=timedelta(days=1), keep_last=1) == 4
    assert await _task_ids(store, key) == {*UNFINISHED, "new-completed"}


async def test_prune_deletes_every_row_of_a_task(store: TaskStore, key: KeyFactory) -> None:
    done = task_row("t1", state="completed")
    await store.save_task(key(), done)
    await store.append_events(key(), [event("t1", 1)])
    await store.save_history(key(), "t1", "a", [{"role": "user"}], "completions")
    await store.save_response(key(), "t1", message(1))
    await store.save_breakpoints(
        key(), "t1", [BreakpointRow(call_id="c", agent="a", call={}, normalized={})]
    )
    await store.save_stash(key(), "t1", [StashRow(priority=1, seq=1, message=message(1))])
    await store.save_task(key(), task_row("t2", state="running"))
    await store.append_events(key(), [event("t2", 1)])

    assert await store.prune(keep_last=0) == 1
    assert await store.load_task(key(), "t1") is None
    assert await store.load_events(key(), "t1") == []
    assert await store.load_histories(key(), "t1") == {}
    assert await store.load_response(key(), "t1") is None
    assert await store.load_breakpoints(key(), "t1") == []
    assert await store.load_stash(key(), "t1") == []
    assert [e.seq for e in await store.load_events(key(), "t2")] == [1]


async def test_prune_arguments(store: TaskStore, key: KeyFactory) -> None:
    await store.save_task(key(), task_row("t1", state="completed"))
    assert await store.prune() == 0
    with pytest.raises(ConfigurationError, match="keep_last"):
        await store.prune(keep_last=-1)
    assert await store.load_task(key(), "t1") is not None


# -- lifecycle ----------------------------------------------------------------------------


async def test_reopen_keeps_everything(
    make_store: Callable[[], TaskStore], store: TaskStore, key: KeyFactory
) -> None:
    task = task_row("t1", state="waiting_breakpoint", title="kept")
    calls = [BreakpointRow(call_id="c1", agent="a", call={"tool_name": "x"}, normalized={"n": 1})]
    stash = [StashRow(priority=2, seq=7, message=message(7))]
    await store.save_task(key(), task)
    await store.append_events(key(), [event("t1", s) for s in range(1, 6)])
    await store.save_history(key(), "t1", "a", [{"role": "system"}], "completions")
    await store.save_response(key(), "t1", message(1))
    await store.save_breakpoints(key(), "t1", calls)
    await store.save_stash(key(), "t1", stash)
    await store.close()

    reopened = make_store()
    await reopened.open()
    try:
        assert await reopened.load_tasks(key()) == [task]
        assert await reopened.load_events(key(), "t1") == [event("t1", s) for s in range(1, 6)]
        assert await reopened.load_histories(key(), "t1") == {"a": [{"role": "system"}]}
        assert await reopened.load_response(key(), "t1") == message(1)
        assert await reopened.load_breakpoints(key(), "t1") == calls
        assert await reopened.load_stash(key(), "t1") == stash
    finally:
        await reopened.close()


async def test_migrations_are_idempotent(
    make_store: Callable[[], TaskStore], store: TaskStore, key: KeyFactory
) -> None:
    assert await store.schema_version() == latest_version(store.backend)
    await store.save_task(key(), task_row("t1"))
    await store.open()  # opening an open store does nothing
    second = make_store()
    await second.open()  # a second process starting on the same data: nothing to apply
    try:
        assert await second.schema_version() == latest_version(store.backend)
        assert [t.task_id for t in await second.load_tasks(key())] == ["t1"]
    finally:
        if second is not store:
            await second.close()


async def test_health(store: TaskStore) -> None:
    assert await store.health() == "ok"
    await store.close()
    assert await store.health() == "closed"
    await store.close()  # closing twice is fine


async def test_a_closed_store_raises(store: TaskStore, key: KeyFactory) -> None:
    await store.close()
    with pytest.raises(StorageError, match=r"store.*save_task.*not open"):
        await store.save_task(key(), task_row("t1"))
    with pytest.raises(StorageError, match="append_events"):
        await store.append_events(key(), [event("t1", 1)])
    with pytest.raises(StorageError, match="load_events"):
        await store.load_events(key(), "t1")
    with pytest.raises(StorageError, match="prune"):
        await store.prune(keep_last=1)
    with pytest.raises(StorageError, match="schema_version"):
        await store.schema_version()


async def test_a_value_json_cannot_hold_is_a_storage_error(
    store: TaskStore, key: KeyFactory
) -> None:
    with pytest.raises(StorageError, match="append_events") as info:
        await store.append_events(
            key(), [EventRow(task_id="t1", seq=1, event="e", data={"x": object()})]
        )
    assert isinstance(info.value.__cause__, TypeError)
    # nothing was half-written and the store keeps working
    assert await store.load_events(key(), "t1") == []
    await store.append_events(key(), [event("t1", 1)])
    assert [e.seq for e in await store.load_events(key(), "t1")] == [1]
    assert await store.health() == "ok"


async def test_nan_and_infinities_are_stored_as_null(store: TaskStore, key: KeyFactory) -> None:
    # JSON has no such numbers; refusing them would fail the task's rows on every retry
    history = [{"x": float("nan"), "y": float("inf"), "z": 1.5}]
    await store.save_history(key(), "t1", "a", history, "completions")
    assert await store.load_histories(key(), "t1") == {"a": [{"x": None, "y": None, "z": 1.5}]}


async def test_big_integers_and_non_string_keys_are_stored(
    store: TaskStore, key: KeyFactory
) -> None:
    await store.save_history(key(), "t1", "a", [{"n": 2**70, "k": {1: "one"}}], "completions")
    assert await store.load_histories(key(), "t1") == {"a": [{"n": 2**70, "k": {"1": "one"}}]}


async def test_enum_members_are_stored_as_their_values(store: TaskStore, key: KeyFactory) -> None:
    """The runtime's event names and states are ``StrEnum`` members: stored as plain text."""
    name = EventName.TASK_COMPLETE
    await store.append_events(key(), [EventRow(task_id="t1", seq=1, event=name, data={})])
    await store.save_task(key(), task_row("t1", state=TaskState.COMPLETED))
    [row] = await store.load_events(key(), "t1")
    assert type(row.event) is str
    assert row.event == "task_complete"
    loaded = await store.load_task(key(), "t1")
    assert loaded is not None
    assert loaded.state == "completed"
