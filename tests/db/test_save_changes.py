"""``TaskStore.save_changes``, the recorder's bulk write: part of the store suite, so every
test runs against the memory, SQLite and PostgreSQL stores."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.db.conftest import INJECTED
from tests.db.test_store import KeyFactory, event, message, task_row

from mail.db import (
    BreakpointRow,
    CallerKey,
    EventRow,
    StashRow,
    TaskChanges,
    TaskStore,
)
from mail.errors import StorageError, StorageRefusedError


def breakpoint_row(n: int) -> BreakpointRow:
    return BreakpointRow(
        call_id=f"call_{n}",
        agent="supervisor",
        call={"tool_name": "ask", "tool_args": {"n": n}, "tool_call_id": f"call_{n}"},
        normalized={"name": "ask", "arguments": {"n": n}},
    )


def stash_row(n: int) -> StashRow:
    return StashRow(priority=n % 3, seq=n, message=message(n))


def changes_of(n: int) -> TaskChanges:
    """Task ``t{n}``'s changes; what is set varies with ``n`` (every kind, both ways)."""
    task_id = f"t{n:02d}"
    return TaskChanges(
        task_id=task_id,
        task=task_row(task_id, minutes=n, title=f"task {n}") if n % 4 else None,
        # out of order, and with a retried sequence number: stored in order, once
        events=[event(task_id, s) for s in (3, 1, 2, 3)][: n % 5],
        histories=[
            ("supervisor", [{"role": "user", "content": "old"}], "completions"),
            ("worker", [{"type": "message", "n": n}], "responses"),
            ("supervisor", [{"role": "user", "content": f"new {n}"}], "completions"),
        ][: n % 4],
        response=message(n) if n % 3 == 0 else None,
        breakpoints=[None, [], [breakpoint_row(n), breakpoint_row(n + 100)]][n % 3],
        stash=[None, [], [stash_row(n), stash_row(n + 100)]][(n // 3) % 3],
    )


async def apply_one_by_one(store: TaskStore, key: CallerKey, c: TaskChanges) -> None:
    """What the per-row methods store for ``c``."""
    if c.task is not None:
        await store.save_task(key, c.task)
    await store.append_events(key, c.events)
    for agent, history, tool_format in c.histories:
        await store.save_history(key, c.task_id, agent, history, tool_format)
    if c.response is not None:
        await store.save_response(key, c.task_id, c.response)
    if c.breakpoints is not None:
        await store.save_breakpoints(key, c.task_id, c.breakpoints)
    if c.stash is not None:
        await store.save_stash(key, c.task_id, c.stash)


async def stored(store: TaskStore, key: CallerKey, task_id: str) -> dict[str, Any]:
    return {
        "task": await store.load_task(key, task_id),
        "events": await store.load_events(key, task_id),
        "histories": await store.load_histories(key, task_id),
        "response": await store.load_response(key, task_id),
        "breakpoints": await store.load_breakpoints(key, task_id),
        "stash": await store.load_stash(key, task_id),
    }


async def prefill(store: TaskStore, key: CallerKey, task_id: str) -> None:
    """Rows stored before: the bulk write must keep (``None``) or replace them."""
    await store.save_task(key, task_row(task_id, title="before"))
    await store.append_events(key, [event(task_id, 1, "first-write-wins")])
    await store.save_history(key, task_id, "supervisor", [{"role": "system"}], "completions")
    await store.save_history(key, task_id, "kept", [{"role": "system"}], "completions")
    await store.save_response(key, task_id, message(999))
    await store.save_breakpoints(key, task_id, [breakpoint_row(999)])
    await store.save_stash(key, task_id, [stash_row(999)])


# -- round trips --------------------------------------------------------------------------


async def test_many_tasks_in_one_call_store_what_the_row_methods_store(
    store: TaskStore, key: KeyFactory
) -> None:
    bulk, one_by_one = key(id="bulk"), key(id="rows")
    changes = [changes_of(n) for n in range(24)]
    for caller in (bulk, one_by_one):
        for c in changes[::2]:
            await prefill(store, caller, c.task_id)

    assert await store.save_changes(bulk, changes) == {}
    for c in changes:
        await apply_one_by_one(store, one_by_one, c)

    for c in changes:
        assert await stored(store, bulk, c.task_id) == await stored(store, one_by_one, c.task_id)
    assert await store.load_tasks(bulk) == await store.load_tasks(one_by_one)


async def test_the_parts_of_a_task(store: TaskStore, key: KeyFactory) -> None:
    await prefill(store, key(), "kept")
    await prefill(store, key(), "cleared")
    rows = [breakpoint_row(1), breakpoint_row(2)]
    stash = [stash_row(5), stash_row(4)]
    done = task_row("new", state="completed", title="done")
    failures = await store.save_changes(
        key(),
        [
            TaskChanges(task_id="kept"),  # nothing changed: everything stays
            TaskChanges(task_id="cleared", breakpoints=[], stash=[]),
            TaskChanges(
                task_id="new",
                task=done,
                events=[event("new", 2), event("new", 1)],
                histories=[("a", [{"n": 1}], "completions"), ("a", [{"n": 2}], "completions")],
                response=message(1),
                breakpoints=rows,
                stash=stash,
            ),
        ],
    )
    assert failures == {}
    kept = await stored(store, key(), "kept")
    assert kept["breakpoints"] == [breakpoint_row(999)]
    assert kept["stash"] == [stash_row(999)]
    assert kept["response"] == message(999)
    assert kept["task"] is not None
    assert kept["task"].title == "before"
    cleared = await stored(store, key(), "cleared")
    assert cleared["breakpoints"] == []
    assert cleared["stash"] == []
    assert cleared["response"] == message(999)
    assert await stored(store, key(), "new") == {
        "task": done,
        "events": [event("new", 1), event("new", 2)],
        "histories": {"a": [{"n": 2}]},  # replaced by the later entry
        "response": message(1),
        "breakpoints": rows,
        "stash": stash,
    }


async def test_retried_changes_store_events_once(store: TaskStore, key: KeyFactory) -> None:
    first = [
        TaskChanges(task_id=f"t{n}", events=[event(f"t{n}", s) for s in (1, 2)]) for n in range(5)
    ]
    assert await store.save_changes(key(), first) == {}
    # the same batch again with more events: the first write of a sequence number wins
    again = [
        TaskChanges(
            task_id=f"t{n}",
            events=[EventRow(task_id=f"t{n}", seq=2, event="other", data={}), event(f"t{n}", 3)],
        )
        for n in range(5)
    ]
    assert await store.save_changes(key(), [*first, *again]) == {}
    for n in range(5):
        assert await store.load_events(key(), f"t{n}") == [event(f"t{n}", s) for s in (1, 2, 3)]


async def test_a_task_given_twice_is_applied_in_order(store: TaskStore, key: KeyFactory) -> None:
    failures = await store.save_changes(
        key(),
        [
            TaskChanges(task_id="t1", task=task_row("t1", title="one"), events=[event("t1", 1)]),
            TaskChanges(task_id="t2", events=[event("t2", 1)]),
            TaskChanges(task_id="t1", task=task_row("t1", title="two"), events=[event("t1", 2)]),
        ],
    )
    assert failures == {}
    loaded = await store.load_task(key(), "t1")
    assert loaded is not None
    assert loaded.title == "two"
    assert [e.seq for e in await store.load_events(key(), "t1")] == [1, 2]


async def test_changes_apply_in_call_order_with_the_row_methods(
    store: TaskStore, key: KeyFactory
) -> None:
    def history(n: int) -> list[dict[str, Any]]:
        return [{"role": "user", "content": str(n)}]

    # fired together, never awaited one by one: the last call wins
    await asyncio.gather(
        store.save_history(key(), "t1", "a", history(1), "completions"),
        store.save_changes(
            key(), [TaskChanges(task_id="t1", histories=[("a", history(2), "completions")])]
        ),
        store.save_history(key(), "t1", "b", history(3), "completions"),
        store.save_changes(
            key(), [TaskChanges(task_id="t1", histories=[("b", history(4), "completions")])]
        ),
    )
    assert await store.load_histories(key(), "t1") == {"a": history(2), "b": history(4)}


async def test_no_changes(store: TaskStore, key: KeyFactory) -> None:
    assert await store.save_changes(key(), []) == {}
    assert await store.save_changes(key(), [TaskChanges(task_id="t1")]) == {}
    assert await store.load_events(key(), "t1") == []


async def test_saved_changes_are_snapshots(store: TaskStore, key: KeyFactory) -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "one"}]
    changes = TaskChanges(task_id="t1", histories=[("a", history, "completions")])
    write = asyncio.ensure_future(store.save_changes(key(), [changes]))
    await asyncio.sleep(0)  # queued, not yet committed
    history[0]["content"] = "changed"
    assert await write == {}
    assert await store.load_histories(key(), "t1") == {"a": [{"role": "user", "content": "one"}]}


