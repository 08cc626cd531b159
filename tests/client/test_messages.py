"""MAILClient against a real server: messages, streams, tasks and task events."""

from __future__ import annotations

import json

import pytest
from tests.client.conftest import Connect, Gated

from mail.client import EventStream, MAILClient, MAILClientError, ServerSentEvent

pytestmark = pytest.mark.timeout(30)


async def collect(stream: EventStream) -> list[ServerSentEvent]:
    async with stream:
        return [event async for event in stream]


def stored_ids(events: list[ServerSentEvent]) -> list[int]:
    return [int(e.id) for e in events if e.id is not None]


# --- POST /message ---------------------------------------------------------------------------


async def test_post_message(user: MAILClient) -> None:
    result = await user.post_message("what is 6*7?")

    assert set(result) == {"response", "events", "task_id", "status"}
    assert result["response"] == "6*7 = 42"
    assert result["events"] is None
    assert result["status"] == "completed"


async def test_post_message_with_events(user: MAILClient) -> None:
    result = await user.post_message("what is 6*7?", show_events=True, task_id="t-events")

    assert result["task_id"] == "t-events"
    events = result["events"]
    assert events is not None
    assert [e["id"] for e in events] == [str(i) for i in range(1, len(events) + 1)]
    first = events[0]
    assert first["event"] == "new_message"
    assert set(first["data"]) == {"timestamp", "description", "task_id", "extra_data"}
    assert first["data"]["task_id"] == "t-events"


async def test_post_message_follow_up(user: MAILClient) -> None:
    first = await user.post_message("what is 6*7?", task_id="t-follow")
    second = await user.post_message(
        "weather in Rome?", task_id="t-follow", resume_from="user_response"
    )

    assert first["response"] == "6*7 = 42"
    assert second["response"].startswith("Forecast for Rome")
    assert second["task_id"] == "t-follow"


async def test_post_message_kwargs_reach_the_server(user: MAILClient) -> None:
    with pytest.raises(MAILClientError) as caught:
        await user.post_message("what is 6*7?", max_steps=0)

    assert caught.value.status == 400
    assert "max_steps" in caught.value.detail


async def test_post_message_bad_msg_type_is_400(user: MAILClient) -> None:
    with pytest.raises(MAILClientError) as caught:
        await user.post_message("hi", msg_type="bogus")

    assert (caught.value.status, caught.value.detail) == (400, "invalid message type: bogus")


async def test_post_message_empty_body_is_400(user: MAILClient) -> None:
    with pytest.raises(MAILClientError) as caught:
        await user.post_message("")

    assert (caught.value.status, caught.value.detail) == (400, "no message provided")


async def test_continuing_an_unknown_task_is_404(user: MAILClient) -> None:
    with pytest.raises(MAILClientError) as caught:
        await user.post_message("more", task_id="nope", resume_from="user_response")

    assert (caught.value.status, caught.value.detail) == (404, "task 'nope' not found")


async def test_post_message_bad_key_is_401(offline: str, connect: Connect) -> None:
    with pytest.raises(MAILClientError) as caught:
        await connect(offline, "wrong-key").post_message("hi")

    assert (caught.value.status, caught.value.detail) == (401, "invalid API key")
    assert caught.value.__cause__ is None  # an answer, not a transport failure


async def test_post_message_timeout(gated: Gated, connect: Connect) -> None:
    client = connect(gated.url, timeout=0.5)

    with pytest.raises(MAILClientError) as caught:
        await client.post_message("job")

    assert caught.value.status is None
    assert caught.value.detail == f"cannot reach {gated.url}: no answer within 0.5 s"
    assert isinstance(caught.value.__cause__, TimeoutError)


# --- POST /message, streaming ----------------------------------------------------------------


async def test_post_message_stream(user: MAILClient) -> None:
    stream = await user.post_message_stream("what is 6*7?")
    events = await collect(stream)

    final = events[-1]
    assert (final.event, final.id) == ("task_complete", None)
    assert final.json() == {
        "timestamp": final.json()["timestamp"],
        "task_id": stream.task_id,
        "response": "6*7 = 42",
        "seq": final.json()["seq"],
        "status": "completed",
    }
    assert final.json()["seq"] == len(events)  # the stored task_complete it stands for
    assert stream.final == final
    assert stream.reconnects == 0
    ids = stored_ids(events)
    assert ids == list(range(1, len(events)))
    assert stream.last_event_id == str(ids[-1])
    assert {e.json()["task_id"] for e in events} == {stream.task_id}
    # the stream is the task's log, its stored task_complete replaced by the final event
    task = await user.get_task(str(stream.task_id))
    *shown, end = task["events"]
    assert end["event"] == "task_complete"
    assert [e["id"] for e in shown] == [e.id for e in events[:-1]]


