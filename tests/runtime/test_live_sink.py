"""The live sink (``emit_delta``, ``report_usage``) and the event log's ephemeral channel."""

from __future__ import annotations

import asyncio

from mail.core import emit_delta, report_usage
from mail.core._live import live_turn
from mail.core.events import EventLog, EventName, MAILEvent
from mail.core.tasks import MAILTask


def delta(task_id: str, text: str) -> MAILEvent:
    return MAILEvent(EventName.TOKEN_DELTA, task_id, payload={"delta": text})


async def test_outside_a_turn_both_do_nothing() -> None:
    task = MAILTask("t", "user:u", [])

    emit_delta("text", "hi")
    report_usage({"input_tokens": 3})

    assert task.usage is None
    assert len(task.log) == 0


async def test_deltas_reach_live_readers_in_place_and_are_not_stored() -> None:
    task = MAILTask("t", "user:u", [])
    task.log.emit(EventName.NEW_MESSAGE, "first")
    follow = task.log.follow(0, heartbeat=5.0)
    first = await anext(follow)  # the reader is live from here

    with live_turn(task, "agent-1"):
        emit_delta("answer", "Hel", call_id="c1")
        task.log.emit(EventName.TOOL_CALL, "second")
        emit_delta("answer", "lo", call_id="c1")
        emit_delta("bogus", "ignored")  # type: ignore[arg-type]
        emit_delta("text", "")
    rest = [await asyncio.wait_for(anext(follow), 5) for _ in range(3)]
    await follow.aclose()

    assert first.event == EventName.NEW_MESSAGE
    assert [(e.event, e.seq) for e in rest] == [
        (EventName.TOKEN_DELTA, None),
        (EventName.TOOL_CALL, 2),
        (EventName.TOKEN_DELTA, None),
    ]
    assert rest[0].data() == {
        "timestamp": rest[0].timestamp,
        "task_id": "t",
        "agent": "agent-1",
        "kind": "answer",
        "delta": "Hel",
        "call_id": "c1",
    }
    assert [e.event for e in task.log.all()] == [EventName.NEW_MESSAGE, EventName.TOOL_CALL]
    assert task.log.live_readers == []


async def test_a_waiting_reader_is_woken_by_a_delta_without_a_ping() -> None:
    log = EventLog("t")
    log.emit(EventName.NEW_MESSAGE, "m")
    follow = log.follow(0, heartbeat=30.0)
    await anext(follow)
    # runs once the reader below is suspended in its wait for a new event
    asyncio.get_running_loop().call_soon(log.publish, delta("t", "x"))

    got = await asyncio.wait_for(anext(follow), 5)
    await follow.aclose()

    assert (got.event, got.payload) == (EventName.TOKEN_DELTA, {"delta": "x"})


async def test_readers_that_stop_leave_the_others_live() -> None:
    log = EventLog("t")
    log.emit(EventName.NEW_MESSAGE, "m")
    one, two = log.follow(0), log.follow(0)
    await anext(one)
    await anext(two)

    await one.aclose()
    log.publish(delta("t", "still"))
    got = await asyncio.wait_for(anext(two), 5)
    await two.aclose()

    assert got.payload == {"delta": "still"}


async def test_not_live_readers_and_late_readers_miss_deltas() -> None:
    log = EventLog("t")
    log.emit(EventName.NEW_MESSAGE, "m")
    stored_only = log.follow(0, live=False, heartbeat=0.05)
    await anext(stored_only)

    log.publish(delta("t", "gone"))
    after = await anext(stored_only)
    await stored_only.aclose()
    late = [e async for e in log.follow(0, until=lambda: True)]

    assert after.event == EventName.PING
    assert [e.event for e in late] == [EventName.NEW_MESSAGE]


async def test_usage_is_summed_over_calls() -> None:
    task = MAILTask("t", "user:u", [])

    with live_turn(task, "a"):
        report_usage({"input_tokens": 10, "output_tokens": 5, "other": 9})
        report_usage({"input_tokens": 1, "reasoning_tokens": 2, "cached_input_tokens": True})

    assert task.usage == {
        "input_tokens": 11,
        "output_tokens": 5,
        "reasoning_tokens": 2,
        "cached_input_tokens": 0,
    }
