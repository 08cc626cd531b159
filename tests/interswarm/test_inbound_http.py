"""``/interswarm/forward`` and ``/back`` refuse what they must, before anything is queued."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from tests.interswarm.conftest import Cluster, FakePeer, Node, swarm, within
from tests.interswarm.test_federation import beta_weather

from mail.core.message import (
    create_agent_address,
    make_interswarm_message,
    make_request,
    new_task_id,
)
from mail.testing import ScriptedAgent, tc

pytestmark = pytest.mark.timeout(30)


def wire(recipient: str = "weather@beta", **changes: Any) -> dict[str, Any]:
    """A valid message from alpha's supervisor to ``recipient``, with ``changes`` applied."""
    message = make_request(
        task_id=new_task_id(),
        sender=create_agent_address("supervisor@alpha"),
        recipient=create_agent_address(recipient),
        subject="Forecast",
        body="Tokyo",
    )
    data: dict[str, Any] = dict(
        make_interswarm_message(
            message=message,
            source_swarm="alpha",
            target_swarm="beta",
            task_owner="user:u1@alpha",
            task_contributors=["user:u1@alpha"],
            auth_token="",
        )
    )
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


@pytest.fixture
async def beta(cluster: Cluster) -> Node:
    return await cluster.start(beta_weather())


def nothing_queued(node: Node) -> bool:
    swarm = node.state.swarms.lookup("agent", "alpha")
    return swarm is None or len(swarm.runtime.tasks) == 0


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({}, "parameter 'message' is required"),
        ({"message": None}, "parameter 'message' is required"),
        ({"message": "text"}, "invalid interswarm message: must be an object, got str"),
        (
            {"message": wire(task_owner=None)},
            "invalid interswarm message: task_owner: is required",
        ),
        (
            {"message": wire(task_owner="u1")},
            "invalid interswarm message: task_owner: must be of the form 'role:id@swarm', got 'u1'",
        ),
        (
            {"message": wire(msg_type="broadcast_complete")},
            "invalid interswarm message: msg_type: must be one of request, response, "
            "broadcast, interrupt, got 'broadcast_complete'",
        ),
        (
            {"message": wire(message_id="not-a-uuid")},
            "invalid interswarm message: message_id: must be a uuid string, got 'not-a-uuid'",
        ),
        (
            {"message": wire(extra_field=1)},
            "invalid interswarm message: extra_field: is not an allowed key",
        ),
        (
            {"message": wire(target_swarm="gamma")},
            "target_swarm: is 'gamma', but this is swarm 'beta'",
        ),
        (
            {"message": wire(recipient="nobody@beta")},
            "payload.recipient: agent 'nobody' is not known to swarm 'beta'",
        ),
        (
            {"message": wire(recipient="weather")},
            "payload.recipient: names no agent of swarm 'beta' (write agent@beta)",
        ),
    ],
)
async def test_a_payload_that_breaks_the_schema_gets_400(
    beta: Node, body: dict[str, Any], detail: str
) -> None:
    response = await (await beta.peer("alpha")).post("/interswarm/forward", json=body)

    assert response.status_code == 400, response.text
    assert response.json() == {"detail": detail}
    assert nothing_queued(beta)


async def test_a_wrong_payload_inside_the_message_names_its_field(beta: Node) -> None:
    message = wire()
    message["payload"] = {**message["payload"], "sender": {"address_type": "robot", "address": "x"}}

    response = await (await beta.peer("alpha")).post(
        "/interswarm/forward", json={"message": message}
    )

    assert response.status_code == 400
    assert response.json()["detail"].startswith(
        "invalid interswarm message: payload.sender.address_type: must be one of"
    )


@pytest.mark.parametrize(
    ("key", "detail"),
    [
        ("wrong-key", "invalid API key"),
        ("beta-user", "invalid role: this route needs agent"),
        (None, "no API key provided"),
    ],
)
async def test_only_peers_may_deliver(beta: Node, key: str | None, detail: str) -> None:
    for path in ("/interswarm/forward", "/interswarm/back"):
        response = await (await beta.client(key)).post(path, json={"message": wire()})

        assert response.status_code == 401
        assert response.json() == {"detail": detail}
    assert nothing_queued(beta)


async def test_forward_is_acknowledged_once_queued(beta: Node) -> None:
    message = wire()

    response = await (await beta.peer("alpha")).post(
        "/interswarm/forward", json={"message": message}
    )

    assert response.status_code == 200
    assert response.json() == {
        "swarm": "beta",
        "task_id": message["payload"]["task_id"],
        "status": "success",
        "local_runner": "swarm:alpha@beta",
    }


