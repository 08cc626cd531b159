"""Cluster mode, tasks: any replica answers any request about a task, and a dead
replica's tasks go on elsewhere (issue 27, items 3 and 4).

Three real replicas on one PostgreSQL database and Redis (as ``test_cluster.py``), with
a swarm whose entrypoint takes a second per turn, as an LLM would, and answers by itself
(no action: such a turn can be run again). Requests go to a different replica each: a task
created on A is streamed from B and followed up on C; a follow-up of a task A is running,
sent to B, is handed to A; a breakpoint paused on A is answered through B; a cancel sent
to C stops a task A runs. C, stopped with SIGTERM while its clients stream, leaves its
tasks to A and B and comes back under the same id. Last, A is killed with SIGKILL while
50 clients stream its tasks: B and C take them over and every client, reconnecting to B or
C with ``Last-Event-ID``, gets the rest of its events, without a gap or a duplicate, up to
the answer.
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest
from tests.persistence.server_process import read_line
from tests.persistence.tcp_proxy import TcpProxy
from tests.server.test_cluster import REPO, SWARMS, Replica, _start, call, running_replicas
from websockets.asyncio.client import connect

pytestmark = pytest.mark.timeout(180)

LEASE = 3.0
DELAY = 1.0
TASKS = 50


@dataclass
class Cluster:
    replicas: list[Replica]
    key: str
    env: dict[str, str]
    root: Path
    swarms: Path
    admin_key: str


def _swarms_file(root: Path) -> Path:
    """The offline swarm with a slow supervisor (``tests.server._slow_agents``), whose
    weather forecasts the caller gives (a breakpoint tool)."""
    swarms = json.loads(SWARMS.read_text(encoding="utf-8"))
    offline = next(s for s in swarms if s["name"] == "offline")
    offline = json.loads(json.dumps(offline))
    offline["name"] = "slow"
    supervisor = next(a for a in offline["agents"] if a["name"] == "supervisor")
    supervisor["factory"] = "python::tests.server._slow_agents:SlowSupervisor"
    supervisor["agent_params"] = {"delay": DELAY}
    offline["breakpoint_tools"] = ["get_weather_forecast"]  # the caller answers forecasts
    path = root / "swarms.json"
    path.write_text(json.dumps([offline]), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster-tasks")
    swarms = _swarms_file(root)
    env = {"MAIL_LEASE_SECONDS": str(LEASE), "PYTHONPATH": str(REPO)}
    with running_replicas(root, swarms=swarms, swarm="slow", env=env) as started:
        a = started.replicas[0]
        created = call(
            a.url, started.admin_key, "POST", "/keys", json={"role": "user", "id": "carol"}
        )
        assert created.status_code == 201, created.text
        key = created.json()["key"]
        yield Cluster(started.replicas, key, started.env, root, swarms, started.admin_key)


# --- a client that reads server-sent events ---------------------------------------------


@dataclass
class Seen:
    """What one client received of one task: (id, event) of the stored events, the
    closing event's data."""

    task_id: str = ""
    events: list[tuple[int, str]] = field(default_factory=list)
    final: dict[str, Any] | None = None
    final_event: str | None = None


def _client(replica: Replica, key: str, timeout: float = 30.0) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=replica.url,
        headers={"Authorization": f"Bearer {key}"},
        timeout=timeout,
        trust_env=False,
    )


async def _read(response: httpx.Response, seen: Seen, first: asyncio.Event | None = None) -> None:
    frame: dict[str, Any] = {}
    assert response.status_code == 200, await response.aread()
    async for line in response.aiter_lines():
        done = read_line(frame, line)
        if done is None or done["event"] == "ping":
            continue
        seen.task_id = done["data"].get("task_id", seen.task_id)
        if "id" in done:
            seen.events.append((done["id"], done["event"]))
            if first is not None:
                first.set()
        else:
            seen.final, seen.final_event = done["data"], done["event"]


async def _send(replica: Replica, key: str, body: dict[str, Any], seen: Seen) -> None:
    async with (
        _client(replica, key) as client,
        client.stream("POST", "/message", json={**body, "stream": True}) as response,
    ):
        await _read(response, seen)


async def _events(replica: Replica, key: str, task_id: str, after: int, seen: Seen) -> None:
    headers = {"Last-Event-ID": str(after)}
    async with (
        _client(replica, key) as client,
        client.stream("GET", f"/tasks/{task_id}/events", headers=headers) as response,
    ):
        await _read(response, seen)


def _contiguous(ids: list[int], start: int = 1) -> bool:
    return ids == list(range(start, start + len(ids)))


# --- any replica answers ------------------------------------------------------------------