# -- failures -----------------------------------------------------------------------------


async def test_a_value_json_cannot_hold_fails_only_its_task(
    store: TaskStore, key: KeyFactory
) -> None:
    changes = [
        TaskChanges(task_id="good-1", task=task_row("good-1"), events=[event("good-1", 1)]),
        TaskChanges(
            task_id="bad",
            task=task_row("bad"),
            events=[event("bad", 1)],
            histories=[("a", [{"x": object()}], "completions")],
        ),
        TaskChanges(task_id="good-2", response=message(2)),
    ]
    failures = await store.save_changes(key(), changes)
    assert list(failures) == ["bad"]
    assert isinstance(failures["bad"], StorageError)
    assert "save_changes failed" in str(failures["bad"])
    assert isinstance(failures["bad"].__cause__, TypeError)
    # the failed task's changes are stored together or not at all; the others are stored
    assert await store.load_task(key(), "bad") is None
    assert await store.load_events(key(), "bad") == []
    assert await store.load_task(key(), "good-1") == task_row("good-1")
    assert await store.load_events(key(), "good-1") == [event("good-1", 1)]
    assert await store.load_response(key(), "good-2") == message(2)
    assert await store.health() == "ok"


async def test_rows_of_another_task_fail_their_task(store: TaskStore, key: KeyFactory) -> None:
    failures = await store.save_changes(
        key(),
        [
            TaskChanges(task_id="t1", events=[event("t2", 1)]),
            TaskChanges(task_id="t3", task=task_row("t4")),
            TaskChanges(task_id="t5", events=[event("t5", 1)]),
        ],
    )
    assert sorted(failures) == ["t1", "t3"]
    assert "an event of task 't2'" in str(failures["t1"])
    assert await store.load_events(key(), "t2") == []
    assert await store.load_task(key(), "t4") is None
    assert [e.seq for e in await store.load_events(key(), "t5")] == [1]


