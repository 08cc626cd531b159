"""``TaskStore.load_details``, the bulk read a runtime is restored with: part of the store
suite, so every test runs against the memory, SQLite and PostgreSQL stores."""

from __future__ import annotations

import pytest
from tests.db.test_save_changes import breakpoint_row, changes_of, stash_row
from tests.db.test_store import KeyFactory, event, message, task_row

from mail.db import CallerKey, TaskChanges, TaskDetails, TaskStore
from mail.errors import StorageError


async def per_task(store: TaskStore, key: CallerKey, task_id: str) -> TaskDetails:
    """What the five per-task loaders return for ``task_id``."""
    return TaskDetails(
        events=await store.load_events(key, task_id),
        histories=await store.load_histories(key, task_id),
        response=await store.load_response(key, task_id),
        breakpoints=await store.load_breakpoints(key, task_id),
        stash=await store.load_stash(key, task_id),
    )


async def assert_like_per_task(
    store: TaskStore, key: CallerKey, ids: list[str], details: dict[str, TaskDetails]
) -> None:
    for task_id in ids:
        expected = await per_task(store, key, task_id)
        got = details.get(task_id, TaskDetails())
        assert got == expected, task_id
        assert list(got.histories) == list(expected.histories), task_id


async def test_details_are_what_the_per_task_loaders_return(
    store: TaskStore, key: KeyFactory
) -> None:
    changes = [changes_of(n) for n in range(1, 25)]  # every mix of empty and filled tables
    changes += [
        TaskChanges(task_id="record-only", task=task_row("record-only")),
        TaskChanges(task_id="cleared", task=task_row("cleared"), breakpoints=[], stash=[]),
        TaskChanges(task_id="empty-history", histories=[("a", [], "completions")]),
    ]
    assert await store.save_changes(key(), changes) == {}
    ids = ["nope", *reversed([c.task_id for c in changes]), "t05", "also-nope"]

    details = await store.load_details(key(), ids)

    await assert_like_per_task(store, key(), ids, details)
    # present: the ids with rows in one of the five tables, once, in the order given
    with_rows = [i for i in dict.fromkeys(ids) if await per_task(store, key(), i) != TaskDetails()]
    assert list(details) == with_rows
    assert {"nope", "also-nope", "record-only", "cleared"}.isdisjoint(details)
    assert "empty-history" in details


async def test_more_ids_than_one_query_takes(store: TaskStore, key: KeyFactory) -> None:
    # SQLite asks for 500 ids per query: the tasks of every chunk must come back whole
    ids = [f"task-{n:04d}" for n in range(1203)]
    changes = [
        TaskChanges(
            task_id=task_id,
            events=[event(task_id, 3), event(task_id, 1), event(task_id, 2)],
            histories=[("a", [{"n": n}], "completions")],
            response=message(n) if n % 2 else None,
            breakpoints=[breakpoint_row(n), breakpoint_row(n + 1)] if n % 3 == 0 else None,
            stash=[stash_row(n + 1), stash_row(n)] if n % 5 == 0 else None,
        )
        for n, task_id in enumerate(ids)
    ]
    assert await store.save_changes(key(), changes) == {}
    asked = [*reversed(ids), "nope"]

    details = await store.load_details(key(), asked)

    assert list(details) == ids[::-1]
    for n, task_id in enumerate(ids):
        got = details[task_id]
        assert [e.seq for e in got.events] == [1, 2, 3]
        assert got.histories == {"a": [{"n": n}]}
        assert got.response == (message(n) if n % 2 else None)
        assert [b.call_id for b in got.breakpoints] == (
            [f"call_{n}", f"call_{n + 1}"] if n % 3 == 0 else []
        )
        assert [s.seq for s in got.stash] == ([n + 1, n] if n % 5 == 0 else [])
    await assert_like_per_task(store, key(), ids[::97], details)


@pytest.mark.parametrize(
    "other", [{"swarm": "elsewhere"}, {"role": "admin"}, {"id": "u2"}], ids=["swarm", "role", "id"]
)
async def test_callers_are_keyed_apart(
    store: TaskStore, key: KeyFactory, other: dict[str, str]
) -> None:
    mine, theirs = key(), key(**other)
    for caller, tag in ((mine, 1), (theirs, 2)):
        await store.save_changes(
            caller,
            [
                TaskChanges(
                    task_id="shared",
                    events=[event("shared", tag)],
                    histories=[(f"agent{tag}", [{"tag": tag}], "completions")],
                    response=message(tag),
                    breakpoints=[breakpoint_row(tag)],
                    stash=[stash_row(tag)],
                ),
                TaskChanges(task_id=f"only{tag}", events=[event(f"only{tag}", 1)]),
            ],
        )
    ids = ["shared", "only1", "only2"]

    details = await store.load_details(mine, ids)

    assert list(details) == ["shared", "only1"]
    assert details["shared"] == TaskDetails(
        events=[event("shared", 1)],
        histories={"agent1": [{"tag": 1}]},
        response=message(1),
        breakpoints=[breakpoint_row(1)],
        stash=[stash_row(1)],
    )
    assert list(await store.load_details(theirs, ids)) == ["shared", "only2"]
    assert await store.load_details(key(id="nobody"), ids) == {}


async def test_no_ids(store: TaskStore, key: KeyFactory) -> None:
    await store.append_events(key(), [event("t1", 1)])
    assert await store.load_details(key(), []) == {}


async def test_a_closed_store_raises_on_load_details(store: TaskStore, key: KeyFactory) -> None:
    await store.close()
    with pytest.raises(StorageError, match=r"store.*load_details.*not open"):
        await store.load_details(key(), ["t1"])