def test_a_task_created_on_a_is_streamed_from_b_and_followed_up_on_c(cluster: Cluster) -> None:
    a, b, c = cluster.replicas
    task_id = f"t-{uuid.uuid4().hex[:8]}"

    async def scenario() -> tuple[Seen, Seen, Seen]:
        on_a, from_b = Seen(), Seen()
        sending = asyncio.create_task(
            _send(a, cluster.key, {"body": "hello there", "task_id": task_id}, on_a)
        )
        # B follows the task while A runs it: stored events, then live ones from Redis
        following = asyncio.create_task(_follow_when_known(b, cluster.key, task_id, from_b))
        await asyncio.wait_for(asyncio.gather(sending, following), 30)
        again = Seen()
        body = {"body": "and again", "task_id": task_id, "resume_from": "user_response"}
        await asyncio.wait_for(_send(c, cluster.key, body, again), 30)
        return on_a, from_b, again

    on_a, from_b, again = asyncio.run(scenario())
    assert on_a.final_event == "task_complete" and on_a.final is not None
    assert on_a.final["status"] == "completed"
    assert from_b.final == {**on_a.final, "timestamp": from_b.final["timestamp"]}  # type: ignore[index]
    assert _contiguous([i for i, _ in on_a.events])
    assert from_b.events == on_a.events  # every event, in order, no duplicate
    # C took the free lease, loaded the task from the store and ran the follow-up
    assert again.final_event == "task_complete", again
    ids = [i for i, _ in again.events]
    assert ids and ids[0] == on_a.events[-1][0] + 2  # after the stored task_complete
    assert _contiguous(ids, ids[0])
    record = call(a.url, cluster.key, "GET", "/task", params={"task_id": task_id}).json()
    assert record["state"] == "completed"
    assert int(record["events"][-1]["id"]) >= ids[-1]
    # every replica lists it, as the store has it
    for replica in (a, b, c):
        listed = call(
            replica.url, cluster.key, "GET", "/tasks", params={"limit": 100, "events": "false"}
        ).json()
        mine = [t for t in listed["tasks"] if t["task_id"] == task_id]
        assert len(mine) == 1 and mine[0]["state"] == "completed", (replica.id, mine)


async def _follow_when_known(replica: Replica, key: str, task_id: str, seen: Seen) -> None:
    """Follow the task from ``replica`` as soon as the store knows it (404 before)."""
    async with _client(replica, key) as client:
        for _ in range(200):
            async with client.stream("GET", f"/tasks/{task_id}/events") as response:
                if response.status_code == 404:
                    await response.aread()
                    await asyncio.sleep(0.02)  # the task is not stored yet: ask again
                    continue
                await _read(response, seen)
                return
    raise AssertionError(f"task {task_id} never became known to {replica.id}")


def test_a_follow_up_sent_to_b_while_a_runs_the_task_is_handed_to_a(cluster: Cluster) -> None:
    a, b, _ = cluster.replicas
    task_id = f"t-{uuid.uuid4().hex[:8]}"

    async def scenario() -> tuple[Seen, Seen]:
        first, on_a, via_b = asyncio.Event(), Seen(), Seen()

        async def send_a() -> None:
            async with (
                _client(a, cluster.key) as client,
                client.stream(
                    "POST", "/message", json={"body": "first", "task_id": task_id, "stream": True}
                ) as response,
            ):
                await _read(response, on_a, first)

        sending = asyncio.create_task(send_a())
        await asyncio.wait_for(first.wait(), 10)  # A runs the task (and holds its lease)
        body = {"body": "second", "task_id": task_id, "resume_from": "user_response"}
        async with _client(b, cluster.key) as client:
            answer = await client.post("/message", json=body)
        assert answer.status_code == 200, answer.text
        via_b.final = answer.json()
        await asyncio.wait_for(sending, 30)
        return on_a, via_b

    _, via_b = asyncio.run(scenario())
    assert via_b.final is not None
    assert via_b.final["task_id"] == task_id
    assert via_b.final["status"] == "completed"
    assert via_b.final["response"]
    health = httpx.get(f"{a.url}/health", trust_env=False).json()
    assert health["owned_tasks"] == 0  # finished: the lease is free again


def test_a_cancel_sent_to_c_stops_the_task_a_runs(cluster: Cluster) -> None:
    a, _, c = cluster.replicas
    task_id = f"t-{uuid.uuid4().hex[:8]}"

    async def scenario() -> tuple[Seen, httpx.Response]:
        first, on_a = asyncio.Event(), Seen()

        async def send_a() -> None:
            async with (
                _client(a, cluster.key) as client,
                client.stream(
                    "POST",
                    "/message",
                    json={"body": "long job", "task_id": task_id, "stream": True},
                ) as response,
            ):
                await _read(response, on_a, first)

        sending = asyncio.create_task(send_a())
        await asyncio.wait_for(first.wait(), 10)
        async with _client(c, cluster.key) as client:
            cancelled = await client.post(f"/tasks/{task_id}/cancel")
        await asyncio.wait_for(sending, 30)
        return on_a, cancelled

    on_a, cancelled = asyncio.run(scenario())
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json() == {"task_id": task_id, "status": "cancelled"}
    assert on_a.final_event == "task_error"
    assert on_a.final is not None and on_a.final["status"] == "cancelled"
    again = call(c.url, cluster.key, "POST", f"/tasks/{task_id}/cancel")
    assert again.status_code == 409, again.text
    missing = call(c.url, cluster.key, "POST", "/tasks/no-such-task/cancel")
    assert missing.status_code == 404


