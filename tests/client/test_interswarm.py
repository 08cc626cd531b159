"""MAILClient's interswarm methods against two real servers registered with each other.

alpha's supervisor asks ``weather@beta`` for the user's body; beta's weather answers
``sunny in <body>`` (only while :attr:`Pair.gate` is set). The servers are the federation
tests' :class:`~tests.interswarm.conftest.Cluster` nodes (scripted swarms, static keys:
``<swarm>-user``, ``<swarm>-admin``, and ``<peer>-to-<swarm>`` for each peer swarm);
the swarms are registered on each other through :meth:`MAILClient.register_swarm`.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.client.conftest import Connect, assert_shape
from tests.interswarm.conftest import Cluster, Node, agent_key
from tests.interswarm.test_federation import alpha_asking, answering, beta_weather

from mail.client import (
    InterswarmAck,
    InterswarmReply,
    InterswarmReplyPayload,
    InterswarmResponseAck,
    InterswarmSendResult,
    MAILClientError,
    MessageAddress,
)
from mail.core.message import (
    create_agent_address,
    make_interswarm_message,
    make_request,
    make_response,
    new_task_id,
)
from mail.testing import ScriptedAgent

pytestmark = pytest.mark.timeout(40)


@dataclass
class Pair:
    alpha: Node
    beta: Node
    gate: asyncio.Event  # beta's weather answers only while it is set (set at the start)


@pytest.fixture
async def pair(tmp_path: Path, connect: Connect) -> AsyncIterator[Pair]:
    gate = asyncio.Event()
    gate.set()
    weather = ScriptedAgent(rule=answering("sunny in").rule, gate=gate)
    async with AsyncExitStack() as stack:
        cluster = Cluster(stack, tmp_path)
        alpha = await cluster.start(alpha_asking("weather@beta"))
        beta = await cluster.start(beta_weather(weather))
        for node, peer in ((alpha, beta), (beta, alpha)):
            admin = connect(node.url, f"{node.name}-admin")
            registered = await admin.register_swarm(
                peer.name, peer.url, auth_token=agent_key(node.name, peer.name)
            )
            assert registered == {"status": "registered", "swarm_name": peer.name}
        try:
            yield Pair(alpha, beta, gate)
        finally:
            gate.set()  # let a held turn end before the servers stop


def legacy_question(body: str) -> dict[str, Any]:
    """What a protocol 1.1 swarm alpha POSTs to beta: a bare MAILInterswarmMessage
    (no task ownership) from ``supervisor@alpha`` to ``weather@beta``."""
    request = make_request(
        task_id=new_task_id(),
        sender=create_agent_address("supervisor@alpha"),
        recipient=create_agent_address("weather@beta"),
        subject="Forecast",
        body=body,
        sender_swarm="alpha",
        recipient_swarm="beta",
    )
    message: dict[str, Any] = dict(
        make_interswarm_message(
            message=request,
            source_swarm="alpha",
            target_swarm="beta",
            task_owner="-",
            task_contributors=[],
            metadata={"expect_response": True},
        )
    )
    del message["task_owner"], message["task_contributors"]
    return message


# --- send_interswarm_message (the proxy send of admins and users) ----------------------------


async def test_send_interswarm_message_reaches_the_remote_agent(
    pair: Pair, connect: Connect
) -> None:
    user = connect(pair.alpha.url, "alpha-user")

    result = await user.send_interswarm_message("Tokyo", "my-token", targets=["weather@beta"])

    task_id = result.get("task_id", "")
    assert_shape(result, InterswarmSendResult)
    assert_shape(result["response"], InterswarmAck)
    assert result == {
        "response": {
            "swarm": "beta",
            "task_id": task_id,
            "status": "success",
            "local_runner": "swarm:alpha@beta",
        },
        "events": None,
        "task_id": task_id,
    }
    # beta's reply comes back through alpha's /interswarm/back and ends the local task
    async with await user.task_events(task_id) as stream:
        events = [event async for event in stream]
    assert Counter(e.event for e in events) == {
        "interswarm_message_sent": 1,
        "interswarm_message_received": 1,
        "task_complete": 1,
    }
    assert events[-1].event == "task_complete"
    assert events[-1].json()["response"] == "sunny in Tokyo"
    task = await user.get_task(task_id)
    assert (task.get("state"), task.get("remote_swarms")) == ("completed", ["beta"])


async def test_send_interswarm_message_to_an_unregistered_swarm_is_400(
    pair: Pair, connect: Connect
) -> None:
    user = connect(pair.alpha.url, "alpha-user")

    with pytest.raises(MAILClientError) as caught:
        await user.send_interswarm_message("Tokyo", "my-token", targets=["weather@gamma"])

    assert (caught.value.status, caught.value.detail) == (
        400,
        "swarm 'gamma' is not registered (see POST /swarms)",
    )


# --- post_interswarm_message (protocol 1.1: the synchronous exchange) ----------------------


async def test_post_interswarm_message_returns_the_remote_agents_answer(
    pair: Pair, connect: Connect
) -> None:
    peer = connect(pair.beta.url, agent_key("alpha", "beta"))  # beta's key for swarm alpha
    question = legacy_question("Lima")

    answer = await peer.post_interswarm_message(question)

    assert_shape(answer, InterswarmReply)
    assert_shape(answer["message"], InterswarmReplyPayload)
    assert_shape(answer["message"]["sender"], MessageAddress)
    assert answer["msg_type"] == "response"
    payload = answer["message"]
    assert payload["body"] == "sunny in Lima"
    assert payload["task_id"] == question["payload"]["task_id"]
    assert payload["sender"] == {"address_type": "agent", "address": "weather@beta"}
    assert payload["recipient"] == {"address_type": "agent", "address": "supervisor@alpha"}
    assert (payload["sender_swarm"], payload["recipient_swarm"]) == ("beta", "alpha")


async def test_post_interswarm_message_needs_an_agent_key(pair: Pair, connect: Connect) -> None:
    user = connect(pair.beta.url, "beta-user")

    with pytest.raises(MAILClientError) as caught:
        await user.post_interswarm_message(legacy_question("Lima"))

    # to a user's key the route is the proxy send, which wants a user token
    assert (caught.value.status, caught.value.detail) == (401, "user token is required")


# --- post_interswarm_response (protocol 1.1: an answer for a waiting task) -----------------


async def test_post_interswarm_response_answers_a_waiting_task(
    pair: Pair, connect: Connect
) -> None:
    pair.gate.clear()  # beta's weather holds the question: the answer comes from this test
    user = connect(pair.alpha.url, "alpha-user")
    peer = connect(pair.alpha.url, agent_key("beta", "alpha"))  # alpha's key for swarm beta
    stream = await user.post_message_stream("Rome")
    task_id = stream.task_id
    assert task_id is not None
    answer = make_response(
        task_id=task_id,
        sender=create_agent_address("weather@beta"),
        recipient=create_agent_address("supervisor@alpha"),
        subject="Re",
        body="rainy in Rome",
        sender_swarm="beta",
    )
    receipts: list[InterswarmResponseAck] = []
    async with stream:
        async for event in stream:
            # the question is at beta now (a later one is the completion notice to beta,
            # which may come before the stream's final event)
            if event.event == "interswarm_message_sent" and not receipts:
                receipts.append(await peer.post_interswarm_response(answer))
            last = event

    late = await peer.post_interswarm_response(answer)

    assert receipts == [{"status": "response_processed", "task_id": task_id}]
    assert_shape(receipts[0], InterswarmResponseAck)
    assert last.event == "task_complete"
    assert last.json()["response"] == "weather@beta says: rainy in Rome"
    assert late == {"status": "no_mail_instance", "task_id": task_id}


async def test_post_interswarm_response_checks_the_message(pair: Pair, connect: Connect) -> None:
    peer = connect(pair.alpha.url, agent_key("beta", "alpha"))

    with pytest.raises(MAILClientError) as caught:
        await peer.post_interswarm_response({"id": "x"})

    assert caught.value.status == 400
    assert caught.value.detail.startswith("invalid MAIL message: ")
