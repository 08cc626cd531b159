"""A stream the network cuts mid-task is resumed: each event is yielded exactly once.

The cut is made by a TCP proxy between client and server (the client only knows the
proxy's URL, so its reconnect goes through the proxy too; only the first streamed answer
is cut). The gated swarm keeps the task running while the cut happens.
"""

from __future__ import annotations

import aiohttp
import pytest
from tests.client.conftest import Connect, CuttingProxy, Echo, Gated, after_events

from mail.client import MAILClient, MAILClientError, ServerSentEvent

pytestmark = pytest.mark.timeout(30)

STORED_EVENTS = [
    "new_message",  # user -> supervisor
    "tool_call",  # send_request
    "new_message",  # supervisor -> worker (the worker then waits for the gate)
    "tool_call",  # send_response
    "new_message",  # worker -> supervisor
    "tool_call",  # task_complete
    "task_complete_call",
    "new_message",  # ::task_complete::
]


async def run_gated_task(
    client: MAILClient, gated: Gated, task_id: str, *, open_gate_at: str | None = "3"
) -> tuple[list[ServerSentEvent], int]:
    """Stream a task, opening the gate once event ``open_gate_at`` arrived (``None``: the
    gate is already open)."""
    events: list[ServerSentEvent] = []
    async with await client.post_message_stream("job", task_id=task_id) as stream:
        async for event in stream:
            events.append(event)
            if open_gate_at is not None and event.id == open_gate_at:
                assert gated.worker.running == 1  # still mid-task
                gated.gate.set()
    return events, stream.reconnects


async def assert_exactly_once(
    direct: MAILClient, task_id: str, events: list[ServerSentEvent]
) -> None:
    stored = [e for e in events if e.event != "ping"]
    assert [e.event for e in stored[:-1]] == STORED_EVENTS
    final = stored[-1]
    assert (final.event, final.id) == ("task_complete", None)
    assert final.json()["response"] == "done: worked"
    task = await direct.get_task(task_id)
    # every stored event but the turn's stored task_complete, which the final replaces
    *shown, end = task["events"]
    assert end["event"] == "task_complete"
    assert [e.id for e in stored[:-1]] == [e["id"] for e in shown]
    assert [e.data for e in stored[:-1]] == [e["data"] for e in shown]


@pytest.mark.parametrize(
    ("cut_events", "extra"),
    [(2, 10), (2, 0), (3, 0), (1, 1)],
    ids=["inside-frame-3", "before-frame-3", "after-frame-3", "inside-frame-2"],
)
async def test_cut_stream_is_resumed_exactly_once(
    gated: Gated, connect: Connect, cut_events: int, extra: int
) -> None:
    async with CuttingProxy(gated.url, after_events(cut_events, extra)) as proxy:
        client = connect(proxy.url)
        events, reconnects = await run_gated_task(client, gated, f"t-cut-{cut_events}-{extra}")

    assert proxy.cut_done
    assert reconnects == 1
    await assert_exactly_once(connect(gated.url), f"t-cut-{cut_events}-{extra}", events)


async def test_cut_after_the_task_ended_gets_only_the_final_event(
    gated: Gated, connect: Connect
) -> None:
    gated.gate.set()  # the task runs to its end at once
    async with CuttingProxy(gated.url, after_events(len(STORED_EVENTS), 5)) as proxy:
        client = connect(proxy.url)
        events, reconnects = await run_gated_task(client, gated, "t-cut-end", open_gate_at=None)

    assert reconnects == 1
    await assert_exactly_once(connect(gated.url), "t-cut-end", events)


async def test_task_events_stream_is_resumed_too(gated: Gated, connect: Connect) -> None:
    direct = connect(gated.url)
    head = await direct.post_message_stream("job", task_id="t-follow-cut")
    first = await anext(head)
    await head.aclose()

    cut = after_events(1, 4)
    async with CuttingProxy(gated.url, cut, cut_request=b"GET /tasks/") as proxy:
        client = connect(proxy.url)
        events = [first]
        async with await client.task_events("t-follow-cut", after=1) as stream:
            async for event in stream:
                events.append(event)
                if event.id == "3":
                    gated.gate.set()

    assert stream.reconnects == 1
    await assert_exactly_once(direct, "t-follow-cut", events)