async def test_a_forward_from_another_owner_for_a_known_task_conflicts(beta: Node) -> None:
    message = wire()
    client = await beta.peer("alpha")
    assert (await client.post("/interswarm/forward", json={"message": message})).status_code == 200
    other = copy.deepcopy(message)
    other["message_id"] = new_task_id()
    other["task_owner"] = "user:mallory@alpha"
    other["task_contributors"] = ["user:mallory@alpha"]

    response = await client.post("/interswarm/forward", json={"message": other})

    assert response.status_code == 409
    assert response.json() == {
        "detail": f"task '{message['payload']['task_id']}' has another owner"
    }


async def test_back_for_an_unknown_task_is_404(beta: Node) -> None:
    message = wire(task_contributors=["user:u1@alpha", "swarm:alpha@beta"])

    response = await (await beta.peer("alpha")).post("/interswarm/back", json={"message": message})

    assert response.status_code == 404
    assert response.json() == {"detail": f"task '{message['payload']['task_id']}' not found"}


async def test_back_with_a_contributor_of_an_unknown_role_is_400(beta: Node) -> None:
    message = wire(task_contributors=["user:u1@alpha", "robot:r2@beta"])

    response = await (await beta.peer("alpha")).post("/interswarm/back", json={"message": message})

    assert response.status_code == 400
    assert response.json() == {"detail": "task_contributors: invalid role: robot"}


async def test_a_swarm_that_took_no_part_cannot_continue_a_task(beta: Node) -> None:
    # alpha starts a task on beta; gamma, knowing its id and owner, may not inject into it
    message = wire()
    task_id = message["payload"]["task_id"]
    ok = await (await beta.peer("alpha")).post("/interswarm/forward", json={"message": message})
    assert ok.status_code == 200
    intruder = wire(
        source_swarm="gamma",
        task_contributors=["user:u1@alpha", "swarm:alpha@beta"],
    )
    intruder["payload"] = {**intruder["payload"], "task_id": task_id}

    response = await (await beta.peer("gamma")).post("/interswarm/back", json={"message": intruder})

    assert response.status_code == 404
    task = beta.task_of("agent", "alpha", task_id)
    received = [e for e in task.log.all() if e.event == "interswarm_message_received"]
    assert len(received) == 1


async def test_a_swarm_without_interswarm_takes_no_interswarm_message(cluster: Cluster) -> None:
    plain = swarm(
        "beta",
        {"supervisor": ScriptedAgent(rule=lambda _m: tc("task_complete", finish_message="x"))},
        {"supervisor": ["supervisor"]},
        interswarm=False,
    )
    beta = await cluster.start(plain)

    response = await (await beta.peer("alpha")).post(
        "/interswarm/forward", json={"message": wire(recipient="supervisor@beta")}
    )

    assert response.status_code == 400
    assert response.json() == {
        "detail": "target_swarm: swarm 'beta' does not take interswarm messages"
    }
    assert nothing_queued(beta)


async def test_back_names_the_calling_peer_as_the_local_runner(cluster: Cluster) -> None:
    # v1.3.6 answers `swarm:{caller}@{local}` on /back too, also when a local user's runtime
    # holds the task (we named that runtime, `user:u1@beta`, before)
    asking = ScriptedAgent(
        [tc("send_request", target="supervisor@alpha", subject="Q", body="?")],
        rule=lambda _m: tc("task_complete", finish_message="done"),
    )
    targets = {"supervisor": ["supervisor", "supervisor@alpha"]}
    beta = await cluster.start(swarm("beta", {"supervisor": asking}, targets))
    async with FakePeer("alpha") as alpha:
        await cluster.link(beta, alpha)
        task_id = new_task_id()
        user = await beta.user()
        pending = asyncio.create_task(
            user.post("/message", json={"body": "hi", "task_id": task_id})
        )
        await within(alpha.arrived.wait())
        owner = "user:u1@beta"
        message = wire(recipient="supervisor@beta", task_owner=owner, task_contributors=[owner])
        message["payload"] = {**message["payload"], "task_id": task_id}

        response = await (await beta.peer("alpha")).post(
            "/interswarm/back", json={"message": message}
        )
        assert (await within(pending)).status_code == 200

    assert response.status_code == 200, response.text
    assert response.json()["local_runner"] == "swarm:alpha@beta"
