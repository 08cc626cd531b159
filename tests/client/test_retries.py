"""``POST /message`` is retried with the same task id (a follow-up with the same
``Idempotency-Key``), so a request whose answer was lost runs once; a call that gives up
cancels its task; a stream whose closing event the server holds back asks again.

The lost answers are made by :class:`DroppingProxy`: it forwards the request to a real
server and drops the client's connection once the server took it, before any answer byte.
The gated swarm keeps the task running meanwhile.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from contextlib import AbstractAsyncContextManager, ExitStack
from pathlib import Path
from typing import Any

import pytest
from tests.client.conftest import WAIT, Accepted, Connect, DroppingProxy, Echo, Gated
from tests.persistence.conftest import Running, running, server_config
from tests.persistence.test_storage_errors import impatient, sqlite_write_locked
from tests.server.conftest import gated_swarm

from mail.client import MAILClient, MAILClientError, ServerSentEvent
from mail.client._retry import parse_retry_after, retry_delay
from mail.client._types import TaskRecord

pytestmark = pytest.mark.timeout(60)

FAST = {"retry_backoff": 0.01}


def user_messages(task: TaskRecord) -> int:
    """How many messages of the caller the task got (one per run of a request)."""
    datas = [json.loads(e["data"]) for e in task["events"] if e["event"] == "new_message"]
    return sum(
        1
        for d in datas
        if d["extra_data"]["full_message"]["message"]["sender"]["address_type"] == "user"
    )


def has_a_task(direct: MAILClient) -> Accepted:
    async def check() -> bool:
        return len(await direct.get_tasks(events=False)) > 0

    return check


def sent(proxy: DroppingProxy) -> list[dict[str, Any]]:
    return [json.loads(body) for _, body in proxy.attempts]


async def only_task(direct: MAILClient) -> tuple[str, TaskRecord]:
    tasks = await direct.get_tasks()
    assert len(tasks) == 1, list(tasks)
    [(task_id, task)] = tasks.items()
    return task_id, task


async def test_post_message_whose_answer_was_lost_gets_the_first_tasks_answer(
    gated: Gated, connect: Connect
) -> None:
    direct = connect(gated.url)
    async with DroppingProxy(gated.url, accepted=has_a_task(direct)) as proxy:
        client = connect(proxy.url, **FAST)
        call = asyncio.create_task(client.post_message("job"))
        async with asyncio.timeout(WAIT):
            await proxy.wait_attempts(2)  # dropped while the task runs, then sent again
            assert gated.worker.running == 1
            gated.gate.set()
            answer = await call

    assert proxy.dropped == 1
    first, again = sent(proxy)
    assert first == again  # the same request, under the same task id
    assert answer["response"] == "done: worked"
    task_id, task = await only_task(direct)  # one task ...
    assert answer["task_id"] == first["task_id"] == task_id
    assert user_messages(task) == 1  # ... that ran once
    assert gated.worker.max_running == 1


async def test_post_message_stream_whose_answer_was_lost_streams_the_first_task(
    gated: Gated, connect: Connect
) -> None:
    direct = connect(gated.url)
    async with DroppingProxy(gated.url, accepted=has_a_task(direct)) as proxy:
        client = connect(proxy.url, **FAST)
        async with asyncio.timeout(WAIT):
            stream = await client.post_message_stream("job")
            events = [await anext(stream)]  # the first task's events, from its start
            gated.gate.set()
            events += [e async for e in stream]

    assert (proxy.dropped, len(proxy.attempts)) == (1, 2)
    first, again = sent(proxy)
    assert first == again
    assert [e.id for e in events[:-1]] == [str(n) for n in range(1, len(events))]
    assert stream.final is not None
    assert stream.final.json()["response"] == "done: worked"
    assert stream.reconnects == 0
    task_id, task = await only_task(direct)
    assert stream.task_id == first["task_id"] == task_id
    assert user_messages(task) == 1


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
async def test_a_follow_up_whose_answer_was_lost_is_delivered_once(
    gated: Gated, connect: Connect, streamed: bool
) -> None:
    """The retry comes once the follow-up's turn has answered: only the
    ``Idempotency-Key`` tells the server it is no new follow-up."""
    gated.gate.set()
    direct = connect(gated.url)
    task_id = (await direct.post_message("job"))["task_id"]
    # no ``accepted``: the proxy drops at the server's first answer byte, which for a
    # JSON follow-up comes once its turn ended
    async with DroppingProxy(gated.url) as proxy:
        client = connect(proxy.url, **FAST)
        async with asyncio.timeout(WAIT):
            if streamed:
                stream = await client.post_message_stream(
                    "more", task_id=task_id, resume_from="user_response"
                )
                events = [e async for e in stream]
                response = events[-1].json()["response"]
            else:
                answer = await client.post_message(
                    "more", task_id=task_id, resume_from="user_response"
                )
                response = answer["response"]

    assert (proxy.dropped, len(proxy.attempts)) == (1, 2)
    (one, first), (two, again) = proxy.attempts
    assert first == again
    assert one["idempotency-key"] == two["idempotency-key"] != ""
    assert response == "done: worked"
    _, task = await only_task(direct)
    assert user_messages(task) == 2  # the first message and one follow-up
    if streamed:
        # the turn's own events only, from its start
        assert events[0].json()["extra_data"]["full_message"]["message"]["body"] == "more"


async def test_each_follow_up_has_its_own_key(echo: Echo, connect: Connect) -> None:
    echo.answers["/message"] = (200, "application/json", b'{"response": "r", "events": null}')
    client = connect(echo.url)
    for _ in range(2):
        await client.post_message("yes", task_id="t", resume_from="user_response")

    keys = [r["headers"]["idempotency-key"] for r in echo.requests]
    assert len(set(keys)) == 2
    assert all(sent_body["task_id"] == "t" for sent_body in map(_body, echo.requests))


def _body(request: dict[str, Any]) -> Any:
    return json.loads(request["body"])


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
async def test_a_call_that_gives_up_cancels_its_task(
    gated: Gated, connect: Connect, streamed: bool
) -> None:
    direct = connect(gated.url)
    async with DroppingProxy(gated.url, accepted=has_a_task(direct), drops=None) as proxy:
        client = connect(proxy.url, retries=2, **FAST)
        with pytest.raises(MAILClientError) as caught:
            async with asyncio.timeout(WAIT):
                if streamed:
                    await client.post_message_stream("job")
                else:
                    await client.post_message("job")

    assert (proxy.dropped, len(proxy.attempts)) == (3, 3)  # the first try and 2 retries
    assert len({json.dumps(body, sort_keys=True) for body in sent(proxy)}) == 1
    assert caught.value.status is None
    assert caught.value.detail.startswith(f"cannot reach {proxy.url}")
    task_id, task = await only_task(direct)
    assert task_id == sent(proxy)[0]["task_id"]
    assert task["state"] == "cancelled"
    assert user_messages(task) == 1


async def test_a_gateway_error_is_retried_and_a_refusal_is_not(
    echo: Echo, connect: Connect
) -> None:
    gateway = (502, "application/json", b'{"detail": "bad gateway"}')
    answer = (200, "application/json", b'{"response": "r", "events": null, "task_id": "t"}')
    echo.answers["/message"] = [gateway, answer]
    client = connect(echo.url, **FAST)

    assert (await client.post_message("hi"))["response"] == "r"
    first, again = (_body(r) for r in echo.requests)
    assert first == again

    echo.requests.clear()
    echo.answers["/message"] = (409, "application/json", b'{"detail": "no"}')
    with pytest.raises(MAILClientError) as caught:
        await client.post_message("hi")
    assert caught.value.status == 409
    assert len(echo.requests) == 1  # no retry, and no cancel: the server refused it


async def test_without_retries_the_call_gives_up_at_once(echo: Echo, connect: Connect) -> None:
    echo.answers["/message"] = (503, "application/json", b'{"detail": "down"}')
    client = connect(echo.url, retries=0)
    with pytest.raises(MAILClientError) as caught:
        await client.post_message("hi")

    assert (caught.value.status, caught.value.detail) == (503, "down")
    paths = [(r["method"], r["path"]) for r in echo.requests]
    task_id = _body(echo.requests[0])["task_id"]
    assert paths == [("POST", "/message"), ("POST", f"/tasks/{task_id}/cancel")]


def test_retry_after_is_read_as_seconds_or_a_date() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    seconds = parse_retry_after(later)
    assert seconds is not None
    assert 25 <= seconds <= 31
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert parse_retry_after(past) == 0.0
    assert retry_delay(MAILClientError("x", status=503, retry_after=2), 3, 0.5) == 2
    assert retry_delay(MAILClientError("x", status=503, retry_after=600), 1, 0.5) == 60
    assert retry_delay(MAILClientError("x", status=503), 3, 0.5) == 2.0


# --- a store that fails: answers held back until the task is stored ------------------------


def _gated_store_server(
    tmp_path: Path, gate: asyncio.Event
) -> AbstractAsyncContextManager[Running]:
    """A server of the gated swarm over SQLite whose answers wait 1 s for their commit."""
    template, _ = gated_swarm(gate)
    return running(server_config(tmp_path, commit_timeout=1.0), template)


async def test_a_stream_whose_closing_event_is_held_back_asks_again(
    tmp_path: Path, connect: Connect
) -> None:
    gate = asyncio.Event()
    async with _gated_store_server(tmp_path, gate) as server, asyncio.timeout(WAIT * 2):
        store = server.state.store
        assert store is not None
        await impatient(store)
        client = connect(server.url)
        events: list[ServerSentEvent] = []
        with ExitStack() as outage:
            stream = await client.post_message_stream("job")
            events.append(await anext(stream))
            outage.enter_context(sqlite_write_locked(server.state.config.database.sqlite_path))
            gate.set()
            async for event in stream:
                events.append(event)
                if event.event == "storage_error" and event.id is None:
                    outage.close()  # the store works again: the client asks again

    holds = [e for e in events if e.event == "storage_error" and e.id is None]
    assert len(holds) == stream.holds >= 1
    assert holds[0].json()["extra_data"]["retry_after"] == 1
    assert stream.reconnects == stream.holds
    assert stream.final is not None
    assert stream.final.json()["response"] == "done: worked"
    ids = [int(e.id) for e in events if e.id is not None]
    assert ids == sorted(set(ids))  # none repeated across the reconnects


async def test_an_answer_held_back_is_asked_for_again_after_retry_after(
    tmp_path: Path, connect: Connect
) -> None:
    gate = asyncio.Event()
    async with _gated_store_server(tmp_path, gate) as server, asyncio.timeout(WAIT * 2):
        store = server.state.store
        assert store is not None
        await impatient(store)
        direct = connect(server.url)
        async with DroppingProxy(server.url, drops=0) as proxy:
            client = connect(proxy.url, retries=5, **FAST)
            with ExitStack() as outage:
                call = asyncio.create_task(client.post_message("job"))
                await proxy.wait_attempts(1)
                await _until(has_a_task(direct))
                outage.enter_context(sqlite_write_locked(server.state.config.database.sqlite_path))
                gate.set()
                await proxy.wait_attempts(2)  # after the 503 and its Retry-After
                outage.close()
                answer = await call
        _, task = await only_task(direct)

    assert answer["response"] == "done: worked"
    bodies = sent(proxy)
    assert len(bodies) >= 2
    assert all(body == bodies[0] for body in bodies)
    assert user_messages(task) == 1


async def _until(check: Accepted) -> None:
    while True:  # the server is asked over HTTP: there is no event to wait on
        if await check():
            return
        await asyncio.sleep(0.01)
