"""The store recorder: batched writes, events exactly once, histories replaced,
breakpoints saved and cleared, failures reported and retried; reload in-process."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from tests.persistence.conftest import KEY, CutSink, MakeSwarm, eventually

from mail._api_store import StoreSink
from mail.api import MAILSwarmTemplate
from mail.core._persist import StoredTask, WriteBatch
from mail.core.events import EventName
from mail.core.tasks import TaskState
from mail.db import MemoryStore, TaskRow

pytestmark = pytest.mark.timeout(30)


async def _send(swarm, body: str, task_id: str, **kw):  # type: ignore[no-untyped-def]
    message = swarm.build_message(subject="s", body=body, targets=["supervisor"], task_id=task_id)
    return await swarm.runtime.submit_and_wait(message, timeout=10, **kw)


async def test_completed_task_is_stored_once(make_swarm: MakeSwarm, store: MemoryStore) -> None:
    swarm = make_swarm(StoreSink(store, KEY))
    swarm.runtime.start()
    answer = await _send(swarm, "hello", "t1")
    assert answer["message"]["body"] == "done: hello"
    rt = swarm.runtime
    assert rt.recorder is not None
    await rt.recorder.flush()
    await rt.recorder.flush()  # nothing new: no duplicate
    events = await store.load_events(KEY, "t1")
    assert [e.seq for e in events] == list(range(1, len(rt.get_events("t1")) + 1))
    assert [e.event for e in events] == [e.event for e in rt.get_events("t1")]
    assert json.loads(events[0].data_json or "") == rt.get_events("t1")[0].data()
    task = await store.load_task(KEY, "t1")
    assert task is not None and task.state == "completed"
    assert (await store.load_response(KEY, "t1")) == rt.get_task("t1").response  # type: ignore[union-attr]
    histories = await store.load_histories(KEY, "t1")
    assert histories["supervisor"] == rt.agent_histories["t1::supervisor"]

    # a follow-up replaces the history and appends only the new events
    await _send(swarm, "again", "t1", resume_from="user_response")
    await rt.recorder.flush()
    histories = await store.load_histories(KEY, "t1")
    assert histories["supervisor"] == rt.agent_histories["t1::supervisor"]
    assert len(await store.load_events(KEY, "t1")) == len(rt.get_events("t1"))


async def test_breakpoints_saved_then_cleared(make_swarm: MakeSwarm, store: MemoryStore) -> None:
    swarm = make_swarm(StoreSink(store, KEY))
    swarm.runtime.start()
    paused = await _send(swarm, "pause please", "t-bp")
    assert paused["message"]["subject"] == "::breakpoint_tool_call::"
    rt = swarm.runtime
    assert rt.recorder is not None
    await rt.recorder.flush()
    rows = await store.load_breakpoints(KEY, "t-bp")
    assert [r.agent for r in rows] == ["supervisor"]
    assert (await store.load_task(KEY, "t-bp")).state == "waiting_breakpoint"  # type: ignore[union-attr]

    answer = await _send(
        swarm,
        "",
        "t-bp",
        resume_from="breakpoint_tool_call",
        breakpoint_tool_call_result="Ada",
    )
    assert answer["message"]["body"] == "resumed after the breakpoint"
    await rt.recorder.flush()
    assert await store.load_breakpoints(KEY, "t-bp") == []
    assert (await store.load_task(KEY, "t-bp")).state == "completed"  # type: ignore[union-attr]


async def test_failed_write_is_reported_and_retried(
    make_swarm: MakeSwarm, store: MemoryStore
) -> None:
    sink = CutSink(StoreSink(store, KEY))
    swarm = make_swarm(sink)
    swarm.runtime.start()
    rt = swarm.runtime
    assert rt.recorder is not None
    sink.fail = OSError("disk full")
    await _send(swarm, "hello", "t1")
    assert not await rt.recorder.flush()
    assert rt.storage_error == "disk full"
    assert await store.load_events(KEY, "t1") == []
    sink.fail = None
    assert await rt.recorder.flush()
    assert rt.storage_error is None
    assert len(await store.load_events(KEY, "t1")) == len(rt.get_events("t1"))


async def test_reload_serves_resumes_and_interrupts(
    make_swarm: MakeSwarm, store: MemoryStore
) -> None:
    sink_a = CutSink(StoreSink(store, KEY))
    a = make_swarm(sink_a)
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
    sink_a.cut = True  # the process "dies": nothing more reaches the store

    b = make_swarm(StoreSink(store, KEY))
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

    # the running task is interrupted, says so, and resumes with user_response
    run = rt_b.get_task("t-run")
    assert run is not None and run.state is TaskState.INTERRUPTED
    assert run.log.all()[-1].event == "task_interrupted"
    answer = await _send(b, "finish now", "t-run", resume_from="user_response")
    assert answer["message"]["body"] == "done: finish now"
    assert rt_b.recorder is not None
    await rt_b.recorder.flush()
    stored = await store.load_events(KEY, "t-run")
    assert [e.seq for e in stored] == [e.seq for e in run.log.all()]
    assert (await store.load_task(KEY, "t-run")).state == "completed"  # type: ignore[union-attr]


class _BatchLog:
    """Records every batch it stores."""

    def __init__(self, inner: StoreSink) -> None:
        self.inner = inner
        self.batches: list[WriteBatch] = []

    async def write(self, batch: WriteBatch) -> None:
        self.batches.append(batch)
        await self.inner.write(batch)

    async def load(self, keep_finished: int | None = None) -> list[StoredTask]:
        return await self.inner.load(keep_finished)


class _GatedSink(_BatchLog):
    """Holds every write until ``gate`` opens; ``sizes``: how many tasks each carried."""

    def __init__(self, inner: StoreSink) -> None:
        super().__init__(inner)
        self.gate = asyncio.Event()

    async def write(self, batch: WriteBatch) -> None:
        await self.gate.wait()
        await super().write(batch)

    @property
    def sizes(self) -> list[int]:
        return [len({t.task_id for t in b.tasks} | set(b.events)) for b in self.batches]


async def test_a_backlog_is_written_in_batches_of_bounded_size(
    make_swarm: MakeSwarm, store: MemoryStore
) -> None:
    sink = _GatedSink(StoreSink(store, KEY))
    swarm = make_swarm(sink)
    rt = swarm.runtime
    assert rt.recorder is not None
    rt.recorder.max_batch_tasks = 2
    # a backlog goes out batch after batch, never waiting for the next timer (an hour)
    rt.recorder.interval = 3600
    rt.start()
    for i in range(6):  # the first write is held: the others pile up behind it
        await _send(swarm, f"q{i}", f"b{i}")
    sink.gate.set()
    for i in range(6):
        await eventually(lambda i=i: _completed(store, f"b{i}"), what=f"task b{i} stored")
    assert max(sink.sizes) == 2  # the backlog went out two tasks at a time
    for i in range(6):
        events = await store.load_events(KEY, f"b{i}")
        assert [e.seq for e in events] == list(range(1, len(rt.get_events(f"b{i}")) + 1))


async def test_a_task_after_a_backlog_is_stored(make_swarm: MakeSwarm, store: MemoryStore) -> None:
    """An idle recorder sleeps until the next note, which only the count of pending notes
    going from 0 to 1 announces: after a backlog went out in part-batches that count must
    be exact, or the recorder would sleep through later tasks (and, 1,000 of them later,
    hold every submission)."""
    sink = _GatedSink(StoreSink(store, KEY))
    swarm = make_swarm(sink)
    rt = swarm.runtime
    assert rt.recorder is not None
    rt.recorder.max_batch_tasks = 2
    rt.recorder.min_gap = 0
    rt.start()
    for i in range(6):
        await _send(swarm, f"q{i}", f"b{i}")
    sink.gate.set()
    for i in range(6):
        await eventually(lambda i=i: _completed(store, f"b{i}"), what=f"task b{i} stored")
    await _send(swarm, "later", "after")
    await eventually(lambda: _completed(store, "after"), what="the task after the backlog stored")


async def test_an_idle_server_stores_a_burst_before_the_gap_ends(
    make_swarm: MakeSwarm, store: MemoryStore
) -> None:
    """After a write the recorder waits ``min_gap`` for more notes, so that under load one
    write carries many tasks; once ``quiet`` passes with no new note (the server went
    idle), what waits is written then. Here the gap is an hour: the second task is stored
    only if the quiet window ends it."""
    swarm = make_swarm(StoreSink(store, KEY))
    rt = swarm.runtime
    assert rt.recorder is not None
    rt.recorder.min_gap = 3600
    rt.recorder.quiet = 0.01
    rt.start()
    await _send(swarm, "first", "g1")
    await eventually(lambda: _completed(store, "g1"), what="the first task stored")
    await _send(swarm, "second", "g2")  # noted while the recorder waits out its gap
    await eventually(lambda: _completed(store, "g2"), what="the task after the write stored")
    events = await store.load_events(KEY, "g2")
    assert [e.seq for e in events] == list(range(1, len(rt.get_events("g2")) + 1))


async def _completed(store: MemoryStore, task_id: str) -> bool:
    task = await store.load_task(KEY, task_id)
    return task is not None and task.state == "completed"


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
        {}, user_id="u1", print_llm_streams=False, store=StoreSink(store, KEY), max_finished_tasks=3
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
        interrupted = await store.load_task(KEY, "r6")
        assert interrupted is not None and interrupted.state == "interrupted"
    finally:
        await swarm.runtime.shutdown(timeout=0.5)


async def test_closing_writes_a_backlog_of_many_batches(
    make_swarm: MakeSwarm, store: MemoryStore
) -> None:
    sink = _GatedSink(StoreSink(store, KEY))
    swarm = make_swarm(sink)
    rt = swarm.runtime
    assert rt.recorder is not None
    rt.recorder.max_batch_tasks = 2
    rt.start()
    try:
        for i in range(7):  # the first write is held: the others wait behind it
            await _send(swarm, f"q{i}", f"c{i}")
        assert rt.unsaved_tasks > rt.recorder.max_batch_tasks  # more than one batch waits
    finally:
        sink.gate.set()  # (a failed check must not leave the shutdown below hanging)
    await rt.shutdown(timeout=5)  # closing writes every batch still pending, not just one
    for i in range(7):
        assert await _completed(store, f"c{i}"), f"task c{i} was lost at shutdown"
    assert rt.unsaved_tasks == 0


async def test_submissions_wait_while_the_backlog_is_full(
    make_swarm: MakeSwarm, store: MemoryStore
) -> None:
    sink = _GatedSink(StoreSink(store, KEY))
    swarm = make_swarm(sink)
    rt = swarm.runtime
    recorder = rt.recorder
    assert recorder is not None
    recorder.max_backlog = 3
    rt.start()
    try:
        for i in range(10):  # the first write is held: the backlog fills up behind it
            if recorder.backlog >= recorder.max_backlog:
                break
            await _send(swarm, f"q{i}", f"w{i}")
        assert recorder.backlog >= recorder.max_backlog
        waiting = asyncio.create_task(_send(swarm, "late", "w-late"))
        for _ in range(20):  # let the loop run: the submission must stay parked
            await asyncio.sleep(0)
        assert not waiting.done()
        assert rt.get_task("w-late") is None  # nothing was queued for it yet
    finally:
        sink.gate.set()  # (a failed check must not leave the teardown hanging)
    answer = await asyncio.wait_for(waiting, 10)
    assert answer["message"]["body"] == "done: late"
    await recorder.flush()
    assert await _completed(store, "w-late")


async def test_submissions_do_not_wait_for_a_failing_store(
    make_swarm: MakeSwarm, store: MemoryStore
) -> None:
    sink = CutSink(StoreSink(store, KEY))
    sink.fail = OSError("disk full")
    swarm = make_swarm(sink)
    rt = swarm.runtime
    recorder = rt.recorder
    assert recorder is not None
    recorder.max_backlog = 2
    rt.start()
    for i in range(2):
        await _send(swarm, f"q{i}", f"o{i}")
    assert not await recorder.flush()
    assert recorder.backlog >= recorder.max_backlog and recorder.error is not None
    # an outage must not stop the server: new tasks run (and wait to be stored)
    answer = await asyncio.wait_for(_send(swarm, "still", "o-late"), 10)
    assert answer["message"]["body"] == "done: still"
    sink.fail = None
    assert await recorder.flush()
    assert await _completed(store, "o-late")


async def test_breakpoints_and_stash_are_written_only_when_there_is_something_to_change(
    make_swarm: MakeSwarm, store: MemoryStore
) -> None:
    sink = _BatchLog(StoreSink(store, KEY))
    swarm = make_swarm(sink)
    rt = swarm.runtime
    assert rt.recorder is not None
    rt.start()
    await _send(swarm, "hello", "plain")
    await rt.recorder.flush()
    # a task that never paused: no statement for its (empty) breakpoints or stash
    assert all("plain" not in b.breakpoints and "plain" not in b.stashes for b in sink.batches)
    await _send(swarm, "pause please", "p1")
    await rt.recorder.flush()
    assert [r.agent for r in await store.load_breakpoints(KEY, "p1")] == ["supervisor"]
    await swarm.runtime.shutdown()

    # after a restart the stored breakpoints are known, so resuming clears them
    again = make_swarm(_BatchLog(StoreSink(store, KEY)))
    assert await again.runtime.restore() >= 1
    again.runtime.start()
    answer = await _send(
        again, "", "p1", resume_from="breakpoint_tool_call", breakpoint_tool_call_result="Ada"
    )
    assert answer["message"]["body"] == "resumed after the breakpoint"
    assert again.runtime.recorder is not None
    await again.runtime.recorder.flush()
    assert await store.load_breakpoints(KEY, "p1") == []
    assert (await store.load_task(KEY, "p1")).state == "completed"  # type: ignore[union-attr]
    await again.runtime.shutdown()