def test_a_breakpoint_paused_on_a_is_answered_through_b(cluster: Cluster) -> None:
    a, b, c = cluster.replicas
    task_id = f"t-{uuid.uuid4().hex[:8]}"
    paused = call(
        a.url,
        cluster.key,
        "POST",
        "/message",
        json={"body": "What is the weather in Paris?", "task_id": task_id},
    )
    assert paused.status_code == 200, paused.text
    assert paused.json()["status"] == "waiting_breakpoint"
    calls = json.loads(paused.json()["response"])
    assert calls[0]["name"] == "get_weather_forecast"
    record = call(c.url, cluster.key, "GET", "/task", params={"task_id": task_id}).json()
    assert record["state"] == "waiting_breakpoint"  # C reads the store's copy
    answered = call(
        b.url,
        cluster.key,
        "POST",
        "/message",
        json={
            "task_id": task_id,
            "resume_from": "breakpoint_tool_call",
            "kwargs": {"breakpoint_tool_call_result": "Sunny, 21 C, light wind"},
            "show_events": True,
        },
    )
    assert answered.status_code == 200, answered.text
    answer = answered.json()
    assert answer["status"] == "completed"
    assert "Sunny, 21 C" in answer["response"]
    names = [e["event"] for e in answer["events"]]
    assert "breakpoint_action_complete" in names
    ids = [int(e["id"]) for e in answer["events"]]
    assert _contiguous(ids)


def test_a_new_task_with_a_taken_id_is_refused_on_another_replica(cluster: Cluster) -> None:
    a, b, _ = cluster.replicas
    task_id = f"t-{uuid.uuid4().hex[:8]}"
    done = call(a.url, cluster.key, "POST", "/message", json={"body": "mine", "task_id": task_id})
    assert done.status_code == 200, done.text
    again = call(
        b.url, cluster.key, "POST", "/message", json={"body": "mine too", "task_id": task_id}
    )
    assert again.status_code == 409
    assert "already exists" in again.json()["detail"]


# --- MAP Mail across replicas ----------------------------------------------------------------


