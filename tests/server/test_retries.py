"""Retried requests are safe: a ``POST /message`` repeated is answered as the first one was,
never run a second time (docs/http-api.md, "Retries").

The ``task_id`` is the idempotency key of a new task; a follow-up is recognised by its
``Idempotency-Key`` header, or, without one, while the turn it opened still runs. The same
id or key with another request is a 409. It holds across a task that left memory and
across a restart (the request is stored with the task's record)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.server.conftest import (
    Running,
    Start,
    frames,
    gated_swarm,
    make_config,
    within,
)

from mail.core.events import EventName

pytestmark = pytest.mark.timeout(60)


def _user_messages(server: Running, task_id: str) -> int:
    """How many messages of the caller the task got (one per run of a request)."""
    swarm = server.state.swarms.lookup("user", "u1")
    assert swarm is not None
    return sum(
        1
        for e in swarm.runtime.get_events(task_id)
        if e.event == EventName.NEW_MESSAGE
        and e.extra_data["full_message"]["message"]["sender"]["address_type"] == "user"
    )


async def _gated(start: Start, tmp_path: Path, **config: Any) -> tuple[Running, asyncio.Event]:
    gate = asyncio.Event()
    template, _ = gated_swarm(gate)
    return await start(make_config(tmp_path, **config), template=template), gate


async def _waiting(server: Running, task_id: str, count: int) -> None:
    """Until ``count`` requests wait for the task's running turn."""

    async def poll() -> None:
        while True:
            swarm = server.state.swarms.lookup("user", "u1")
            task = swarm.get_task_by_id(task_id) if swarm is not None else None
            if task is not None and task.is_running and len(task.waiters) >= count:
                return
            await asyncio.sleep(0.01)

    await within(poll())


async def test_a_new_task_repeated_while_it_runs_and_after_gets_the_first_answer(
    start: Start, tmp_path: Path
) -> None:
    server, gate = await _gated(start, tmp_path)
    user = await server.user()
    ask = {"body": "job", "task_id": "t-1"}
    first = asyncio.create_task(user.post("/message", json=ask))
    await _waiting(server, "t-1", 1)
    second = asyncio.create_task(user.post("/message", json=ask))  # while it runs
    await _waiting(server, "t-1", 2)
    gate.set()
    answers = [await within(first), await within(second)]
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
    assert answers[0].json() == answers[1].json()
    assert answers[0].json()["response"] == "done: worked"
    late = await user.post("/message", json={**ask, "show_events": True})  # after it ended
    assert late.status_code == 200
    assert late.json()["response"] == "done: worked"
    assert late.json()["events"][-1]["event"] == "task_complete"
    assert _user_messages(server, "t-1") == 1  # one run


async def test_a_repeated_stream_replays_the_task_from_its_start_then_live(
    start: Start, tmp_path: Path
) -> None:
    server, gate = await _gated(start, tmp_path)
    user = await server.user()
    ask = {"body": "job", "task_id": "t-s", "stream": True}
    async with user.stream("POST", "/message", json=ask) as one:
        stream = frames(one)
        first = await within(anext(stream))
        async with user.stream("POST", "/message", json=ask) as two:
            gate.set()
            again = [f async for f in frames(two)]
        rest = [first, *[f async for f in stream]]
    assert [f.id for f in again] == [f.id for f in rest]
    assert again[0].id == 1
    assert again[-1].event == rest[-1].event == "task_complete"
    assert again[-1].data["response"] == rest[-1].data["response"] == "done: worked"
    assert _user_messages(server, "t-s") == 1


async def test_the_same_task_id_with_another_request_is_a_conflict(
    start: Start, tmp_path: Path
) -> None:
    server, gate = await _gated(start, tmp_path)
    gate.set()
    user = await server.user()
    assert (await user.post("/message", json={"body": "job", "task_id": "t-c"})).status_code == 200
    other = await user.post("/message", json={"body": "another job", "task_id": "t-c"})
    assert other.status_code == 409
    assert "already exists" in other.json()["detail"]
    # arguments count too, the stream flag and the timeout do not
    kwargs = {"body": "job", "task_id": "t-c", "kwargs": {"max_steps": 5}}
    assert (await user.post("/message", json=kwargs)).status_code == 409
    same = {"body": "job", "task_id": "t-c", "kwargs": {"timeout": 30}, "show_events": True}
    assert (await user.post("/message", json=same)).status_code == 200
    assert _user_messages(server, "t-c") == 1


