"""``POST /message`` with ``stream: true``: headers, exact framing, the event sequence of a
simple delegation, failures, many concurrent streams and disconnecting clients (CONTRACT 2)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.server.conftest import (
    Frame,
    Running,
    Start,
    compact,
    frames,
    gated_swarm,
    parse_frame,
    read_stream,
    scripted_template,
    within,
)

from mail.server.auth import Caller
from mail.testing import ScriptedAgent, tc

pytestmark = pytest.mark.timeout(40)

#: CONTRACT 2.5, "simple delegation", for the offline swarm's arithmetic path:
#: (event, tool_name for tool_call events).
DELEGATION = [
    ("new_message", None),  # user -> supervisor
    ("tool_call", "send_request"),
    ("new_message", None),  # supervisor -> math
    ("tool_call", "calculate_expression"),
    ("action_call", None),
    ("action_complete", None),
    ("new_message", None),  # ::action_complete:: -> math
    ("tool_call", "send_response"),
    ("new_message", None),  # math -> supervisor
    ("tool_call", "task_complete"),
    ("task_complete_call", None),
    ("new_message", None),  # synthetic ::task_complete:: broadcast_complete
]
_STORED_KEYS = ["description", "extra_data", "task_id", "timestamp"]
_EXTRA_KEYS = {
    "new_message": ["full_message"],
    # each of this sequence's tool calls is the first of its agent turn: it tells when the
    # turn began (an addition to the contract's keys, as the action events' tool keys)
    "tool_call": ["tool_args", "tool_call_id", "tool_name", "turn_started"],
    "action_call": ["tool_args", "tool_call_id", "tool_name"],
    "action_complete": ["content", "status", "tool_args", "tool_call_id", "tool_name"],
}
#: the tool an event names (the action events name theirs since they carry it)
_NAMES_TOOL = {"action_call": "calculate_expression", "action_complete": "calculate_expression"}

_NORMALISE = [
    (re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?\+00:00"), b"<TS>"),
    (re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), b"<UUID>"),
    (re.compile(rb"call_\d+"), b"<CALL>"),
    (re.compile(rb"id: \d+\r\n"), b"id: <N>\r\n"),
]


def normalise(raw: bytes) -> bytes:
    for pattern, replacement in _NORMALISE:
        raw = pattern.sub(replacement, raw)
    return raw


def structure(stream: list[Frame]) -> list[tuple[Any, ...]]:
    """What must match exactly: names, data keys, extra_data keys, tool names."""
    return [
        (
            f.event,
            sorted(f.data),
            sorted(f.data.get("extra_data", {})),
            f.data.get("extra_data", {}).get("tool_name"),
        )
        for f in stream
    ]


def expected_structure(answer_only: bool = True) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = [
        (name, _STORED_KEYS, _EXTRA_KEYS.get(name, []), tool or _NAMES_TOOL.get(name))
        for name, tool in DELEGATION
    ]
    if answer_only:
        rows.append(
            ("task_complete", ["response", "seq", "status", "task_id", "timestamp"], [], None)
        )
    return rows


async def stream_message(client: Any, payload: dict[str, Any]) -> tuple[Any, bytes]:
    async def go() -> tuple[Any, bytes]:
        async with client.stream("POST", "/message", json={**payload, "stream": True}) as r:
            return r, await r.aread()

    return await within(go())


def split_frames(raw: bytes) -> list[bytes]:
    assert raw.endswith(b"\r\n\r\n")
    return raw[: -len(b"\r\n\r\n")].split(b"\r\n\r\n")


# --- framing -------------------------------------------------------------------------------


async def test_stream_headers(offline: Running) -> None:
    response, _ = await stream_message(await offline.user(), {"body": "what is 6*7?"})

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-accel-buffering"] == "no"


async def test_stream_framing_is_exact(offline: Running) -> None:
    _, raw = await stream_message(await offline.user(), {"body": "what is 6*7?"})

    raw.decode("ascii")  # non-ASCII is always \u-escaped
    for line in raw.split(b"\r\n"):
        assert b"\n" not in line
        assert b"\r" not in line
    parsed = []
    for chunk in split_frames(raw):
        lines = chunk.split(b"\r\n")
        assert len(lines) in (2, 3)
        if len(lines) == 3:  # a stored event: its id first
            assert re.fullmatch(rb"id: [1-9]\d*", lines.pop(0))
        assert lines[0].startswith(b"event: ")
        assert lines[1].startswith(b"data: ")
        data_text = lines[1][len(b"data: ") :].decode("ascii")
        assert compact(json.loads(data_text)) == data_text  # compact, "/" written "\/"
        assert not re.search(r"(?<!\\)/", data_text)
        parsed.append(chunk)
    assert b"<\\/timestamp>" in raw  # the XML in descriptions really contains escaped slashes
    assert len(parsed) == len(DELEGATION) + 1


async def test_stream_matches_simple_delegation_sequence(offline: Running) -> None:
    user = await offline.user()

    async with user.stream(
        "POST", "/message", json={"body": "what is 6*7?", "stream": True, "task_id": "t-seq"}
    ) as response:
        stream = await read_stream(response)

    assert structure(stream) == expected_structure()
    stored, final = stream[:-1], stream[-1]
    assert [f.id for f in stored] == list(range(1, len(stored) + 1))
    assert {f.data["task_id"] for f in stream} == {"t-seq"}
    assert final.event == "task_complete"
    assert final.id is None
    assert set(final.data) == {"timestamp", "task_id", "response", "seq", "status"}
    # it stands for the stored task_complete, the one event a stream leaves out
    assert final.data["seq"] == len(stored) + 1
    assert final.data["status"] == "completed"
    assert "42" in final.data["response"]
    assert b"\r\nid:" not in final.raw
    synthetic = stored[-1].data["extra_data"]["full_message"]
    assert synthetic["msg_type"] == "broadcast_complete"
    assert synthetic["message"]["subject"] == "::task_complete::"
    assert synthetic["message"]["body"] == final.data["response"]
    assert stored[0].data["extra_data"]["full_message"]["message"]["body"] == "what is 6*7?"


async def test_two_streams_are_byte_identical_apart_from_ids_and_times(offline: Running) -> None:
    user = await offline.user()

    _, first = await stream_message(user, {"body": "what is 6*7?", "task_id": "t-a"})
    _, second = await stream_message(user, {"body": "what is 6*7?", "task_id": "t-b"})

    assert normalise(first).replace(b"t-a", b"<T>") == normalise(second).replace(b"t-b", b"<T>")


async def test_stream_bytes_equal_the_stored_events(offline: Running) -> None:
    """What the stream sent is exactly the encoding of what /task then returns."""
    user = await offline.user()
    _, raw = await stream_message(user, {"body": "what is 6*7?", "task_id": "t-enc"})

    task = (await user.get("/task", params={"task_id": "t-enc"})).json()

    # the stored task_complete of the turn is the one event the stream replaces by its final
    *shown, end = task["events"]
    assert end["event"] == "task_complete"
    expected = b"".join(
        f"id: {e['id']}\r\nevent: {e['event']}\r\ndata: {e['data']}\r\n\r\n".encode("ascii")
        for e in shown
    )
    assert split_frames(raw)[:-1] == split_frames(expected)


async def test_setup_errors_are_http_errors_not_streams(offline: Running) -> None:
    user = await offline.user()

    async with user.stream(
        "POST", "/message", json={"body": "x", "entrypoint": "math", "stream": True}
    ) as response:
        await response.aread()

    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert "'math' is not an entrypoint" in response.json()["detail"]


async def test_failed_task_stream_ends_with_task_error(start: Start) -> None:
    boom = RuntimeError("boom")
    supervisor = ScriptedAgent(
        [boom, boom], rule=lambda _m: tc("task_complete", finish_message="ok")
    )
    server = await start(template=scripted_template({"supervisor": supervisor}))

    _, raw = await stream_message(await server.user(), {"body": "hi"})

    stream = [parse_frame(chunk) for chunk in split_frames(raw)]
    final = stream[-1]
    assert final.event == "task_error"
    assert set(final.data) == {"timestamp", "task_id", "response", "seq", "status"}
    # it stands for the stored task_error the stream showed last, and has its time
    assert (final.data["seq"], final.data["timestamp"]) == (
        stream[-2].id,
        stream[-2].data["timestamp"],
    )
    assert final.data["status"] == "failed"
    assert "boom" in final.data["response"]
    assert "task_complete" not in [f.event for f in stream]


# --- many streams ----------------------------------------------------------------------------


async def test_fifty_concurrent_streams_each_get_only_their_own_task(offline: Running) -> None:
    clients = [await offline.client("user-key") for _ in range(50)]

    async def ask(i: int) -> tuple[str, list[Frame]]:
        task_id = f"t-many-{i}"
        body = {"body": f"what is {i}+1000?", "stream": True, "task_id": task_id}
        async with clients[i].stream("POST", "/message", json=body) as response:
            assert response.status_code == 200
            return task_id, [f async for f in frames(response)]

    results = await within(asyncio.gather(*(ask(i) for i in range(50))), 30)

    for i, (task_id, stream) in enumerate(results):
        assert {f.data["task_id"] for f in stream} == {task_id}
        assert structure(stream) == expected_structure()
        assert str(i + 1000) in stream[-1].data["response"]
        question = stream[0].data["extra_data"]["full_message"]["message"]["body"]
        assert question == f"what is {i}+1000?"


# --- disconnects ----------------------------------------------------------------------------


async def test_disconnected_client_costs_nothing_afterwards(start: Start) -> None:
    gate = asyncio.Event()
    template, worker = gated_swarm(gate)
    server = await start(template=template)
    user = await server.user()

    async with user.stream(
        "POST", "/message", json={"body": "job 1", "stream": True, "task_id": "t-gone"}
    ) as response:
        seen = []
        async for frame in frames(response):
            seen.append(frame)
            if len(seen) == 3:
                break
    # the connection is closed; the task cannot end before the worker's gate opens
    assert [f.event for f in seen] == ["new_message", "tool_call", "new_message"]
    assert (await user.get("/task", params={"task_id": "t-gone"})).json()["is_running"] is True

    gate.set()
    swarm = server.state.swarms.find(Caller(role="user", id="u1", api_key="user-key"))
    assert swarm is not None
    final = await swarm.runtime.wait_for_task("t-gone", timeout=10)
    assert final["message"]["body"] == "done: worked"
    assert await within(swarm.runtime.scheduler.spawner.drain(5.0))
    assert len(swarm.runtime.scheduler.spawner) == 0
    task = (await user.get("/task", params={"task_id": "t-gone"})).json()
    assert task["state"] == "completed"
    assert task["is_running"] is False
    # the turn's end is stored though nobody streamed it to the end (issue 21)
    assert task["events"][-1]["event"] == "task_complete"
    assert json.loads(task["events"][-1]["data"])["description"] == "response: 'done: worked'"
    assert worker.running == 0


# --- heartbeats --------------------------------------------------------------------------------


async def test_a_silent_stream_sends_ping_frames_without_id(start: Start) -> None:
    """CONTRACT 2: after ``ping_interval`` seconds of silence a ``ping`` frame goes out: its
    data is the timestamp and task id only, and it has no ``id:`` (it is not in the log)."""
    gate = asyncio.Event()
    template, _worker = gated_swarm(gate)
    server = await start(template=template, ping_interval=0.05)
    user = await server.user()

    seen: list[Frame] = []
    body = {"body": "job", "stream": True, "task_id": "t-ping"}
    async with user.stream("POST", "/message", json=body) as response:
        stream = frames(response)
        while not seen or seen[-1].event != "ping":
            seen.append(await within(anext(stream)))
        gate.set()  # the worker was waiting: the task goes on and ends
        seen += await within(_rest(stream))

    pings = [f for f in seen if f.event == "ping"]
    ping = pings[0]
    assert set(ping.data) == {"timestamp", "task_id"}
    assert ping.data["task_id"] == "t-ping"
    assert ping.raw == b"event: ping\r\ndata: " + compact(ping.data).encode()
    assert all(f.id is None and b"id:" not in f.raw for f in pings)
    stored = [f for f in seen if f.event != "ping"]
    assert [f.id for f in stored[:-1]] == list(range(1, len(stored)))  # pings take no number
    assert (stored[-1].event, stored[-1].data["response"]) == ("task_complete", "done: worked")


async def _rest(stream: AsyncIterator[Frame]) -> list[Frame]:
    return [f async for f in stream]


async def test_a_task_stores_one_task_complete_whether_streamed_or_not(offline: Running) -> None:
    """Regression (issue 21): a streamed task stored no task_complete, a non-streamed one did."""
    user = await offline.user()
    answer = await user.post("/message", json={"body": "what is 6*7?", "task_id": "t-plain"})
    assert answer.status_code == 200
    _, raw = await stream_message(user, {"body": "what is 6*7?", "task_id": "t-streamed"})
    assert split_frames(raw)[-1].startswith(b"event: task_complete\r\n")

    for task_id in ("t-plain", "t-streamed"):
        events = (await user.get("/task", params={"task_id": task_id})).json()["events"]
        ends = [e for e in events if e["event"] == "task_complete"]
        assert len(ends) == 1, task_id
        assert ends[0] is events[-1]
        assert json.loads(ends[0]["data"])["description"] == "response: '6*7 = 42'"
    # the stream's closing event stood for the stored one: it appears once on the wire
    ends_sent = [f for f in split_frames(raw) if b"event: task_complete\r\n" in f]
    assert len(ends_sent) == 1 and not ends_sent[0].startswith(b"id:")