def _rpc(replica: Replica, key: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    answer = call(
        replica.url,
        key,
        "POST",
        "/map",
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert "result" in body, body
    return dict(body["result"])


def test_map_events_subscribed_on_a_stream_from_b_with_changes_made_on_c(
    cluster: Cluster,
) -> None:
    a, b, c = cluster.replicas
    subscribed = _rpc(a, cluster.key, "map/subscribe", {"filter": {}})
    sid = subscribed["subscriptionId"]

    async def scenario() -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = []
        opened, both = asyncio.Event(), asyncio.Event()

        async def listen() -> None:
            frame: dict[str, Any] = {}
            async with (
                _client(b, cluster.key) as client,
                client.stream("GET", "/map/events", params={"subscription": sid}) as response,
            ):
                assert response.status_code == 200, await response.aread()
                opened.set()
                async for line in response.aiter_lines():
                    done = read_line(frame, line)
                    if done is not None and done["event"] == "map/event":
                        got.append(done["data"]["params"]["event"])
                        if {"mail.created", "mail.turn.added"} <= {e["type"] for e in got}:
                            both.set()

        listening = asyncio.create_task(listen())
        await asyncio.wait_for(opened.wait(), 10)
        created = await asyncio.to_thread(
            _rpc, c, cluster.key, "mail/create", {"type": "multi-agent", "subject": "across"}
        )
        conversation = created["conversation"]["id"]
        turn = {"conversationId": conversation, "contentType": "text", "content": {"text": "hi"}}
        await asyncio.to_thread(_rpc, a, cluster.key, "mail/turn", turn)
        await asyncio.wait_for(both.wait(), 10)
        gone = await asyncio.to_thread(
            _rpc, c, cluster.key, "map/unsubscribe", {"subscriptionId": sid}
        )
        assert gone == {"unsubscribed": True}
        await asyncio.wait_for(listening, 10)  # B's stream ends once C unsubscribed
        return got

    got = asyncio.run(scenario())
    types = [e["type"] for e in got]
    assert "mail.created" in types and "mail.turn.added" in types, types
    ids = [int(e["id"]) for e in got]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    # another caller cannot read the subscription from any replica
    answer = call(c.url, cluster.key, "GET", "/map/events", params={"subscription": sid})
    assert answer.status_code == 404  # unsubscribed: gone everywhere


def test_map_events_resume_on_another_replica_with_the_same_numbers_and_ids(
    cluster: Cluster,
) -> None:
    a, b, c = cluster.replicas
    sid = _rpc(a, cluster.key, "map/subscribe", {"filter": {"eventTypes": ["mail.turn.added"]}})[
        "subscriptionId"
    ]
    conversation = _rpc(c, cluster.key, "mail/create", {"subject": "resumed"})["conversation"]["id"]

    def say(replica: Replica, text: str) -> None:
        turn = {"conversationId": conversation, "contentType": "text", "content": {"text": text}}
        _rpc(replica, cluster.key, "mail/turn", turn)

    async def read(replica: Replica, count: int, last: str | None = None) -> list[Any]:
        got: list[dict[str, Any]] = []
        frame: dict[str, Any] = {}
        headers = {"Last-Event-ID": last} if last is not None else {}
        async with (
            _client(replica, cluster.key) as client,
            client.stream(
                "GET", "/map/events", params={"subscription": sid}, headers=headers
            ) as response,
        ):
            assert response.status_code == 200, await response.aread()
            async for line in response.aiter_lines():
                done = read_line(frame, line)
                if done is not None and done["event"] == "map/event":
                    assert str(done["id"]) == done["data"]["params"]["eventId"]
                    got.append(done["data"]["params"])
                    if len(got) == count:
                        return got
        return got

    say(a, "n1")
    [first] = asyncio.run(asyncio.wait_for(read(b, 1), 20))
    say(c, "n2")
    say(b, "n3")
    missed = asyncio.run(asyncio.wait_for(read(a, 2, last=first["eventId"]), 20))
    again = asyncio.run(asyncio.wait_for(read(c, 3), 20))  # a third replica, from the start
    replayed = _rpc(c, cluster.key, "map/replay", {"afterEventId": first["eventId"], "limit": 10})[
        "events"
    ]

    def texts(found: list[dict[str, Any]]) -> list[tuple[str, int]]:
        return [(p["event"]["data"]["turn"]["content"]["text"], p["sequenceNumber"]) for p in found]

    assert texts([first]) == [("n1", 1)]
    assert texts(missed) == [("n2", 2), ("n3", 3)]
    assert texts(again) == [("n1", 1), ("n2", 2), ("n3", 3)]
    assert [p["eventId"] for p in again] == [first["eventId"]] + [p["eventId"] for p in missed]
    turns = [e for e in replayed if e["event"]["type"] == "mail.turn.added"]
    assert [e["eventId"] for e in turns] == [p["eventId"] for p in missed]


def test_map_events_pushed_on_a_socket_of_b_for_changes_made_on_c(cluster: Cluster) -> None:
    # the /map WebSocket of a replica `mail server` runs (its uvicorn options), fed by Redis
    _, b, c = cluster.replicas

    async def scenario() -> tuple[Any, ...]:
        async def call_on(ws: Any, request_id: int, method: str, params: Any) -> Any:
            request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            await ws.send(json.dumps(request))
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

        url = b.url.replace("http://", "ws://") + "/map"
        async with connect(url, proxy=None, open_timeout=10) as ws:
            auth = {"method": "api-key", "credential": cluster.key}
            connected = await call_on(ws, 1, "map/connect", {"auth": auth})
            subscribed = await call_on(
                ws, 2, "map/subscribe", {"filter": {"eventTypes": ["mail.created"]}}
            )
            params = {"subject": "to a socket"}
            created = await asyncio.to_thread(_rpc, c, cluster.key, "mail/create", params)
            note = json.loads(await asyncio.wait_for(ws.recv(), 10))
        return connected, subscribed, created, note

    connected, subscribed, created, note = asyncio.run(scenario())
    assert connected["result"]["participantId"] == "user:carol"
    assert note["method"] == "map/event"
    assert note["params"]["subscriptionId"] == subscribed["result"]["subscriptionId"]
    assert note["params"]["event"]["data"]["conversationId"] == created["conversation"]["id"]


def test_a_bound_tasks_turns_are_written_once_whichever_replicas_read(
    cluster: Cluster,
) -> None:
    a, b, c = cluster.replicas
    task_id = f"bound-{uuid.uuid4().hex[:8]}"
    created = _rpc(a, cluster.key, "mail/create", {"taskId": task_id})
    conversation = created["conversation"]["id"]
    answer = call(b.url, cluster.key, "POST", "/message", json={"body": "hi", "task_id": task_id})
    assert answer.status_code == 200, answer.text

    async def read_everywhere() -> list[list[dict[str, Any]]]:
        params = {"conversationId": conversation}
        reads = [
            asyncio.to_thread(_rpc, replica, cluster.key, "mail/turns/list", params)
            for replica in (a, c, b, a, c)
        ]
        return [r["turns"] for r in await asyncio.gather(*reads)]

    first = asyncio.run(read_everywhere())
    turns = _rpc(c, cluster.key, "mail/turns/list", {"conversationId": conversation})["turns"]
    texts = [t["content"]["text"] for t in turns if t["contentType"] == "text"]
    assert texts[0] == "hi" and len(texts) >= 2  # the caller's message, the answers
    ids = [t["source"].get("messageId") for t in turns if t["contentType"] == "text"]
    assert len(ids) == len(set(ids))  # none written twice
    assert all(t["metadata"]["taskId"] == task_id for t in turns)
    assert all(read == turns[: len(read)] for read in first)  # each read a prefix of the last


def test_a_conversation_shared_on_a_is_read_and_written_by_the_guest_on_b_and_c(
    cluster: Cluster,
) -> None:
    a, b, c = cluster.replicas
    made = call(a.url, cluster.admin_key, "POST", "/keys", json={"role": "user", "id": "dave"})
    assert made.status_code == 201, made.text
    guest = made.json()["key"]
    cid = _rpc(a, cluster.key, "mail/create", {"subject": "shared"})["conversation"]["id"]
    body = {"jsonrpc": "2.0", "id": 1, "method": "mail/get", "params": {"conversationId": cid}}
    before = call(c.url, guest, "POST", "/map", json=body).json()
    invite = {"conversationId": cid, "participant": {"id": "user:dave"}}
    _rpc(b, cluster.key, "mail/invite", invite)
    turn = {"conversationId": cid, "contentType": "text", "content": {"text": "from dave"}}
    said = _rpc(c, guest, "mail/turn", turn)["turn"]
    turns = _rpc(a, cluster.key, "mail/turns/list", {"conversationId": cid})["turns"]
    assert before["error"]["code"] == 10000
    assert said["participantId"] == "user:dave"
    assert [t["id"] for t in turns] == [said["id"]]


def test_a_guest_lists_and_follows_on_b_a_conversation_shared_on_a_and_c(
    cluster: Cluster,
) -> None:
    a, b, c = cluster.replicas
    made = call(a.url, cluster.admin_key, "POST", "/keys", json={"role": "user", "id": "erin"})
    assert made.status_code == 201, made.text
    guest = made.json()["key"]

    def say(replica: Replica, cid: str, text: str, **extra: Any) -> str:
        turn = {"conversationId": cid, "contentType": "text", "content": {"text": text}}
        return str(_rpc(replica, cluster.key, "mail/turn", {**turn, **extra})["turn"]["id"])

    async def scenario() -> tuple[list[tuple[str, Any]], str, str, str]:
        async def call_on(ws: Any, request_id: int, method: str, params: Any) -> Any:
            request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            await ws.send(json.dumps(request))
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

        url = b.url.replace("http://", "ws://") + "/map"
        async with connect(url, proxy=None, open_timeout=10) as ws:
            auth = {"method": "api-key", "credential": guest}
            await call_on(ws, 1, "map/connect", {"auth": auth})
            await call_on(ws, 2, "map/subscribe", {"filter": {}})
            created = await asyncio.to_thread(_rpc, a, cluster.key, "mail/create", {})
            cid = created["conversation"]["id"]
            invite = {"conversationId": cid, "participant": {"id": "user:erin"}}
            await asyncio.to_thread(_rpc, c, cluster.key, "mail/invite", invite)
            public = await asyncio.to_thread(say, a, cid, "to all")
            only = {"type": "participants", "ids": ["user:carol"]}
            await asyncio.to_thread(say, c, cid, "to carol", visibility=only)
            last = await asyncio.to_thread(say, a, cid, "to all again")
            got: list[tuple[str, Any]] = []
            while not got or got[-1][1] != last:
                note = json.loads(await asyncio.wait_for(ws.recv(), 10))
                event = note["params"]["event"]
                got.append((event["type"], (event["data"].get("turn") or {}).get("id")))
        return got, cid, public, last

    got, cid, public, last = asyncio.run(scenario())
    assert got == [
        ("mail.participant.joined", None),
        ("mail.turn.added", public),
        ("mail.turn.added", last),
    ]
    listed = _rpc(c, guest, "mail/list", {})["conversations"]
    assert [(x["id"], x["x-guest"]["role"]) for x in listed] == [(cid, "worker")]
    mail = {"filter": {"mail": {"conversationId": cid}, "eventTypes": ["mail.turn.added"]}}
    replayed = _rpc(a, guest, "map/replay", mail)["events"]
    assert [e["event"]["data"]["turn"]["id"] for e in replayed] == [public, last]


# --- fail-over ------------------------------------------------------------------------------


def test_a_request_retried_on_other_replicas_is_answered_as_the_first_not_run_again(
    cluster: Cluster,
) -> None:
    """A client whose connection to A dropped retries on B while A runs the task, then on C
    after it ended: each gets A's answer (B follows the turn on A), and the task ran once."""
    a, b, c = cluster.replicas
    ask = {"body": "What is 12 * (3 + 4)?", "task_id": f"r-{uuid.uuid4().hex[:8]}"}

    async def scenario() -> list[httpx.Response]:
        async with _client(a, cluster.key) as on_a, _client(b, cluster.key) as on_b:
            first = asyncio.create_task(on_a.post("/message", json=ask))
            for _ in range(200):  # B knows the task once A stored its first events
                if (await on_b.get("/task", params={"task_id": ask["task_id"]})).is_success:
                    break
                await asyncio.sleep(0.02)
            retried = await on_b.post("/message", json=ask)
            return [await first, retried]

    first, on_b = asyncio.run(scenario())
    on_c = call(c.url, cluster.key, "POST", "/message", json=ask)
    other = call(c.url, cluster.key, "POST", "/message", json={**ask, "body": "something else"})
    assert [first.status_code, on_b.status_code, on_c.status_code] == [200, 200, 200], (
        first.text,
        on_b.text,
        on_c.text,
    )
    assert first.json()["response"] == on_b.json()["response"] == on_c.json()["response"]
    assert first.json()["status"] == on_b.json()["status"] == on_c.json()["status"] == "completed"
    assert other.status_code == 409
    record = call(a.url, cluster.key, "GET", "/task", params={"task_id": ask["task_id"]}).json()
    users = [
        e
        for e in record["events"]
        if e["event"] == "new_message" and '"address_type":"user"' in e["data"]
    ]
    assert len(users) == 1  # it ran once


async def _stream_until_cut(replica: Replica, key: str, seen: Seen, started: asyncio.Event) -> None:
    body = {"body": f"job {seen.task_id}", "task_id": seen.task_id, "stream": True}
    try:
        async with (
            _client(replica, key) as client,
            client.stream("POST", "/message", json=body) as response,
        ):
            await _read(response, seen, started)
    except (httpx.TransportError, httpx.StreamError):
        pass  # the replica went away: the client reconnects elsewhere


async def _rest_from(replica: Replica, key: str, seen: Seen) -> None:
    """Reconnect to ``replica`` with the last event id seen; add what comes to ``seen``."""
    if seen.final is not None:
        return
    rest = Seen()
    await _events(replica, key, seen.task_id, seen.events[-1][0], rest)
    seen.events += rest.events
    seen.final, seen.final_event = rest.final, rest.final_event


def test_a_replica_that_loses_a_lease_stops_running_the_task(cluster: Cluster) -> None:
    """As if A had been cut off from the database past its lease: the lease goes to a
    replica that does not exist, so another replica takes it over and A's renewal finds it
    lost; or A claims the expired lease first and stops its own copy as it would for
    another replica, then carries the store's on. Either way A's stream ends with no
    final event, even when its turn ended just before."""
    a, b, _ = cluster.replicas
    task_id = f"t-{uuid.uuid4().hex[:8]}"

    async def scenario() -> Seen:
        seen, started = Seen(task_id=task_id), asyncio.Event()
        streaming = asyncio.create_task(_stream_until_cut(a, cluster.key, seen, started))
        await asyncio.wait_for(started.wait(), 10)
        conn = await asyncpg.connect(cluster.env["DATABASE_URL"], timeout=5)
        try:
            await conn.execute(
                "UPDATE cluster_task_leases SET owner = 'gone', "
                "expires_at = now() - interval '1 second' WHERE task_id = $1",
                task_id,
            )
        finally:
            await conn.close()
        await asyncio.wait_for(streaming, 30)  # A ends its stream: no final event of its own
        assert seen.final is None, seen
        await asyncio.wait_for(_rest_from(b, cluster.key, seen), 30)
        return seen

    seen = asyncio.run(scenario())
    names = [e for _, e in seen.events]
    assert _contiguous([i for i, _ in seen.events]), seen.events  # no gap, no duplicate
    assert names.count("task_taken_over") == 1, names
    assert seen.final_event == "task_complete" and seen.final is not None
    assert seen.final["status"] == "completed"
    log = a.output()
    assert "lost the lease of task " + task_id in log or f"took over task {task_id}" in log


async def _stream_past_action(replica: Replica, key: str, seen: Seen, acted: asyncio.Event) -> None:
    """Stream an arithmetic task (its turn runs an action) on ``replica``; ``acted`` is
    set once its ``action_complete`` event came."""
    body = {"body": "What is 12 * (3 + 4)?", "task_id": seen.task_id, "stream": True}
    frame: dict[str, Any] = {}
    try:
        async with (
            _client(replica, key, timeout=60) as client,
            client.stream("POST", "/message", json=body) as response,
        ):
            async for line in response.aiter_lines():
                done = read_line(frame, line)
                if done is None or done["event"] == "ping":
                    continue
                if "id" in done:
                    seen.events.append((done["id"], done["event"]))
                    if done["event"] == "action_complete":
                        acted.set()
                else:
                    seen.final, seen.final_event = done["data"], done["event"]
    except (httpx.TransportError, httpx.StreamError):
        pass


async def _ask_past_action(replica: Replica, key: str, task_id: str) -> httpx.Response:
    body = {"body": "What is 6 * 7?", "task_id": task_id}
    async with _client(replica, key, timeout=60) as client:
        return await client.post("/message", json=body)


async def _stored_ends(database_url: str, task_ids: list[str]) -> dict[str, tuple[str, list[str]]]:
    """Per task: its stored state and the names of its stored closing events."""
    conn = await asyncpg.connect(database_url, timeout=5)
    try:
        rows = await conn.fetch(
            "SELECT task_id, state FROM tasks WHERE task_id = ANY($1::text[])", task_ids
        )
        events = await conn.fetch(
            "SELECT task_id, event_type FROM task_events WHERE task_id = ANY($1::text[]) "
            "AND event_type IN ('task_complete', 'task_interrupted') ORDER BY task_id, seq",
            task_ids,
        )
    finally:
        await conn.close()
    ends: dict[str, tuple[str, list[str]]] = {r["task_id"]: (r["state"], []) for r in rows}
    for e in events:
        ends[e["task_id"]][1].append(e["event_type"])
    return ends


def test_a_stopped_replica_that_lost_its_leases_ends_no_task_a_second_time(
    cluster: Cluster,
) -> None:
    """SIGSTOP B while it runs tasks that ran an action, past its leases: another replica
    takes them and ends them interrupted. Once B goes on, its writes of those tasks are
    fenced off (its lease is gone): no task is stored as ended twice, B tells none of its
    clients that such a task completed, and its streams end so the clients follow the
    task where it is now."""
    _, b, c = cluster.replicas
    count = 4
    streamed = [Seen(task_id=f"s-{n}-{uuid.uuid4().hex[:6]}") for n in range(count)]
    asked = [f"j-{n}-{uuid.uuid4().hex[:6]}" for n in range(count)]

    async def scenario() -> list[httpx.Response]:
        acted = [asyncio.Event() for _ in range(count)]
        streams = [
            asyncio.create_task(_stream_past_action(b, cluster.key, streamed[n], acted[n]))
            for n in range(count)
        ]
        answers = [asyncio.create_task(_ask_past_action(b, cluster.key, t)) for t in asked]
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in acted)), 30)
        b.process.send_signal(signal.SIGSTOP)
        try:
            conn = await asyncpg.connect(cluster.env["DATABASE_URL"], timeout=5)
            try:  # wait until the others took B's leases (it renews none while stopped)
                for _ in range(400):
                    held = await conn.fetchval(
                        "SELECT count(*) FROM cluster_task_leases WHERE owner = $1", b.id
                    )
                    if held == 0:
                        break
                    await asyncio.sleep(0.05)
                else:
                    raise AssertionError("B's leases were never taken over")
            finally:
                await conn.close()
        finally:
            b.process.send_signal(signal.SIGCONT)
        await asyncio.wait_for(asyncio.gather(*streams), 60)
        return list(await asyncio.wait_for(asyncio.gather(*answers), 60))

    answers = asyncio.run(scenario())
    ids = [s.task_id for s in streamed] + asked
    ends = asyncio.run(_stored_ends(cluster.env["DATABASE_URL"], ids))
    for task_id in ids:
        state, closing = ends[task_id]
        assert len(closing) == 1, (task_id, state, closing)  # ended once
    for seen in streamed:
        state, _ = ends[seen.task_id]
        if seen.final is not None:  # B told it: then that is how it ended
            assert seen.final["status"] == ("completed" if state == "completed" else "failed")
        rest = Seen(task_id=seen.task_id)
        asyncio.run(_events(c, cluster.key, seen.task_id, 0, rest))
        assert rest.final is not None
        assert rest.final["status"] == ("completed" if state == "completed" else "failed")
    for task_id, answer in zip(asked, answers, strict=True):
        state, _ = ends[task_id]
        assert answer.status_code == 200, answer.text
        assert answer.json()["status"] == ("completed" if state == "completed" else "failed")
    interrupted = [t for t in ids if ends[t][0] == "interrupted"]
    assert interrupted, ends  # the stop came while the tasks ran, not after
    assert "another replica holds its lease" in b.output() or "lost the lease" in b.output()