async def test_a_closed_store_raises_on_save_changes(store: TaskStore, key: KeyFactory) -> None:
    await store.close()
    with pytest.raises(StorageError, match=r"store.*save_changes.*not open"):
        await store.save_changes(key(), [TaskChanges(task_id="t1", events=[event("t1", 1)])])


@pytest.mark.usefixtures("refuse_bad_events")
async def test_a_refused_row_fails_only_its_task(store: TaskStore, key: KeyFactory) -> None:
    changes = [changes_of(n) for n in range(1, 12)]
    bad = TaskChanges(
        task_id="bad",
        task=task_row("bad"),
        events=[event("bad", 1)],
        histories=[("a", [{"role": "user"}], "completions")],
        breakpoints=[breakpoint_row(1)],
    )
    failures = await store.save_changes(key(), [*changes[:5], bad, *changes[5:]])
    assert list(failures) == ["bad"]
    assert INJECTED in str(failures["bad"])
    assert "save_changes failed" in str(failures["bad"])
    # none of the failed task's rows, all of the others'
    assert await stored(store, key(), "bad") == {
        "task": None,
        "events": [],
        "histories": {},
        "response": None,
        "breakpoints": [],
        "stash": [],
    }
    for c in changes:
        if c.task is not None:
            assert await store.load_task(key(), c.task_id) == c.task
        assert [e.seq for e in await store.load_events(key(), c.task_id)] == sorted(
            {e.seq for e in c.events}
        )
    # the store keeps working once a write succeeds
    assert await store.save_changes(key(), [changes_of(20)]) == {}
    assert await store.health() == "ok"


# -- cost ---------------------------------------------------------------------------------


async def test_save_changes_creates_no_task_per_task(store: TaskStore, key: KeyFactory) -> None:
    """Regression: the recorder's write created about seven asyncio Tasks per stored task
    (one per row method, through ``asyncio.gather``)."""
    await store.save_changes(key(), [changes_of(0)])  # warm: connections, the flusher
    created: list[str] = []
    loop = asyncio.get_running_loop()
    factory = loop.get_task_factory()

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        created.append(getattr(coro, "__qualname__", repr(coro)))
        return asyncio.Task(coro, loop=loop, **kw)

    loop.set_task_factory(counting)
    try:
        assert await store.save_changes(key(), [changes_of(n) for n in range(1, 101)]) == {}
    finally:
        loop.set_task_factory(factory)
    # asyncpg's pool gives a connection back in a task of its own: one per call at most
    assert len(created) <= 1, created