async def test_a_follow_up_is_recognised_by_its_idempotency_key(
    start: Start, tmp_path: Path
) -> None:
    server, gate = await _gated(start, tmp_path)
    gate.set()
    user = await server.user()
    assert (await user.post("/message", json={"body": "job", "task_id": "t-f"})).status_code == 200
    follow = {"body": "more", "task_id": "t-f", "resume_from": "user_response"}
    keyed = {"Idempotency-Key": "call-1"}
    one = await user.post("/message", json=follow, headers=keyed)
    two = await user.post("/message", json=follow, headers=keyed)  # a retry
    assert (one.status_code, two.status_code) == (200, 200)
    assert one.json() == two.json()
    assert _user_messages(server, "t-f") == 2
    other = await user.post("/message", json={**follow, "body": "else"}, headers=keyed)
    assert other.status_code == 409
    assert "Idempotency-Key 'call-1' was sent with another request" in other.json()["detail"]
    # a new key, or none once the turn ended, is a new follow-up (a user may say "yes" twice)
    assert (await user.post("/message", json=follow)).status_code == 200
    assert _user_messages(server, "t-f") == 3


async def test_a_follow_up_repeated_while_its_turn_runs_is_not_delivered_twice(
    start: Start, tmp_path: Path
) -> None:
    server, gate = await _gated(start, tmp_path)
    gate.set()
    user = await server.user()
    assert (await user.post("/message", json={"body": "job", "task_id": "t-r"})).status_code == 200
    gate.clear()
    follow = {"body": "more", "task_id": "t-r", "resume_from": "user_response"}
    first = asyncio.create_task(user.post("/message", json=follow))
    await _waiting(server, "t-r", 1)
    second = asyncio.create_task(user.post("/message", json=follow))
    await _waiting(server, "t-r", 2)
    gate.set()
    answers = [await within(first), await within(second)]
    assert answers[0].json() == answers[1].json()
    assert _user_messages(server, "t-r") == 2


async def test_a_bad_idempotency_key_is_refused(start: Start, tmp_path: Path) -> None:
    server, _ = await _gated(start, tmp_path)
    user = await server.user()
    ask = {"body": "job", "task_id": "t-k"}
    long = await user.post("/message", json=ask, headers={"Idempotency-Key": "k" * 300})
    assert long.status_code == 400
    assert "idempotency-key" in long.json()["detail"].lower()
    control = await user.post("/message", json=ask, headers={"Idempotency-Key": "a\tb"})
    assert control.status_code == 400
    assert "idempotency-key" in control.json()["detail"].lower()


async def test_a_task_that_left_memory_keeps_its_id(start: Start, tmp_path: Path) -> None:
    """Its id cannot be taken again by another request (it was overwritten before), and a
    repeat is answered from the store."""
    config = make_config(tmp_path, settings={"max_finished_tasks": 1, "print_llm_streams": False})
    server = await start(config)
    user = await server.user()
    first = await user.post("/message", json={"body": "What is 6 * 7?", "task_id": "old"})
    assert first.status_code == 200
    await user.post("/message", json={"body": "What is 2 + 2?", "task_id": "newer"})
    swarm = server.state.swarms.lookup("user", "u1")
    assert swarm is not None
    assert swarm.get_task_by_id("old") is None  # evicted: in the store only
    other = await user.post("/message", json={"body": "Weather?", "task_id": "old"})
    assert other.status_code == 409
    again = await user.post("/message", json={"body": "What is 6 * 7?", "task_id": "old"})
    assert again.status_code == 200
    assert again.json() == first.json()


async def test_a_repeat_after_a_restart_is_answered_from_the_store(
    start: Start, tmp_path: Path
) -> None:
    config = make_config(tmp_path)
    server = await start(config)
    user = await server.user()
    ask = {"body": "What is 6 * 7?", "task_id": "kept"}
    first = await user.post("/message", json=ask)
    assert first.status_code == 200  # (so it is stored)
    again_server = await start(config)  # a new server on the same data
    user = await again_server.user()
    again = await user.post("/message", json=ask)
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    async with user.stream("POST", "/message", json={**ask, "stream": True}) as streamed:
        replayed = [f async for f in frames(streamed)]
    assert replayed[0].id == 1
    assert replayed[-1].event == "task_complete"
    assert replayed[-1].data["response"] == first.json()["response"]