class _ProxyThread:
    """A :class:`TcpProxy` on a loop of its own thread (the cluster tests block theirs)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.proxy = TcpProxy(target)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self) -> _ProxyThread:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.proxy.start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.proxy.close(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def cut(self) -> None:
        self._loop.call_soon_threadsafe(self.proxy.cut)


async def _leases_of(database_url: str, owner: str) -> int:
    conn = await asyncpg.connect(database_url, timeout=5)
    try:
        count: int = await conn.fetchval(
            "SELECT count(*) FROM cluster_task_leases WHERE owner = $1", owner
        )
    finally:
        await conn.close()
    return count


def test_a_task_that_ends_while_redis_is_down_gives_its_lease_up(cluster: Cluster) -> None:
    """D loses Redis while it runs tasks: they end (stored in PostgreSQL), and their
    leases are released although the end could not be published (they were renewed
    forever before)."""
    redis = urlsplit(cluster.env["MAIL_REDIS_URL"])
    with _ProxyThread((redis.hostname or "127.0.0.1", redis.port or 6379)) as proxy:
        url = redis._replace(netloc=f"127.0.0.1:{proxy.proxy.port}").geturl()
        d = _start("d", cluster.env | {"MAIL_REDIS_URL": url}, cluster.root, cluster.swarms, "slow")
        try:
            database = cluster.env["DATABASE_URL"]

            async def scenario() -> list[httpx.Response]:
                async with _client(d, cluster.key) as client:
                    asks = [
                        asyncio.create_task(
                            client.post("/message", json={"body": f"What is {n} * 7?"})
                        )
                        for n in range(3)
                    ]
                    for _ in range(400):  # the three run on D
                        if await _leases_of(database, d.id) >= 3:
                            break
                        await asyncio.sleep(0.02)
                    proxy.cut()  # Redis goes away for D
                    return list(await asyncio.gather(*asks))

            answers = asyncio.run(scenario())
            assert [a.status_code for a in answers] == [200] * 3, [a.text for a in answers]
            assert {a.json()["status"] for a in answers} == {"completed"}

            async def released() -> int:
                for _ in range(400):
                    if (left := await _leases_of(database, d.id)) == 0:
                        return 0
                    await asyncio.sleep(0.025)
                return left

            assert asyncio.run(released()) == 0
        finally:
            d.stop()


def test_a_replica_stopped_with_sigterm_leaves_its_tasks_to_the_others(cluster: Cluster) -> None:
    a, b, c = cluster.replicas
    count = 10

    async def scenario() -> list[Seen]:
        started = [asyncio.Event() for _ in range(count)]
        seen = [Seen(task_id=f"g-{n}-{uuid.uuid4().hex[:6]}") for n in range(count)]
        streams = [
            asyncio.create_task(_stream_until_cut(c, cluster.key, seen[n], started[n]))
            for n in range(count)
        ]
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started)), 30)
        c.process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(asyncio.gather(*streams), 60)
        rests = [_rest_from((a, b)[n % 2], cluster.key, seen[n]) for n in range(count)]
        await asyncio.wait_for(asyncio.gather(*rests), 60)
        return seen

    seen = asyncio.run(scenario())
    assert c.process.wait(timeout=30) == -signal.SIGTERM  # a clean stop, as uvicorn's
    for one in seen:
        assert _contiguous([i for i, _ in one.events]), (one.task_id, one.events)
        assert one.final_event == "task_complete", (one.task_id, one.events, one.final)
        assert one.final is not None and one.final["status"] == "completed"
    # C comes back under the same id and serves again
    cluster.replicas[2] = _start("c", cluster.env, cluster.root, cluster.swarms, "slow")
    health = httpx.get(f"{cluster.replicas[2].url}/health", trust_env=False).json()
    assert health["replica_id"] == c.id


def test_killing_the_replica_running_50_tasks_hands_them_to_the_others(cluster: Cluster) -> None:
    a, b, c = cluster.replicas

    async def scenario() -> tuple[list[Seen], float]:
        started = [asyncio.Event() for _ in range(TASKS)]
        seen = [Seen(task_id=f"f-{n}-{uuid.uuid4().hex[:6]}") for n in range(TASKS)]

        streams = [
            asyncio.create_task(_stream_until_cut(a, cluster.key, seen[n], started[n]))
            for n in range(TASKS)
        ]
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started)), 60)
        a.process.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*streams), 30)

        rests = [_rest_from((b, c)[n % 2], cluster.key, seen[n]) for n in range(TASKS)]
        await asyncio.wait_for(asyncio.gather(*rests), 60)
        return seen, time.monotonic() - killed

    seen, took = asyncio.run(scenario())
    for one in seen:
        ids = [i for i, _ in one.events]
        assert _contiguous(ids), (one.task_id, one.events)  # no gap, no duplicate
        assert one.final_event == "task_complete", (one.task_id, one.events, one.final)
        assert one.final is not None and one.final["status"] == "completed"
    taken_over = sum(1 for one in seen if ("task_taken_over" in {e for _, e in one.events}))
    assert taken_over > 0  # the kill came while tasks ran, not after
    assert took < LEASE + 2 * DELAY + 8, f"fail-over took {took:.1f}s"
    _ = a.process.wait(timeout=10)
