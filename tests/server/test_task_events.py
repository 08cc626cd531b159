"""``GET /tasks/{id}/events``: replay after ``Last-Event-ID`` or ``?after=``, then live; a
client that reconnects mid-task sees every event exactly once (CONTRACT decision 3); several
readers each get every event, pings keep a silent one open, and a reader that leaves costs
nothing afterwards."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import pytest
import pytest_asyncio
from tests.server.conftest import (
    Frame,
    Running,
    Start,
    frames,
    gated_swarm,
    read_stream,
    shared,
    within,
)

from mail.core.events import EventLog

pytestmark = pytest.mark.timeout(30)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def finished(shared_offline: Running) -> tuple[Running, dict[str, object]]:
    """The module's server with a finished task of user u1 (asked through /message, as JSON).
    The tests using it only read."""
    response = await (await shared_offline.user()).post(
        "/message", json={"body": "what is 6*7?", "task_id": "t-done", "show_events": True}
    )
    assert response.status_code == 200
    return shared_offline, response.json()


async def replay(server: Running, task_id: str, **kwargs: object) -> list[Frame]:
    user = await server.user()
    async with user.stream("GET", f"/tasks/{task_id}/events", **kwargs) as response:  # type: ignore[arg-type]
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
        return await read_stream(response)


@shared
async def test_replay_everything(finished: tuple[Running, dict[str, object]]) -> None:
    server, answer = finished
    events = answer["events"]
    assert isinstance(events, list)

    stream = await replay(server, "t-done")

    # every stored event but the stored task_complete, which the final event replaces
    *shown, end = events
    assert end["event"] == "task_complete"
    assert [f.id for f in stream[:-1]] == [int(e["id"]) for e in shown]
    assert [f.event for f in stream[:-1]] == [e["event"] for e in shown]
    final = stream[-1]
    assert (final.event, final.id) == ("task_complete", None)
    assert final.data == {
        "timestamp": end["data"]["timestamp"],
        "task_id": "t-done",
        "response": answer["response"],
        "seq": int(end["id"]),
        "status": "completed",
    }


@shared
async def test_closing_event_of_a_replay_has_the_stored_time_and_seq(
    finished: tuple[Running, dict[str, object]],
) -> None:
    # regression: the closing event of a finished task's events had the time of the
    # request and no sequence number, so a viewer showed the end after the task ended
    server, answer = finished
    events = answer["events"]
    assert isinstance(events, list)
    stored_end = events[-1]

    first, second = await replay(server, "t-done"), await replay(server, "t-done")

    assert first[-1].data["timestamp"] == stored_end["data"]["timestamp"]
    assert second[-1].data["timestamp"] == stored_end["data"]["timestamp"]
    assert first[-1].data["seq"] == second[-1].data["seq"] == int(stored_end["id"])
    assert first[-1].id is None  # still the stream's end: clients know it by no `id`


@shared
async def test_replay_after_last_event_id(finished: tuple[Running, dict[str, object]]) -> None:
    server, answer = finished
    events = answer["events"]
    assert isinstance(events, list)

    stream = await replay(server, "t-done", headers={"Last-Event-ID": "5"})

    # up to the stored task_complete (the last event), which the final event replaces
    assert [f.id for f in stream[:-1]] == list(range(6, len(events)))
    assert [f.data for f in stream[:-1]] == [e["data"] for e in events[5:-1]]
    assert stream[-1].event == "task_complete"
    assert stream[-1].id is None


@shared
async def test_replay_after_query_parameter(finished: tuple[Running, dict[str, object]]) -> None:
    server, answer = finished
    events = answer["events"]
    assert isinstance(events, list)

    stream = await replay(server, "t-done", params={"after": 10})

    assert [f.id for f in stream[:-1]] == list(range(11, len(events)))
    assert stream[-1].event == "task_complete"


@shared
async def test_replay_after_the_last_event_gives_only_the_end(
    finished: tuple[Running, dict[str, object]],
) -> None:
    server, answer = finished
    events = answer["events"]
    assert isinstance(events, list)

    stream = await replay(server, "t-done", headers={"Last-Event-ID": str(len(events))})

    assert [f.event for f in stream] == ["task_complete"]


@shared
async def test_non_numeric_last_event_id_is_400(
    finished: tuple[Running, dict[str, object]],
) -> None:
    server, _ = finished

    response = await (await server.user()).get(
        "/tasks/t-done/events", headers={"Last-Event-ID": "abc"}
    )

    assert response.status_code == 400
    assert response.json() == {"detail": "Last-Event-ID must be a sequence number, got 'abc'"}


@shared
async def test_negative_after_is_400(finished: tuple[Running, dict[str, object]]) -> None:
    server, _ = finished

    response = await (await server.user()).get("/tasks/t-done/events", params={"after": -1})

    assert response.status_code == 400


@shared
async def test_unknown_and_foreign_tasks_are_404(
    finished: tuple[Running, dict[str, object]],
) -> None:
    server, _ = finished

    unknown = await (await server.user()).get("/tasks/nope/events")
    foreign = await (await server.user2()).get("/tasks/t-done/events")
    admin = await (await server.admin()).get("/tasks/t-done/events")

    assert (unknown.status_code, unknown.json()) == (404, {"detail": "task 'nope' not found"})
    assert (foreign.status_code, foreign.json()) == (404, {"detail": "task 't-done' not found"})
    assert (admin.status_code, admin.json()) == (404, {"detail": "task 't-done' not found"})


@shared
async def test_events_need_an_admin_or_user_token(
    finished: tuple[Running, dict[str, object]],
) -> None:
    server, _ = finished

    anon = await (await server.anon()).get("/tasks/t-done/events")
    agent = await (await server.agent()).get("/tasks/t-done/events")

    assert (anon.status_code, anon.json()) == (401, {"detail": "no API key provided"})
    assert (agent.status_code, agent.json()) == (
        401,
        {"detail": "invalid role: this route needs admin or user"},
    )


async def test_reconnect_with_last_event_id_sees_every_event_once(start: Start) -> None:
    gate = asyncio.Event()
    template, _worker = gated_swarm(gate)
    server = await start(template=template)
    user = await server.user()

    before: list[Frame] = []
    async with user.stream(
        "POST", "/message", json={"body": "job", "stream": True, "task_id": "t-re"}
    ) as response:
        async for frame in frames(response):
            before.append(frame)
            if len(before) == 3:
                break
    # mid-task: nothing can end it before the worker's gate opens
    assert (await user.get("/task", params={"task_id": "t-re"})).json()["is_running"] is True
    last_seen = before[-1].id
    assert last_seen == 3

    async with user.stream(
        "GET", "/tasks/t-re/events", headers={"Last-Event-ID": str(last_seen)}
    ) as response:
        assert response.status_code == 200
        gate.set()
        after = await read_stream(response)

    stored = before + after[:-1]
    ids = [f.id for f in stored]
    assert ids == list(range(1, len(stored) + 1)), "no duplicates, no gaps"
    assert {f.data["task_id"] for f in before + after} == {"t-re"}
    assert [f.event for f in stored] == [
        "new_message",  # user -> supervisor
        "tool_call",
        "new_message",  # supervisor -> worker
        "tool_call",  # worker: send_response
        "new_message",  # worker -> supervisor
        "tool_call",  # supervisor: task_complete
        "task_complete_call",
        "new_message",  # ::task_complete::
    ]
    assert after[-1].event == "task_complete"
    assert after[-1].data["response"] == "done: worked"
    # the whole log, read afterwards, is exactly the union and the turn's stored
    # task_complete, which the streams' final event stood for
    full = (await user.get("/task", params={"task_id": "t-re"})).json()["events"]
    assert [int(e["id"]) for e in full] == [*ids, len(ids) + 1]
    assert full[-1]["event"] == "task_complete"


# --- many readers, heartbeats, leavers -----------------------------------------------------------


async def _open_paused_task(
    server: Running, task_id: str, stack: AsyncExitStack
) -> tuple[EventLog, AsyncIterator[Frame]]:
    """Start the gated swarm's task ``task_id`` with a streamed /message (kept open on
    ``stack``); once the task waits on the worker's gate (3 events), return its log and the
    rest of that stream."""
    user = await server.user()
    body = {"body": "job", "stream": True, "task_id": task_id}
    response = await stack.enter_async_context(user.stream("POST", "/message", json=body))
    stream = frames(response)
    for _ in range(3):
        await within(anext(stream))
    swarm = server.state.swarms.lookup("user", "u1")
    assert swarm is not None
    task = swarm.get_task_by_id(task_id)
    assert task is not None
    return task.log, stream


async def _read_all(stream: AsyncIterator[Frame]) -> list[Frame]:
    return [f async for f in stream]


async def test_several_readers_each_get_every_event_and_a_leaver_leaves_nothing(
    start: Start,
) -> None:
    gate = asyncio.Event()
    template, _worker = gated_swarm(gate)
    server = await start(template=template)
    user = await server.user()
    async with AsyncExitStack() as stack:
        log, opener = await _open_paused_task(server, "t-readers", stack)
        readers: list[tuple[list[Frame], AsyncIterator[Frame]]] = []
        for _ in range(3):
            response = await stack.enter_async_context(
                user.stream("GET", "/tasks/t-readers/events")
            )
            assert response.status_code == 200
            stream = frames(response)
            readers.append(([await within(anext(stream)) for _ in range(3)], stream))
        assert log.followers == 4  # the /message stream and three readers

        before = asyncio.all_tasks()
        async with user.stream("GET", "/tasks/t-readers/events") as leaving:
            assert (await within(anext(frames(leaving)))).id == 1
            serving = asyncio.all_tasks() - before  # the server's tasks for this request
            assert log.followers == 5
        # hung up mid-task: every task serving it ends, and the log loses that follower only
        assert serving
        await within(asyncio.wait(serving))
        assert log.followers == 4

        gate.set()
        streams = [seen + await within(_read_all(rest)) for seen, rest in readers]
        opener_rest = await within(_read_all(opener))

    stored = (await user.get("/task", params={"task_id": "t-readers"})).json()["events"]
    # streams show every stored event but the turn's stored task_complete (their final)
    assert stored[-1]["event"] == "task_complete"
    expected = [(int(e["id"]), e["event"]) for e in stored[:-1]]
    for stream in streams:
        assert [(f.id, f.event) for f in stream[:-1]] == expected
        assert (stream[-1].event, stream[-1].data["response"]) == ("task_complete", "done: worked")
    assert [f.id for f in opener_rest[:-1]] == [i for i, _ in expected[3:]]
    assert log.followers == 0


async def test_a_silent_reader_gets_pings_without_id(start: Start) -> None:
    gate = asyncio.Event()
    template, _worker = gated_swarm(gate)
    server = await start(template=template, ping_interval=0.05)
    user = await server.user()
    async with AsyncExitStack() as stack:
        _, opener = await _open_paused_task(server, "t-quiet", stack)
        response = await stack.enter_async_context(
            user.stream("GET", "/tasks/t-quiet/events", params={"after": 3})
        )
        stream = frames(response)
        ping = await within(anext(stream))  # nothing to replay after 3: silence, then a ping
        gate.set()
        rest = await within(_read_all(stream))
        await within(_read_all(opener))

    assert (ping.event, ping.id) == ("ping", None)
    assert ping.data == {"timestamp": ping.data["timestamp"], "task_id": "t-quiet"}
    assert b"id:" not in ping.raw
    stored = [f for f in rest if f.event != "ping"]
    assert stored[0].id == 4
    assert stored[-1].event == "task_complete"
