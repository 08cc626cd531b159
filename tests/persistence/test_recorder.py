"""The store recorder: answers wait for their task to be stored (group committed), events
are stored exactly once, histories replaced, breakpoints saved and cleared, failures
reported and retried; reload in-process."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from tests.persistence.conftest import KEY, CutStore, GatedStore, MakeSwarm

from mail.api import MAILSwarmTemplate
from mail.core.events import EventName
from mail.core.runtime import MAILRuntime
from mail.core.tasks import TaskState
from mail.db import EventRow, MemoryStore, TaskChanges, TaskRow
from mail.errors import TaskNotStoredError

pytestmark = pytest.mark.timeout(30)


async def _send(swarm, body: str, task_id: str, **kw):  # type: ignore[no-untyped-def]
    message = swarm.build_message(subject="s", body=body, targets=["supervisor"], task_id=task_id)
    return await swarm.runtime.submit_and_wait(message, timeout=10, **kw)


async def _state(store: MemoryStore, task_id: str) -> str | None:
    task = await store.load_task(KEY, task_id)
    return None if task is None else task.state


async def test_an_answer_leaves_once_its_task_is_stored(
    make_swarm: MakeSwarm, store: MemoryStore
) -> None:
    swarm = make_swarm(store)
    swarm.runtime.start()
    rt = swarm.runtime
    answer = await _send(swarm, "hello", "t1")
    assert answer["message"]["body"] == "done: hello"
    # no flush: what the caller was told is in the store already, with every event
    assert await _state(store, "t1") == "completed"
    await _reloads_as_it_is(make_swarm, store, rt, "t1")

    # a follow-up replaces the history and appends only the new events
    await _send(swarm, "again", "t1", resume_from="user_response")
    assert [e.seq for e in await store.load_events(KEY, "t1")] == [
        e.seq for e in rt.get_events("t1")
    ]
    await _reloads_as_it_is(make_swarm, store, rt, "t1")


async def _reloads_as_it_is(
    make_swarm: MakeSwarm, store: MemoryStore, rt: MAILRuntime, task_id: str
) -> None:
    """A runtime loading ``task_id`` from ``store`` has its events, response and histories
    as ``rt`` has them (the store holds each message once, the rest is derived)."""
    other = make_swarm(store).runtime
    assert await other.restore() >= 1
    assert [(e.seq, e.event, e.data()) for e in other.get_events(task_id)] == [
        (e.seq, e.event, e.data()) for e in rt.get_events(task_id)
    ]
    task, loaded = rt.get_task(task_id), other.get_task(task_id)
    assert task is not None and loaded is not None
    assert loaded.response == task.response
    prefix = f"{task_id}::"
    mine = {k: v for k, v in rt.agent_histories.items() if k.startswith(prefix)}
    assert {k: v for k, v in other.agent_histories.items() if k.startswith(prefix)} == mine


async def test_an_answer_waits_for_a_write_already_under_way(
    make_swarm: MakeSwarm, store: MemoryStore
) -> None:
    gated = GatedStore(store)
    swarm = make_swarm(gated)
    rt = swarm.runtime
    assert rt.recorder is not None
    rt.recorder.interval = 0  # the timer starts a write as soon as anything is noted
    rt.start()
    sending = asyncio.create_task(_send(swarm, "hello", "w1"))
    await asyncio.wait_for(gated.arrived.wait(), 10)  # a write is held by the store
    for _ in range(50):  # the task ends meanwhile; its answer must stay until stored
        await asyncio.sleep(0)
    assert not sending.done()
    assert rt.unsaved_tasks == 1  # a write under way counts: it is not stored yet
    assert gated.writing_for() > 0
    gated.gate.set()
    answer = await asyncio.wait_for(sending, 10)
    assert answer["message"]["body"] == "done: hello"
    assert await _state(store, "w1") == "completed"
    assert rt.unsaved_tasks == 0


async def test_tasks_that_finish_during_a_commit_share_the_next(
    make_swarm: MakeSwarm, store: MemoryStore
) -> None:
    gated = GatedStore(store)
    swarm = make_swarm(gated)
    rt = swarm.runtime
    rt.start()
    first = asyncio.create_task(_send(swarm, "first", "g0"))
    await asyncio.wait_for(gated.arrived.wait(), 10)  # its commit is under way, held
    others = [asyncio.create_task(_send(swarm, f"q{i}", f"g{i}")) for i in range(1, 9)]
    for _ in range(200):  # the eight finish while the first commit is held
        await asyncio.sleep(0)
    gated.gate.set()
    await asyncio.wait_for(asyncio.gather(first, *others), 10)
    for i in range(9):
        assert await _state(store, f"g{i}") == "completed"
    # one commit for the first task, one for the eight that waited (plus at most one
    # timed write of events noted in between)
    assert len(gated.writes) <= 3
    assert max(len(w) for w in gated.writes) >= 8


async def test_breakpoints_saved_then_cleared(make_swarm: MakeSwarm, store: MemoryStore) -> None:
    swarm = make_swarm(store)
    swarm.runtime.start()
    paused = await _send(swarm, "pause please", "t-bp")
    assert paused["message"]["subject"] == "::breakpoint_tool_call::"
    # the pause is stored before the caller hears of it
    assert [r.agent for r in await store.load_breakpoints(KEY, "t-bp")] == ["supervisor"]
    assert await _state(store, "t-bp") == "waiting_breakpoint"

    answer = await _send(
        swarm,
        "",
        "t-bp",
        resume_from="breakpoint_tool_call",
        breakpoint_tool_call_result="Ada",
    )
    assert answer["message"]["body"] == "resumed after the breakpoint"
    assert await store.load_breakpoints(KEY, "t-bp") == []
    assert await _state(store, "t-bp") == "completed"


async def test_a_failed_write_is_reported_and_retried(
    make_swarm: MakeSwarm, store: MemoryStore
) -> None:
    cut = CutStore(store)
    swarm = make_swarm(cut)
    swarm.runtime.start()
    rt = swarm.runtime
    assert rt.recorder is not None
    cut.fail = OSError("disk full")
    rt.commit_timeout = 0.5
    # an outage holds the answer back: the task ends, but is not told as ended
    with pytest.raises(TaskNotStoredError) as caught:
        await asyncio.wait_for(_send(swarm, "hello", "t1"), 10)
    assert caught.value.task_id == "t1"
    assert "disk full" in str(caught.value)
    assert caught.value.retry_after == 1.0
    assert (await rt.settled("t1", 0)).state == "pending"
    [warning] = [e for e in rt.get_events("t1") if e.event == EventName.STORAGE_ERROR]
    assert warning.extra_data["error"] == "disk full"
    assert warning.extra_data["unsaved_records"] >= 1
    assert rt.storage_error == "disk full"
    assert await store.load_events(KEY, "t1") == []
    assert not await rt.recorder.flush()  # still failing: no second event
    cut.fail = None
    assert await rt.recorder.flush()
    assert rt.storage_error is None
    assert (await rt.settled("t1", 0)).committed
    assert await _state(store, "t1") == "completed"
    assert [e.seq for e in await store.load_events(KEY, "t1")] == [
        e.seq for e in rt.get_events("t1")
    ]
    assert [e.event for e in rt.get_events("t1")].count(EventName.STORAGE_ERROR) == 1


async def test_reload_serves_resumes_and_interrupts(
    make_swarm: MakeSwarm, store: MemoryStore
) -> None:
    cut = CutStore(store)
    a = make_swarm(cut)
    a.runtime.start()
    await _send(a, "hello", "t-done")
    await _send(a, "pause please", "t-bp")
    await a.runtime.submit(
        a.build_message(subject="s", body="slow job", targets=["supervisor"], task_id="t-run")
    )
    task = a.runtime.get_task("t-run")
    assert task is not None
    while not any(e.event == EventName.NEW_MESSAGE for e in task.log.all()[1:]):
        await task.log.wait(task.log.last_seq, 5)
    assert a.runtime.recorder is not None
    await a.runtime.recorder.flush()
    cut.cut = True  # the process "dies": nothing more reaches the store

    b = make_swarm(store)
    assert await b.runtime.restore() == 3
    b.runtime.start()
    rt_b = b.runtime
    done_a, done_b = a.runtime.get_events("t-done"), rt_b.get_events("t-done")
    assert [(e.seq, e.event, e.data()) for e in done_b] == [
        (e.seq, e.event, e.data()) for e in done_a
    ]
    assert rt_b.get_task("t-done").state is TaskState.COMPLETED  # type: ignore[union-attr]

    # the paused task resumes on the new runtime
    assert rt_b.get_task("t-bp").state is TaskState.WAITING_BREAKPOINT  # type: ignore[union-attr]
    answer = await _send(
        b, "", "t-bp", resume_from="breakpoint_tool_call", breakpoint_tool_call_result="Ada"
    )
    assert answer["message"]["body"] == "resumed after the breakpoint"
    seqs = [e.seq for e in rt_b.get_events("t-bp")]
    assert seqs == list(range(1, len(seqs) + 1))
    assert await store.load_breakpoints(KEY, "t-bp") == []

    # the running task is interrupted, says so, and resumes with user_response
    run = rt_b.get_task("t-run")
    assert run is not None and run.state is TaskState.INTERRUPTED
    assert run.log.all()[-1].event == "task_interrupted"
    answer = await _send(b, "finish now", "t-run", resume_from="user_response")
    assert answer["message"]["body"] == "done: finish now"
    stored = await store.load_events(KEY, "t-run")
    assert [e.seq for e in stored] == [e.seq for e in run.log.all()]
    assert await _state(store, "t-run") == "completed"


async def test_restore_loads_only_what_the_runtime_keeps(
    template: MAILSwarmTemplate, store: MemoryStore
) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    states = ["completed"] * 6 + ["running", "waiting_breakpoint"] + ["failed"] * 2
    for i, state in enumerate(states):  # oldest first
        when = start + timedelta(minutes=i)
        row = TaskRow(
            task_id=f"r{i}",
            task_owner="user:u1@persist",
            state=state,
            start_time=when,
            updated_at=when,
        )
        await store.save_task(KEY, row)
    swarm = template.instantiate(
        {}, user_id="u1", print_llm_streams=False, store=store, max_finished_tasks=3
    )
    try:
        # loaded: the running one, the paused one and the newest three others (r5, r8,
        # r9); the running one comes back interrupted, which evicts r5 as the oldest
        assert await swarm.runtime.restore() == 5
        kept = {t.task_id: t.state.value for t in swarm.runtime.tasks}
        assert kept == {
            "r6": "interrupted",
            "r7": "waiting_breakpoint",
            "r8": "failed",
            "r9": "failed",
        }
        assert swarm.runtime.recorder is not None
        await swarm.runtime.recorder.flush()
        assert await _state(store, "r6") == "interrupted"
    finally:
        await swarm.runtime.shutdown(timeout=0.5)


async def test_closing_writes_what_waits(make_swarm: MakeSwarm, store: MemoryStore) -> None:
    gated = GatedStore(store)
    swarm = make_swarm(gated)
    rt = swarm.runtime
    assert rt.recorder is not None
    rt.recorder.interval = 3600  # nothing is written unless an answer or closing asks
    rt.start()
    for i in range(5):
        message = swarm.build_message(
            subject="s", body=f"q{i}", targets=["supervisor"], task_id=f"c{i}"
        )
        await rt.submit(message)  # nobody waits for these answers
    for i in range(5):
        await asyncio.wait_for(rt.get_task(f"c{i}").wait_turn(), 10)  # type: ignore[union-attr]
    assert rt.unsaved_tasks == 5
    closing = asyncio.create_task(rt.shutdown(timeout=5))
    gated.gate.set()
    await asyncio.wait_for(closing, 10)
    for i in range(5):
        assert await _state(store, f"c{i}") == "completed", f"task c{i} was lost at shutdown"
    assert rt.unsaved_tasks == 0


async def test_each_message_is_stored_once(make_swarm: MakeSwarm, store: MemoryStore) -> None:
    swarm = make_swarm(store)
    swarm.runtime.start()
    await _send(swarm, "hello", "once")
    rt = swarm.runtime
    details = (await store.load_details(KEY, ["once"]))["once"]
    stored = json.dumps([[e.data for e in details.events], details.histories, details.response])
    assert "<incoming_message>" not in stored  # renderings are derived, not stored
    messages = [
        e.extra_data["full_message"]
        for e in rt.get_events("once")
        if "full_message" in e.extra_data
    ]
    assert len(messages) >= 2
    for message in messages:  # each message's own ids once: one copy of it
        assert stored.count(message["id"]) >= 1
        payload = message["message"]
        own_id = payload.get("request_id") or payload.get("broadcast_id")
        assert stored.count(own_id) == 1
    await _reloads_as_it_is(make_swarm, store, rt, "once")


async def test_rows_stored_whole_load_as_they_are(
    make_swarm: MakeSwarm, store: MemoryStore
) -> None:
    """Rows written before messages were stored once (full descriptions, rendered history
    turns, the response in full) load unchanged."""
    swarm = make_swarm(store)
    swarm.runtime.start()
    await _send(swarm, "hello", "whole")
    rt = swarm.runtime
    task = rt.get_task("whole")
    assert task is not None
    old = MemoryStore()
    await old.open()
    try:
        [row] = await store.load_tasks(KEY)
        histories = [
            (k.split("::", 1)[1], h, "responses")
            for k, h in rt.agent_histories.items()
            if k.startswith("whole::")
        ]
        change = TaskChanges(
            task_id="whole",
            task=row,
            events=[
                EventRow(task_id="whole", seq=e.seq or 0, event=e.event, data=e.data())
                for e in rt.get_events("whole")
            ],
            histories=histories,
            response=dict(task.response or {}),
        )
        assert await old.save_changes(KEY, [change]) == {}
        await _reloads_as_it_is(make_swarm, old, rt, "whole")
    finally:
        await old.close()
