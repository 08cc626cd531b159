"""The ``/map`` WebSocket against a real server with a real client (``websockets``):
authentication (the upgrade's header, ``map/connect`` auth, ``map/authenticate``, the
refusals, the deadline), the session, ``map/disconnect``, a subscription's events pushed
on the socket while a task runs, ``map/unsubscribe``, the limits (frame size, pending
requests), bad JSON and batches."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.persistence.conftest import eventually
from tests.server.conftest import Running, Start, gated_swarm, make_config, within
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from mail.db.store import CallerKey

pytestmark = pytest.mark.timeout(60)

HELLO = {"contentType": "text", "content": {"text": "hello"}}
#: the rows and subscriptions of user u1 (the key ``user-key``) on the offline swarm
U1 = CallerKey(swarm="offline", role="user", id="u1")


class Peer:
    """The client side of a socket: requests by id, the server's notifications apart, and
    how the socket was closed."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.answers: dict[Any, asyncio.Future[Any]] = {}
        self.notes: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.unmatched: asyncio.Queue[dict[str, Any]] = asyncio.Queue()  # answers to id null
        self.received: list[Any] = []  # every message, in order
        self.closed = asyncio.Event()
        self._ids = 0
        self._reader = asyncio.create_task(self._read(), name="test-peer-reader")

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                message = json.loads(raw)
                self.received.append(message)
                if isinstance(message, dict) and "method" in message:
                    self.notes.put_nowait(message)
                elif isinstance(message, dict) and message["id"] is None:
                    self.unmatched.put_nowait(message)
                else:  # a response, or a batch's: each id of it gets the frame
                    for item in message if isinstance(message, list) else [message]:
                        if item["id"] is not None:
                            self._future(item["id"]).set_result(message)
        except ConnectionClosed:
            pass
        finally:
            self.closed.set()

    def _future(self, request_id: Any) -> asyncio.Future[Any]:
        return self.answers.setdefault(request_id, asyncio.Future())

    async def send(self, document: Any) -> None:
        await self.ws.send(document if isinstance(document, str) else json.dumps(document))

    async def answer(self, request_id: Any) -> Any:
        """The frame that answered ``request_id`` (a batch's list, or the response)."""
        return await within(self._future(request_id))

    def answered(self, request_id: Any) -> bool:
        return self._future(request_id).done()

    def request(self, method: str, params: Any = None) -> tuple[int, dict[str, Any]]:
        self._ids += 1
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self._ids, "method": method}
        if params is not None:
            body["params"] = params
        return self._ids, body

    async def call(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request and wait for its response (``result`` or ``error``)."""
        request_id, body = self.request(method, params)
        await self.send(body)
        answer: dict[str, Any] = await self.answer(request_id)
        assert answer["jsonrpc"] == "2.0" and answer["id"] == request_id
        return answer

    async def result(self, method: str, params: Any = None) -> Any:
        answer = await self.call(method, params)
        assert "result" in answer, answer
        return answer["result"]

    async def note(self) -> dict[str, Any]:
        return await within(self.notes.get())

    def notes_now(self) -> list[dict[str, Any]]:
        """The notifications received and not taken yet (taken now)."""
        taken = []
        while not self.notes.empty():
            taken.append(self.notes.get_nowait())
        return taken

    async def until_closed(self) -> tuple[int | None, str | None]:
        await within(self.closed.wait())
        return self.ws.close_code, self.ws.close_reason

    async def aclose(self) -> None:
        await self.ws.close()
        await within(self._reader)


@asynccontextmanager
async def peer(running: Running, key: str | None = None) -> AsyncIterator[Peer]:
    """A socket on ``running``'s ``/map``; ``key`` goes in the upgrade's header."""
    url = running.url.replace("http://", "ws://") + "/map"
    headers = {"Authorization": f"Bearer {key}"} if key is not None else None
    async with connect(url, additional_headers=headers, proxy=None, open_timeout=15) as ws:
        client = Peer(ws)
        try:
            yield client
        finally:
            await client.aclose()


def error_of(answer: dict[str, Any]) -> tuple[int, str]:
    assert "error" in answer, answer
    return answer["error"]["code"], answer["error"]["message"]


# --- authentication ------------------------------------------------------------------------


async def test_header_auth_and_the_session(offline: Running) -> None:
    async with peer(offline, "user-key") as one, peer(offline, "user-key") as two:
        connected = await one.result(
            "map/connect", {"protocolVersion": 1, "participantType": "client"}
        )
        again = await one.result("map/connect", {})
        other = await two.result("map/connect", {})
        listed = await one.result("mail/list", {})
    assert connected["protocolVersion"] == 1
    assert connected["participantId"] == "user:u1"
    assert connected["sessionId"] and connected["sessionId"] == again["sessionId"]
    assert other["sessionId"] != connected["sessionId"]  # one session per socket
    assert connected["capabilities"]["mail"]["enabled"] is True
    assert connected["systemInfo"]["name"] == "mail"
    assert connected["principal"] == {"id": "user:u1", "claims": {"role": "user"}}
    assert connected["reconnected"] is False
    assert connected["server"]["swarm"] == "offline"
    assert "authRequired" not in connected
    assert listed["conversations"] == []


@pytest.mark.parametrize(("method", "key", "participant"), [
    ("api-key", "user-key", "user:u1"),
    ("bearer", "admin-key", "admin:admin1"),
])  # fmt: skip
async def test_connect_authenticates_with_params_auth(
    offline: Running, method: str, key: str, participant: str
) -> None:
    async with peer(offline) as client:
        connected = await client.result(
            "map/connect", {"auth": {"method": method, "credential": key}}
        )
        created = await client.result("mail/create", {"subject": "s"})
    assert connected["participantId"] == participant
    assert connected["principal"]["id"] == participant
    assert created["participant"]["id"] == participant


async def test_authenticate_after_a_connect_without_auth(offline: Running) -> None:
    async with peer(offline) as client:
        connected = await client.result("map/connect", {"participantType": "client"})
        refused = await client.call("mail/list", {})
        wrong = await client.result("map/authenticate", {"method": "api-key", "credential": "nope"})
        right = await client.result(
            "map/authenticate", {"method": "api-key", "credential": "user-key"}
        )
        listed = await client.result("mail/list", {})
    assert connected["authRequired"] == {"methods": ["api-key", "bearer"], "required": True}
    assert "participantId" not in connected and connected["capabilities"] == {}
    assert error_of(refused)[0] == 1000
    assert wrong == {
        "success": False,
        "error": {"code": "invalid_credentials", "message": "invalid API key"},
    }
    assert right["success"] is True
    assert right["sessionId"] == connected["sessionId"]
    assert right["participantId"] == "user:u1"
    assert listed["conversations"] == []


async def test_nothing_but_the_handshake_before_authentication(offline: Running) -> None:
    async with peer(offline) as client:
        created = await client.call("mail/create", {"subject": "early"})
        subscribed = await client.call("map/subscribe", {})
        request_id, body = client.request("map/send", {"payload": {"body": "hi"}})
        await client.send([body, {"jsonrpc": "2.0", "method": "mail/create", "params": {}}])
        batch = await client.answer(request_id)
    code, message = error_of(created)
    assert code == 1000 and "map/connect" in message and "map/authenticate" in message
    assert error_of(subscribed)[0] == 1000
    assert [error_of(a)[0] for a in batch] == [1000]  # the notification is not answered
    user = await offline.user()
    listed = await user.post("/map", json={"jsonrpc": "2.0", "id": 1, "method": "mail/list"})
    assert listed.json()["result"]["conversations"] == []  # nothing was created
    assert offline.state.map_events.listening_to(U1) is False


async def test_wrong_keys_and_methods_are_refused(offline: Running) -> None:
    url = offline.url.replace("http://", "ws://") + "/map"
    headers = {"Authorization": "Bearer nope"}
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url, additional_headers=headers, proxy=None):
            pass
    assert refused.value.response.status_code == 401
    assert json.loads(refused.value.response.body or b"{}") == {"detail": "invalid API key"}
    async with peer(offline) as client:
        wrong = await client.call("map/connect", {"auth": {"method": "api-key", "credential": "x"}})
        mtls = await client.call("map/connect", {"auth": {"method": "mtls"}})
        empty = await client.call("map/connect", {"auth": {"method": "bearer", "credential": ""}})
        still = await client.call("mail/list", {})
    assert error_of(wrong) == (1001, "invalid API key")
    assert error_of(mtls)[0] == 1005 and "'mtls'" in error_of(mtls)[1]
    assert error_of(empty)[0] == 1001
    assert error_of(still)[0] == 1000


async def test_a_session_keeps_its_caller(offline: Running) -> None:
    async with peer(offline, "user-key") as client:
        same = await client.call(
            "map/connect", {"auth": {"method": "api-key", "credential": "user-key"}}
        )
        other = await client.call(
            "map/authenticate", {"method": "api-key", "credential": "user2-key"}
        )
        who = await client.result("mail/create", {})
    assert same["result"]["participantId"] == "user:u1"
    assert other["result"]["success"] is False
    assert other["result"]["error"]["code"] == "insufficient_scope"
    assert who["participant"]["id"] == "user:u1"


async def test_a_socket_that_does_not_authenticate_is_closed(start: Start) -> None:
    running = await start(map_auth_deadline=0.3)
    async with peer(running, "user-key") as authenticated, peer(running) as silent:
        code, reason = await silent.until_closed()
        # opened earlier, so past its deadline too: it has none
        still = await authenticated.result("mail/list", {})
    assert code == 1008
    assert reason is not None and reason.startswith("not authenticated within 0.3 s")
    assert still["conversations"] == []


# --- the session ---------------------------------------------------------------------------


async def test_disconnect_answers_then_closes_and_ends_subscriptions(offline: Running) -> None:
    async with peer(offline, "user-key") as client:
        connected = await client.result("map/connect", {})
        sid = (await client.result("map/subscribe", {}))["subscriptionId"]
        left = await client.result("map/disconnect", {"reason": "bye"})
        code, _ = await client.until_closed()
    assert left["session"]["id"] == connected["sessionId"]
    assert left["session"]["closedAt"] >= left["session"]["createdAt"]
    assert code == 1000

    async def forgotten() -> bool:
        return offline.state.map_events.get(U1, sid) is None

    await eventually(forgotten, what="the socket's subscription ends with it")


async def test_closing_the_socket_ends_its_subscriptions(offline: Running) -> None:
    async with peer(offline, "user-key") as client:
        sid = (await client.result("map/subscribe", {}))["subscriptionId"]
        assert offline.state.map_events.get(U1, sid) is not None

    async def forgotten() -> bool:
        return offline.state.map_events.get(U1, sid) is None

    await eventually(forgotten, what="the socket's subscription ends with it")


# --- events --------------------------------------------------------------------------------


async def test_events_are_pushed_while_a_task_runs(start: Start) -> None:
    gate = asyncio.Event()
    template, _ = gated_swarm(gate)
    running = await start(template=template)
    try:
        async with peer(running, "user-key") as client:
            subscribed = await client.result(
                "map/subscribe", {"filter": {"eventTypes": ["mail.turn.added"]}}
            )
            request_id, body = client.request(
                "mail/create",
                {"startTask": True, "initialTurn": {**HELLO, "content": {"text": "job"}}},
            )
            await client.send(body)
            first = await client.note()  # the initial turn, while the worker waits
            assert not client.answered(request_id)  # the task still runs
            listed = await client.result("mail/list", {})  # and the socket still answers
            gate.set()
            created = (await client.answer(request_id))["result"]
    finally:
        gate.set()
    assert set(subscribed) == {"subscriptionId"}  # its events come on the socket
    assert first["method"] == "map/event"
    params = first["params"]
    assert params["subscriptionId"] == subscribed["subscriptionId"]
    assert params["event"]["type"] == "mail.turn.added"
    assert params["event"]["data"]["turn"]["content"]["text"] == "job"
    assert params["event"]["data"]["turn"]["id"] == created["initialTurn"]["id"]
    assert [c["id"] for c in listed["conversations"]] == [created["conversation"]["id"]]
    assert created["task"]["status"] == "completed"
    # the notification came before the answer of the request whose task emitted it
    position = client.received.index(first)
    assert any(m.get("id") == request_id for m in client.received[position:])


async def test_unsubscribe_stops_the_events(offline: Running) -> None:
    async with peer(offline, "user-key") as client:
        created = {"filter": {"eventTypes": ["mail.created"]}}  # one event per mail/create
        old = (await client.result("map/subscribe", created))["subscriptionId"]
        await client.result("mail/create", {})
        seen = await client.note()
        stopped = await client.result("map/unsubscribe", {"subscriptionId": old})
        new = (await client.result("map/subscribe", created))["subscriptionId"]
        cid = (await client.result("mail/create", {}))["conversation"]["id"]
        after = await client.note()
        await client.result("mail/list", {})  # a round trip: what was pushed came before
        late = [n for n in client.notes_now() if n["params"]["subscriptionId"] == old]
    assert seen["params"]["subscriptionId"] == old
    assert stopped == {"unsubscribed": True}
    assert after["params"]["subscriptionId"] == new
    assert after["params"]["event"]["data"]["conversationId"] == cid
    assert late == []


# --- concurrency and limits ----------------------------------------------------------------


async def test_a_long_send_does_not_hold_up_other_requests(start: Start) -> None:
    gate = asyncio.Event()
    template, _ = gated_swarm(gate)
    running = await start(template=template)
    try:
        async with peer(running, "user-key") as client:
            cid = (await client.result("mail/create", {}))["conversation"]["id"]
            send_id, send = client.request("map/send", {"payload": {"body": "job"}})
            await client.send(send)
            turn = await client.result("mail/turn", {"conversationId": cid, **HELLO})
            assert not client.answered(send_id)
            gate.set()
            sent = await client.answer(send_id)
    finally:
        gate.set()
    assert turn["turn"]["conversationId"] == cid
    assert sent["result"]["status"] == "completed"
    order = [m["id"] for m in client.received if "id" in m]
    assert order.index(send_id) > order.index(send_id + 1)  # answered out of order, by id


async def test_too_many_pending_requests_are_refused(start: Start) -> None:
    gate = asyncio.Event()
    template, _ = gated_swarm(gate)
    running = await start(template=template, map_max_pending=2)
    try:
        async with peer(running, "user-key") as client:
            held = []
            for text in ("one", "two"):
                request_id, body = client.request("map/send", {"payload": {"body": text}})
                await client.send(body)
                held.append(request_id)
            refused = await client.call("mail/list", {})
            batch_id, body = client.request("mail/list", {})
            await client.send([body])
            refused_batch = await client.answer(batch_id)
            gate.set()
            answers = [await client.answer(i) for i in held]
            after = await client.call("mail/list", {})
    finally:
        gate.set()
    code, message = error_of(refused)
    assert code == 4001 and "at most 2" in message
    assert refused["error"]["data"] == {"limit": 2, "retryable": True}
    assert [error_of(a)[0] for a in refused_batch] == [4001]
    assert [a["result"]["status"] for a in answers] == ["completed", "completed"]
    assert "result" in after


async def test_a_frame_over_the_body_limit_closes_with_1009(start: Start, tmp_path: Path) -> None:
    running = await start(make_config(tmp_path, max_body_bytes=2048))
    async with peer(running, "user-key") as client:
        _, body = client.request("mail/list", {"x-padding": "a" * 1900})
        fits = len(json.dumps(body))
        answered = await client.call("mail/list", {"x-padding": "a" * 1900})
        await client.send(
            {"jsonrpc": "2.0", "id": 99, "method": "mail/list", "params": {"x": "a" * 3000}}
        )
        code, reason = await client.until_closed()
    assert fits <= 2048 and "result" in answered
    assert code == 1009
    assert reason is not None and "the limit is 2048" in reason


async def test_bad_json_batches_and_unknown_methods(offline: Running) -> None:
    async with peer(offline, "user-key") as client:
        await client.send("{not json")
        parse = await within(client.unmatched.get())
        await client.send("[]")
        empty = await within(client.unmatched.get())
        first, one = client.request("map/connect", {})
        second, two = client.request("no/such", {})
        await client.send([one, {"jsonrpc": "2.0", "method": "mail/list"}, two, 5])
        batch = await client.answer(first)
        alive = await client.result("mail/list", {})
    assert error_of(parse)[0] == -32700 and parse["id"] is None
    assert "not JSON" in error_of(parse)[1]
    assert error_of(empty) == (-32600, "an empty batch")
    assert [a.get("id") for a in batch] == [first, second, None]
    assert batch[0]["result"]["participantId"] == "user:u1"
    assert error_of(batch[1])[0] == -32601
    assert error_of(batch[2])[0] == -32600
    assert alive["conversations"] == []
