"""EventLog: sequence numbers and several followers reading from their own cursors."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from mail.core.agents import AgentCore
from mail.core.events import EventLog, EventName, MAILEvent
from mail.testing import ScriptedAgent, tc


class Follower:
    """Reads ``log.follow(after)`` in a task, reporting each event as it arrives."""

    def __init__(self, log: EventLog, after: int, stop_at: int) -> None:
        self.log = log
        self.after = after
        self.stop_at = stop_at
        self.seen: list[MAILEvent] = []
        self.progress: asyncio.Queue[int] = asyncio.Queue()
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        async with contextlib.aclosing(self.log.follow(self.after)) as events:
            async for event in events:
                self.seen.append(event)
                assert event.seq is not None
                self.progress.put_nowait(event.seq)
                if event.seq >= self.stop_at:
                    return

    async def reached(self, seq: int) -> None:
        while True:
            if await asyncio.wait_for(self.progress.get(), 5) >= seq:
                return


async def test_followers_at_different_cursors_each_get_exactly_their_events() -> None:
    log = EventLog("t-log")
    for i in range(1, 4):
        log.emit(EventName.TOOL_CALL, f"event {i}")
    assert log.last_seq == 3

    early = Follower(log, after=0, stop_at=6)
    late = Follower(log, after=2, stop_at=6)
    await early.reached(3)
    await late.reached(3)

    # both now wait for new events: append one, then two at once
    log.emit(EventName.TOOL_CALL, "event 4")
    await early.reached(4)
    await late.reached(4)
    log.emit(EventName.TOOL_CALL, "event 5")
    log.emit(EventName.TOOL_CALL, "event 6")
    await asyncio.wait_for(asyncio.gather(early.task, late.task), 5)

    assert [e.seq for e in early.seen] == [1, 2, 3, 4, 5, 6]
    assert [e.seq for e in late.seen] == [3, 4, 5, 6]
    assert [e.description for e in late.seen] == [f"event {i}" for i in range(3, 7)]
    assert early.seen[2:] == late.seen  # the same event objects, in the same order
    assert [e.seq for e in log.since(4)] == [5, 6]
    assert log.since(6) == []


async def test_follow_from_the_end_waits_and_pings() -> None:
    log = EventLog("t-ping")
    log.emit(EventName.TOOL_CALL, "old")
    seen: list[MAILEvent] = []

    async def read() -> None:
        async with contextlib.aclosing(log.follow(log.last_seq, heartbeat=0.01)) as events:
            async for event in events:
                seen.append(event)
                if event.event == EventName.PING:
                    log.emit(EventName.TOOL_CALL, "new")
                elif event.description == "new":
                    return

    await asyncio.wait_for(read(), 5)
    assert seen[0].event == EventName.PING
    assert seen[0].seq is None
    assert seen[0].data() == {"timestamp": seen[0].timestamp, "task_id": "t-ping"}
    assert [e.description for e in seen if e.event != EventName.PING] == ["new"]
    assert seen[-1].seq == 2


async def test_followers_of_a_running_task_see_the_same_stream(
    make_runtime: Any, user_message: Any, probe: Any
) -> None:
    gate = asyncio.Event()
    worker = probe(
        ScriptedAgent(
            rule=lambda _: tc("send_response", target="supervisor", subject="re", body="done"),
            gate=gate,
        )
    )
    sup = ScriptedAgent(
        rule=lambda inc: (
            tc("send_request", target="worker", subject="job", body="go")
            if inc.sender_type == "user"
            else tc("task_complete", finish_message="finished")
        )
    )
    rt = make_runtime(
        {
            "supervisor": AgentCore(
                sup, ["worker"], enable_entrypoint=True, can_complete_tasks=True
            ),
            "worker": AgentCore(worker, ["supervisor"]),
        }
    )
    task = await rt.submit(user_message("hi", "t-follow"))
    await worker.next_entry()
    assert task.log.last_seq == 3  # new_message, tool_call, new_message
    # six more follow once the worker is released: tool_call, new_message, tool_call,
    # task_complete_call, the synthetic new_message and the turn's stored task_complete (9)
    followers = [Follower(task.log, after=cursor, stop_at=9) for cursor in (0, 1, 3)]
    gate.set()
    final = await asyncio.wait_for(asyncio.shield(task.turn), 5)
    assert final["message"]["body"] == "finished"
    await asyncio.wait_for(asyncio.gather(*(f.task for f in followers)), 5)
    stored = rt.get_events("t-follow")
    for follower, cursor in zip(followers, (0, 1, 3), strict=True):
        assert follower.seen == stored[cursor:]
        seqs = [e.seq for e in follower.seen]
        assert seqs == list(range(cursor + 1, 10))
    assert stored[-1].event == EventName.TASK_COMPLETE


async def test_a_cancelled_reader_leaves_the_others_waiting() -> None:
    log = EventLog("t-cancel")
    first = asyncio.ensure_future(log.wait(0))
    second = asyncio.ensure_future(log.wait(0))
    await asyncio.sleep(0)  # both reach their await
    assert len(log._waiters) == 2  # white-box: one future per reader
    first.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await first
    assert len(log._waiters) == 1
    assert not second.done()
    log.emit(EventName.TOOL_CALL, "wakes the other")
    assert await asyncio.wait_for(second, 5) is True
    assert log._waiters == []


async def test_a_timed_out_wait_reports_false_and_leaves_no_waiter() -> None:
    log = EventLog("t-timeout")
    assert await log.wait(0, timeout=0.01) is False
    assert log._waiters == []
    log.emit(EventName.TOOL_CALL, "now there is one")
    assert await log.wait(0, timeout=0.01) is True  # already there: no waiting


async def test_followers_counts_readers_inside_follow() -> None:
    log = EventLog("t-count")
    log.emit(EventName.TOOL_CALL, "one")
    assert log.followers == 0
    async with contextlib.aclosing(log.follow(0)) as events:
        assert (await anext(events)).description == "one"
        assert log.followers == 1
    assert log.followers == 0


async def test_follow_until_lost_the_events_appended_while_the_reader_held_one() -> None:
    """Regression: a reader that ended once ``until()`` was true dropped the events
    appended while it was handing out the previous one (a stream missed the task's end)."""
    log = EventLog("t-until")
    log.emit(EventName.NEW_MESSAGE, "one")
    done = False
    async with contextlib.aclosing(log.follow(0, until=lambda: done)) as events:
        assert (await anext(events)).description == "one"
        log.emit(EventName.TOOL_CALL, "two")
        log.emit(EventName.TASK_COMPLETE_CALL, "three")
        done = True
        assert [e.description async for e in events] == ["two", "three"]
