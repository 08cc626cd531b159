"""Large and mixed batches, stored as a row-by-row run would store them (PostgreSQL writes a
batch's rows as one statement over arrays, with the caller's columns as values when the
batch has one caller; SQLite as multi-row statements of up to 64 rows). Part of the store
suite, so every test runs against the memory, SQLite and PostgreSQL stores."""

from __future__ import annotations

import asyncio

from tests.db.test_store import KeyFactory, event, message, task_row

from mail.db import TaskChanges, TaskStore


async def test_a_batch_of_many_rows_is_stored_whole_and_in_order(
    store: TaskStore, key: KeyFactory
) -> None:
    # 137 tasks x 11 events in one batch
    changes = [
        TaskChanges(
            task_id=f"t{n:03d}",
            task=task_row(f"t{n:03d}", title=f"task {n}"),
            events=[event(f"t{n:03d}", s) for s in range(1, 12)],
            histories=[("supervisor", [{"n": n}], "completions"), ("worker", [], "responses")],
            response=message(n),
            breakpoints=[],
            stash=[],
        )
        for n in range(137)
    ]
    assert await store.save_changes(key(), changes) == {}
    for n in (0, 63, 64, 136):
        task_id = f"t{n:03d}"
        loaded = await store.load_task(key(), task_id)
        assert loaded is not None
        assert loaded.title == f"task {n}"
        assert [e.seq for e in await store.load_events(key(), task_id)] == list(range(1, 12))
        assert await store.load_histories(key(), task_id) == {
            "supervisor": [{"n": n}],
            "worker": [],
        }
        assert await store.load_response(key(), task_id) == message(n)


async def test_callers_written_in_one_batch_keep_their_own_rows(
    store: TaskStore, key: KeyFactory
) -> None:
    callers = [key(id=f"u{n}") for n in range(3)]

    def changes(n: int) -> list[TaskChanges]:
        return [
            TaskChanges(
                task_id="t1",
                task=task_row("t1", title=f"caller {n}"),
                events=[event("t1", s) for s in range(1, n + 2)],
                histories=[("supervisor", [{"caller": n}], "completions")],
                response=message(n),
                breakpoints=[],
            )
        ]

    # fired together: one flush carries the rows of all three callers
    results = await asyncio.gather(
        *(store.save_changes(caller, changes(n)) for n, caller in enumerate(callers))
    )
    assert results == [{}, {}, {}]
    for n, caller in enumerate(callers):
        loaded = await store.load_task(caller, "t1")
        assert loaded is not None
        assert loaded.title == f"caller {n}"
        assert [e.seq for e in await store.load_events(caller, "t1")] == list(range(1, n + 2))
        assert await store.load_histories(caller, "t1") == {"supervisor": [{"caller": n}]}
        assert await store.load_response(caller, "t1") == message(n)


async def test_rows_repeated_in_one_batch_apply_as_one_by_one(
    store: TaskStore, key: KeyFactory
) -> None:
    # the same task's record, response and history twice, and an event given twice, in
    # writes fired together (one flush, consecutive writes of one kind merged into one
    # statement): the last upsert wins, the first event
    await asyncio.gather(
        store.save_task(key(), task_row("t1", title="one")),
        store.save_task(key(), task_row("t1", title="two")),
        store.save_response(key(), "t1", message(1)),
        store.save_response(key(), "t1", message(2)),
        store.append_events(key(), [event("t1", 1, "first"), event("t1", 2)]),
        store.append_events(key(), [event("t1", 1, "second"), event("t1", 3)]),
        store.save_history(key(), "t1", "a", [{"v": 1}], "completions"),
        store.save_history(key(), "t1", "a", [{"v": 2}], "completions"),
    )
    loaded = await store.load_task(key(), "t1")
    assert loaded is not None
    assert loaded.title == "two"
    assert await store.load_response(key(), "t1") == message(2)
    events = await store.load_events(key(), "t1")
    assert [(e.seq, e.event) for e in events] == [
        (1, "first"),
        (2, "new_message"),
        (3, "new_message"),
    ]
    assert await store.load_histories(key(), "t1") == {"a": [{"v": 2}]}