async def test_stream_task_id_given_or_generated(user: MAILClient) -> None:
    given = await user.post_message_stream("what is 6*7?", task_id="t-given")
    generated = await user.post_message_stream("what is 6*7?")
    unresumable = await user.post_message_stream("what is 6*7?", resume=False)

    assert given.task_id == "t-given"
    # drawn by the client (its retries send it again), with or without resume
    assert generated.task_id is not None
    assert unresumable.task_id is not None
    assert generated.task_id != unresumable.task_id
    for stream in (given, generated, unresumable):
        events = await collect(stream)
        assert events[-1].event == "task_complete"
        assert events[-1].json()["task_id"] == stream.task_id
    assert (await collect(given))[-1:] == []  # a finished stream stays finished


async def test_stream_of_a_follow_up_has_only_its_own_events(user: MAILClient) -> None:
    first = await user.post_message("what is 6*7?", task_id="t-s2", show_events=True)
    stream = await user.post_message_stream(
        "weather in Rome?", task_id="t-s2", resume_from="user_response"
    )
    events = await collect(stream)

    assert first["events"] is not None
    assert stored_ids(events)[0] == len(first["events"]) + 1
    assert events[-1].json()["response"].startswith("Forecast for Rome")


async def test_stream_errors_are_raised_before_iterating(user: MAILClient) -> None:
    with pytest.raises(MAILClientError) as bad_type:
        await user.post_message_stream("hi", msg_type="bogus")
    with pytest.raises(MAILClientError) as unknown:
        await user.post_message_stream("more", task_id="nope", resume_from="user_response")
    await user.post_message("what is 6*7?", task_id="t-dup")
    with pytest.raises(MAILClientError) as duplicate:
        await user.post_message_stream("again", task_id="t-dup")

    assert bad_type.value.status == 400
    assert unknown.value.status == 404
    assert duplicate.value.status == 409


async def test_stream_with_bad_key_is_401(offline: str, connect: Connect) -> None:
    with pytest.raises(MAILClientError) as caught:
        await connect(offline, "wrong-key").post_message_stream("hi")

    assert caught.value.status == 401


async def test_stream_events_arrive_while_the_task_runs(gated: Gated, connect: Connect) -> None:
    client = connect(gated.url)
    seen: list[str] = []

    async with await client.post_message_stream("job", task_id="t-live") as stream:
        async for event in stream:
            seen.append(event.event)
            if len(seen) == 3:
                # the worker is waiting for the gate: these came before the task ended
                assert gated.worker.running == 1
                gated.gate.set()

    assert seen[-1] == "task_complete"
    assert stream.final is not None
    assert stream.final.json()["response"] == "done: worked"


async def test_closing_a_stream_early_closes_the_connection(gated: Gated, connect: Connect) -> None:
    client = connect(gated.url)
    stream = await client.post_message_stream("job", task_id="t-early")

    first = await anext(stream)
    await stream.aclose()
    await stream.aclose()

    assert first.event == "new_message"
    with pytest.raises(StopAsyncIteration):
        await anext(stream)
    assert stream.final is None


async def test_stream_read_timeout_without_resume(gated: Gated, connect: Connect) -> None:
    client = connect(gated.url, timeout=0.5)
    stream = await client.post_message_stream("job", resume=False)
    events: list[ServerSentEvent] = []

    with pytest.raises(MAILClientError) as caught:
        async for event in stream:
            events.append(event)

    assert [e.event for e in events] == ["new_message", "tool_call", "new_message"]
    assert caught.value.status is None
    assert caught.value.detail == f"cannot reach {gated.url}: no answer within 0.5 s"
    assert isinstance(caught.value.__cause__, TimeoutError)


# --- tasks -------------------------------------------------------------------------------------