async def test_without_resume_a_cut_is_an_error(gated: Gated, connect: Connect) -> None:
    async with CuttingProxy(gated.url, after_events(2, 10)) as proxy:
        client = connect(proxy.url)
        stream = await client.post_message_stream("job", task_id="t-no-resume", resume=False)
        events: list[ServerSentEvent] = []
        with pytest.raises(MAILClientError) as caught:
            async for event in stream:
                events.append(event)

    assert [e.id for e in events] == ["1", "2"]
    assert caught.value.status is None
    assert isinstance(
        caught.value.__cause__, aiohttp.ClientPayloadError | aiohttp.ClientConnectionError
    )


async def test_reconnects_are_bounded(gated: Gated, connect: Connect) -> None:
    async with CuttingProxy(gated.url, after_events(2, 10), refuse_after_cut=True) as proxy:
        client = connect(proxy.url)
        client.reconnect_attempts = 3
        client.reconnect_backoff = 0.001
        stream = await client.post_message_stream("job", task_id="t-bounded")
        events: list[ServerSentEvent] = []
        with pytest.raises(MAILClientError) as caught:
            async for event in stream:
                events.append(event)

    assert [e.id for e in events] == ["1", "2"]
    # aiohttp itself retries a GET once when the connection drops before an answer; the
    # last connection is the cancel of the task the stream gave up on (refused here too)
    assert 1 + 3 + 1 <= proxy.connections <= 1 + 2 * 3 + 1
    assert caught.value.status is None
    assert "3 reconnects failed" in caught.value.detail
    assert stream.last_event_id == "2"


async def test_a_refused_reconnect_is_raised_at_once(gated: Gated, connect: Connect) -> None:
    # The reconnect uses the client's current key: after a logout it is refused (401).
    async with CuttingProxy(gated.url, after_events(2, 10)) as proxy:
        client = connect(proxy.url)
        stream = await client.post_message_stream("job", task_id="t-refused")
        events = [await anext(stream), await anext(stream)]
        client.logout()
        with pytest.raises(MAILClientError) as caught:
            await anext(stream)

    assert [e.id for e in events] == ["1", "2"]
    assert (caught.value.status, caught.value.detail) == (401, "no API key provided")
    assert proxy.connections == 2


async def test_early_end_is_resumed_and_repeats_are_skipped(echo: Echo, connect: Connect) -> None:
    # A server that ends the body before the final event, then ignores Last-Event-ID.
    frame = "event: new_message\r\ndata: {{}}\r\nid: {}\r\n\r\n".format
    early = (frame(1) + frame(2)).encode()
    full = (frame(1) + frame(2) + frame(3) + "event: task_complete\r\ndata: {}\r\n\r\n").encode()
    echo.answers["/tasks/t/events"] = [(200, "text/event-stream", b) for b in (early, full)]

    stream = await connect(echo.url).task_events("t")
    events = [event async for event in stream]

    assert [(e.event, e.id) for e in events] == [
        ("new_message", "1"),
        ("new_message", "2"),
        ("new_message", "3"),
        ("task_complete", None),
    ]
    assert stream.reconnects == 1
    assert "last-event-id" not in echo.requests[0]["headers"]
    assert echo.requests[1]["headers"]["last-event-id"] == "2"


async def test_a_stream_of_a_closed_client_does_not_reconnect(
    gated: Gated, connect: Connect
) -> None:
    client = connect(gated.url)
    async with client:
        stream = await client.post_message_stream("job", task_id="t-closed")
        first = await anext(stream)

    later: list[ServerSentEvent] = []
    with pytest.raises(MAILClientError) as caught:
        async for event in stream:  # what was already received may still come out
            later.append(event)

    assert [e.id for e in [first, *later]] == ["1", "2", "3"][: 1 + len(later)]
    assert caught.value.status is None
    assert caught.value.detail.endswith("cannot reconnect: the client was closed")
    assert client._session is None  # white-box: no new session was opened