# -- text every store holds, and the kinds of failure -------------------------------------

#: Text no store holds, wherever it is: each store refuses it the same way (the memory and
#: SQLite stores would hold it, PostgreSQL would not: refused everywhere, as the server does).
_UNSTORABLE: dict[str, TaskChanges] = {
    "nul-in-a-title": TaskChanges(task_id="bad", task=task_row("bad", title="a\x00b")),
    "surrogate-in-a-title": TaskChanges(task_id="bad", task=task_row("bad", title="a\ud800")),
    "nul-in-an-event": TaskChanges(
        task_id="bad",
        events=[EventRow(task_id="bad", seq=1, event="new_message", data={"d": "x\x00"})],
    ),
    "surrogate-in-a-key": TaskChanges(task_id="bad", response={"\udc00": "v"}),
    "nul-in-a-history": TaskChanges(
        task_id="bad", histories=[("a", [{"content": "\x00"}], "completions")]
    ),
    "nul-in-an-agent-name": TaskChanges(
        task_id="bad", histories=[("a\x00", [{"content": "x"}], "completions")]
    ),
    "surrogate-in-a-stash": TaskChanges(
        task_id="bad", stash=[StashRow(priority=1, seq=1, message={"body": "\ud83d"})]
    ),
    "nul-in-the-task-id": TaskChanges(task_id="b\x00d", response={"x": 1}),
}


@pytest.mark.parametrize("case", list(_UNSTORABLE))
async def test_text_no_store_holds_is_refused_alike_and_costs_only_its_task(
    store: TaskStore, key: KeyFactory, case: str
) -> None:
    bad = _UNSTORABLE[case]
    failures = await store.save_changes(
        key(), [TaskChanges(task_id="good", task=task_row("good")), bad]
    )
    assert list(failures) == [bad.task_id]
    refused = failures[bad.task_id]
    assert isinstance(refused, StorageRefusedError)  # never worth a retry
    assert "NUL character" in str(refused) or "lone surrogate" in str(refused)
    assert await store.load_task(key(), "good") == task_row("good")
    assert await store.load_task(key(), bad.task_id) is None
    assert store.outage is None  # the store works: one task's text is no outage
    assert await store.health() == "ok"


async def test_escaped_text_and_surrogate_pairs_round_trip(
    store: TaskStore, key: KeyFactory
) -> None:
    """What looks like a NUL or a surrogate in JSON but is text (an escaped backslash, a
    whole surrogate pair) is stored as it is."""
    text = 'a literal \\u0000, a "\\\\u0000", 😀 and \U0001f600 and \\ud800'
    row = task_row("t1", title=text)
    response = {"body": text, text: [text]}
    assert (
        await store.save_changes(key(), [TaskChanges(task_id="t1", task=row, response=response)])
        == {}
    )
    assert await store.load_task(key(), "t1") == row
    assert await store.load_response(key(), "t1") == response


async def test_a_failing_store_is_an_outage_until_a_write_works(
    store: TaskStore, key: KeyFactory
) -> None:
    assert store.outage is None
    await store.close()
    with pytest.raises(StorageError, match="not open") as failed:
        await store.save_changes(key(), [TaskChanges(task_id="t1", task=task_row("t1"))])
    assert not isinstance(failed.value, StorageRefusedError)
    assert store.outage is not None
    assert "not open" in store.outage
    await store.open()
    assert await store.save_changes(key(), [TaskChanges(task_id="t1", task=task_row("t1"))]) == {}
    assert store.outage is None
    assert store.written_at > 0
    assert store.writing_for() == 0.0


async def test_a_lease_is_refused_by_a_store_that_keeps_none(
    store: TaskStore, key: KeyFactory, store_kind: str
) -> None:
    if store_kind == "postgres":
        pytest.skip("PostgreSQL keeps leases: tests/db/test_cluster_leases.py fences writes")
    failures = await store.save_changes(
        key(), [TaskChanges(task_id="t1", task=task_row("t1"), lease=("replica-a", 7))]
    )
    assert isinstance(failures["t1"], StorageRefusedError)
    assert "keeps no task leases" in str(failures["t1"])