TASK_KEYS = {
    "task_id",
    "task_owner",
    "task_contributors",
    "start_time",
    "updated_at",
    "events",
    "is_running",
    "state",
    "stored",
    "task_message_queue",
    "remote_swarms",
    "completed",
    "title",
}


async def test_get_tasks_and_get_task(user: MAILClient) -> None:
    assert await user.get_tasks() == {}
    answer = await user.post_message("what is 6*7?", task_id="t-1", show_events=True)
    await user.post_message("what is 2+3?", task_id="t-2")

    tasks = await user.get_tasks()
    task = await user.get_task("t-1")

    assert sorted(tasks) == ["t-1", "t-2"]
    assert tasks["t-1"] == task
    assert set(task) == TASK_KEYS
    assert (task["task_id"], task["is_running"], task["completed"]) == ("t-1", False, True)
    assert task["state"] == "completed"
    assert answer["events"] is not None
    assert [e["id"] for e in task["events"]] == [e["id"] for e in answer["events"]]
    stored = task["events"][0]
    assert stored["event"] == "new_message"
    assert json.loads(stored["data"]) == answer["events"][0]["data"]


async def test_get_task_unknown_is_404(user: MAILClient) -> None:
    with pytest.raises(MAILClientError) as caught:
        await user.get_task("nope")

    assert (caught.value.status, caught.value.detail) == (404, "task 'nope' not found")


async def test_another_callers_task_is_404(offline: str, connect: Connect) -> None:
    owner = connect(offline)
    await owner.post_message("what is 6*7?", task_id="t-mine")

    with pytest.raises(MAILClientError) as caught:
        await connect(offline, "user2-key").get_task("t-mine")

    assert caught.value.status == 404


async def test_task_id_is_sent_as_a_query_parameter(user: MAILClient) -> None:
    odd = "t with spaces&?=#%é"
    await user.post_message("what is 6*7?", task_id=odd)

    assert (await user.get_task(odd))["task_id"] == odd
    events = await collect(await user.task_events(odd))
    assert events[-1].json()["task_id"] == odd


# --- GET /tasks/{task_id}/events ---------------------------------------------------------------


async def test_task_events_replays_a_finished_task(user: MAILClient) -> None:
    answer = await user.post_message("what is 6*7?", task_id="t-r", show_events=True)
    assert answer["events"] is not None
    count = len(answer["events"])

    everything = await collect(await user.task_events("t-r"))
    after = await collect(await user.task_events("t-r", after=5))
    resumed = await collect(await user.task_events("t-r", last_event_id="10"))
    nothing_left = await collect(await user.task_events("t-r", after=count))

    # the stored task_complete (the last event, ``count``) is replaced by the final event
    assert answer["events"][-1]["event"] == "task_complete"
    assert stored_ids(everything) == list(range(1, count))
    assert [json.loads(e.data) for e in everything[:-1]] == [
        e["data"] for e in answer["events"][:-1]
    ]
    assert stored_ids(after) == list(range(6, count))
    assert stored_ids(resumed) == list(range(11, count))
    assert [e.event for e in nothing_left] == ["task_complete"]
    for events in (everything, after, resumed, nothing_left):
        assert events[-1].json()["response"] == "6*7 = 42"


async def test_task_events_follows_a_running_task(gated: Gated, connect: Connect) -> None:
    client = connect(gated.url)
    stream = await client.post_message_stream("job", task_id="t-follow")
    head = [await anext(stream) for _ in range(3)]
    await stream.aclose()

    follower = await client.task_events("t-follow", last_event_id=head[-1].id)
    gated.gate.set()
    tail = await collect(follower)

    assert stored_ids(head + tail) == list(range(1, len(head) + len(tail)))
    assert tail[-1].json()["response"] == "done: worked"


async def test_task_events_errors(user: MAILClient) -> None:
    await user.post_message("what is 6*7?", task_id="t-e")

    with pytest.raises(MAILClientError) as unknown:
        await user.task_events("nope")
    with pytest.raises(MAILClientError) as bad_id:
        await user.task_events("t-e", last_event_id="abc")
    with pytest.raises(MAILClientError) as negative:
        await user.task_events("t-e", after=-1)

    assert (unknown.value.status, unknown.value.detail) == (404, "task 'nope' not found")
    assert bad_id.value.status == 400
    assert bad_id.value.detail == "Last-Event-ID must be a sequence number, got 'abc'"
    assert negative.value.status == 400
