"""The proxy send of admins and users, and the protocol 1.1 surface (CONTRACT 1.5, 14)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import web
from tests.interswarm.conftest import Cluster, FakePeer, Node, agent_key, swarm, within
from tests.interswarm.test_federation import alpha_asking, answering, ask, beta_weather

from mail.core.message import (
    MAILMessage,
    create_agent_address,
    make_interswarm_message,
    make_request,
    make_response,
    new_task_id,
    validate_message,
)
from mail.core.tasks import TaskState
from mail.testing import ScriptedAgent, tc

pytestmark = pytest.mark.timeout(30)


def legacy_beta() -> Any:
    """beta, whose weather also answers a protocol 1.1 peer named ``legacy``."""
    return swarm(
        "beta",
        {
            "supervisor": ScriptedAgent(rule=lambda _m: tc("task_complete", finish_message="-")),
            "weather": answering("sunny in"),
        },
        {"supervisor": ["weather"], "weather": ["supervisor", "supervisor@legacy"]},
    )


def bare_message(**metadata: Any) -> dict[str, Any]:
    """What a protocol 1.1 peer POSTs: a MAILInterswarmMessage without task ownership."""
    message = make_request(
        task_id=new_task_id(),
        sender=create_agent_address("supervisor@legacy"),
        recipient=create_agent_address("weather@beta"),
        subject="Forecast",
        body="Tokyo",
        sender_swarm="legacy",
        recipient_swarm="beta",
    )
    data: dict[str, Any] = dict(
        make_interswarm_message(
            message=message,
            source_swarm="legacy",
            target_swarm="beta",
            task_owner="x:y@z",
            task_contributors=[],
            auth_token=None,
            metadata={"expect_response": True, **metadata},
        )
    )
    del data["task_owner"], data["task_contributors"]
    return data


def beta_answer(task_id: str, body: str) -> MAILMessage:
    """weather@beta's answer to alpha's supervisor, as posted to /interswarm/response."""
    return make_response(
        task_id=task_id,
        sender=create_agent_address("weather@beta"),
        recipient=create_agent_address("supervisor@alpha"),
        subject="Re",
        body=body,
        sender_swarm="beta",
    )


# --- outbound: a protocol 1.1 peer ---------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.1.0", "1.3.6"])
async def test_a_protocol_1_1_peer_is_asked_synchronously(cluster: Cluster, version: str) -> None:
    # no protocol_version in its GET /: legacy, whatever its version field says
    async def answer(_request: web.Request, body: Any) -> web.Response:
        reply = make_response(
            task_id=body["payload"]["task_id"],
            sender=create_agent_address("weather"),  # 1.1 peers do not qualify their sender
            recipient=body["payload"]["sender"],
            subject="Re: Forecast",
            body=f"legacy sunny in {body['payload']['body']}",
        )
        return web.json_response(reply)

    a = await cluster.start(alpha_asking("weather@legacy"))
    async with FakePeer("legacy", behaviour=answer, legacy=True, version=version) as peer:
        await cluster.link(a, peer)

        result = await ask(a, "Lima")

    assert result["response"] == "weather@legacy says: legacy sunny in Lima"
    ((path, headers, body),) = peer.received
    assert path == "/interswarm/message"
    assert headers["Authorization"] == f"Bearer {agent_key('alpha', 'legacy')}"
    assert body["payload"]["sender"] == {"address_type": "agent", "address": "supervisor@alpha"}
    assert body["metadata"]["expect_response"] is True
    assert body["task_owner"] == "user:u1@alpha"
    assert body["auth_token"] == ""  # the token travels in the header only
    names = [e["event"] for e in result["events"]]
    assert names.count("interswarm_message_sent") == 1
    assert names.count("interswarm_message_received") == 1


async def test_a_peer_reporting_protocol_version_gets_forward_whatever_its_version(
    cluster: Cluster,
) -> None:
    a = await cluster.start(alpha_asking("weather@beta"))
    async with FakePeer("beta", version="1.1.0") as peer:  # protocol_version "1.3"
        await cluster.link(a, peer)
        task_id = new_task_id()
        asking = asyncio.create_task(ask(a, "Lima", task_id=task_id))
        await within(peer.arrived.wait())
        answer = beta_answer(task_id, "sunny")
        processed = await (await a.peer("beta")).post("/interswarm/response", json=answer)
        result = await within(asking)

    assert processed.json()["status"] == "response_processed"
    assert result["response"] == "weather@beta says: sunny"
    path, _headers, body = peer.received[0]  # (a completion notice may follow)
    assert path == "/interswarm/forward"
    assert body["message"]["metadata"] == {}
    assert "/interswarm/message" not in peer.hits


# --- inbound: a protocol 1.1 peer ----------------------------------------------------------------


@pytest.mark.parametrize("with_metadata", [True, False])
async def test_a_protocol_1_1_peer_gets_its_answer_in_the_response(
    cluster: Cluster, with_metadata: bool
) -> None:
    b = await cluster.start(legacy_beta())
    bare = bare_message()
    if not with_metadata:
        del bare["metadata"]
        bare.pop("auth_token", None)  # left out when there is none

    response = await (await b.peer("legacy")).post("/interswarm/message", json=bare)

    assert response.status_code == 200, response.text
    answer = validate_message(response.json())
    assert answer["msg_type"] == "response"
    assert answer["message"]["body"] == "sunny in Tokyo"
    assert answer["message"]["sender"] == create_agent_address("weather@beta")
    assert answer["message"]["recipient"] == create_agent_address("supervisor@legacy")
    assert answer["message"]["task_id"] == bare["payload"]["task_id"]
    task = b.task_of("agent", "legacy", bare["payload"]["task_id"])
    assert task.task_owner == "swarm:legacy@legacy"
    assert task.state is TaskState.COMPLETED  # one request, one answer
    sent = [e.description for e in task.log.all() if e.event == "interswarm_message_sent"]
    assert len(sent) == 1 and "(synchronous reply)" not in sent[0]


async def test_a_protocol_1_1_peer_can_stream_the_exchange(cluster: Cluster) -> None:
    b = await cluster.start(legacy_beta())

    client = await b.peer("legacy")
    async with client.stream(
        "POST", "/interswarm/message", json=bare_message(stream=True, ignore_stream_pings=True)
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        raw = await within(response.aread())

    frames = [
        dict(line.split(": ", 1) for line in f.split("\r\n"))
        for f in raw.decode().split("\r\n\r\n")
        if f
    ]
    events = [f["event"] for f in frames]
    assert events[0] == "interswarm_message_received"
    assert events[-1] == "task_complete"
    final = json.loads(frames[-1]["data"])
    assert final["response"] == "sunny in Tokyo"
    assert "ping" not in events


async def test_an_agent_must_send_a_message_to_interswarm_message(cluster: Cluster) -> None:
    b = await cluster.start(legacy_beta())

    response = await (await b.peer("legacy")).post(
        "/interswarm/message", json={"user_token": "x", "targets": ["weather@beta"], "body": "b"}
    )

    assert response.status_code == 400
    assert "protocol 1.3 peers use /interswarm/forward" in response.json()["detail"]


# --- proxy send (admin/user) ---------------------------------------------------------------------


async def test_proxy_send_reaches_the_remote_forward_endpoint(cluster: Cluster) -> None:
    a = await cluster.start(alpha_asking("weather@beta"))
    async with FakePeer("beta") as peer:
        await cluster.link(a, peer)
        calls = a.auth.calls

        response = await (await a.user()).post(
            "/interswarm/message",
            json={
                "user_token": "secret-user-token",
                "targets": ["weather@beta"],
                "body": "Tokyo",
                "stream": True,
            },
        )

    assert response.status_code == 200, response.text
    data = response.json()
    ((path, headers, body),) = peer.received
    assert path == "/interswarm/forward"  # not the peer's /interswarm/message, not ourselves
    assert a.auth.calls == calls + 1  # only the proxy request itself reached this server
    assert headers["Authorization"] == f"Bearer {agent_key('alpha', 'beta')}"
    message = body["message"]
    assert message["task_owner"] == "user:u1@alpha"
    assert message["task_contributors"] == ["user:u1@alpha"]
    assert message["payload"]["sender"] == create_agent_address("u1@alpha")
    assert message["payload"]["routing_info"] == {"stream": True}
    assert "secret-user-token" not in json.dumps(body)  # the caller's token stays here
    assert data == {
        "response": {
            "swarm": "beta",
            "task_id": message["payload"]["task_id"],
            "status": "success",
            "local_runner": "swarm:x@fake",
        },
        "events": None,
        "task_id": message["payload"]["task_id"],
    }


async def test_interswarm_send_waits_for_the_remote_reply(cluster: Cluster) -> None:
    a = await cluster.start(alpha_asking("weather@beta"))
    b = await cluster.start(beta_weather())
    await cluster.link(a, b)
    await cluster.link(b, a)

    response = await (await a.user()).post(
        "/interswarm/send",
        json={"user_token": "tok", "target_agent": "weather@beta", "message": "Oslo"},
    )

    assert response.status_code == 200, response.text
    reply = validate_message(response.json()["response"])
    assert reply["message"]["body"] == "sunny in Oslo"
    assert reply["message"]["sender"] == create_agent_address("weather@beta")
    task = a.task_of("user", "u1", reply["message"]["task_id"])
    assert task.state is TaskState.COMPLETED


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        ({"targets": ["weather@beta"], "body": "x"}, 401, "user token is required"),
        ({"user_token": "t", "body": "x"}, 400, "'targets' and 'body' are required"),
        (
            {"user_token": "t", "targets": ["a@beta", "b@beta"], "body": "x"},
            400,
            "'request' messages require exactly one target",
        ),
        (
            {"user_token": "t", "targets": ["weather@beta"], "body": "x", "msg_type": "response"},
            400,
            "msg_type 'response' is not supported for interswarm send",
        ),
        (
            {"user_token": "t", "targets": ["supervisor"], "body": "x"},
            400,
            "target 'supervisor' is not in a remote swarm; write agent@swarm",
        ),
        (
            {"user_token": "t", "targets": ["weather@nowhere"], "body": "x"},
            400,
            "swarm 'nowhere' is not registered (see POST /swarms)",
        ),
    ],
)
async def test_proxy_send_refuses_bad_requests(
    cluster: Cluster, body: dict[str, Any], status: int, detail: str
) -> None:
    a = await cluster.start(alpha_asking("weather@beta"))

    response = await (await a.user()).post("/interswarm/message", json=body)

    assert response.status_code == status
    assert response.json() == {"detail": detail}


async def test_proxy_send_needs_an_interswarm_swarm(cluster: Cluster) -> None:
    plain = swarm(
        "alpha",
        {"supervisor": ScriptedAgent(rule=lambda _m: tc("task_complete", finish_message="x"))},
        {"supervisor": ["supervisor"]},
        interswarm=False,
    )
    a = await cluster.start(plain)

    response = await (await a.admin()).post(
        "/interswarm/message", json={"user_token": "t", "targets": ["w@beta"], "body": "x"}
    )

    assert response.status_code == 400
    assert response.json() == {"detail": "interswarm messaging is not enabled in swarm alpha"}


async def test_proxy_send_to_an_unreachable_peer_is_502_and_fails_the_task(
    cluster: Cluster,
) -> None:
    a = await cluster.start(alpha_asking("weather@beta"))
    async with FakePeer("beta") as peer:
        await cluster.link(a, peer)
    task_id = new_task_id()

    response = await (await a.user()).post(
        "/interswarm/message",
        json={"user_token": "t", "targets": ["weather@beta"], "body": "x", "task_id": task_id},
    )

    assert response.status_code == 502
    assert response.json()["detail"].startswith(
        "error sending interswarm message forward to swarm beta: cannot reach"
    )
    assert a.task_of("user", "u1", task_id).state is TaskState.FAILED


# --- /interswarm/response (protocol 1.1) -------------------------------------------------------


async def test_an_answer_posted_to_interswarm_response_reaches_the_task(cluster: Cluster) -> None:
    a = await cluster.start(alpha_asking("weather@beta"))
    async with FakePeer("beta") as peer:  # acknowledges, never answers by itself
        await cluster.link(a, peer)
        task_id = new_task_id()
        asking = asyncio.create_task(ask(a, "Rome", task_id=task_id))
        await within(peer.arrived.wait())
        answer = beta_answer(task_id, "rainy in Rome")

        client = await a.peer("beta")
        processed = await client.post("/interswarm/response", json=answer)
        result = await within(asking)
        late = await client.post("/interswarm/response", json=answer)

    assert processed.json() == {"status": "response_processed", "task_id": task_id}
    assert result["response"] == "weather@beta says: rainy in Rome"
    assert late.json() == {"status": "no_mail_instance", "task_id": task_id}


async def test_interswarm_response_checks_its_body(cluster: Cluster) -> None:
    a: Node = await cluster.start(alpha_asking("weather@beta"))
    client = await a.peer("beta")

    bad = await client.post("/interswarm/response", json={"id": "x"})
    user = await (await a.user()).post("/interswarm/response", json={})

    assert bad.status_code == 400
    assert bad.json()["detail"].startswith("invalid MAIL message: ")
    assert user.status_code == 401
