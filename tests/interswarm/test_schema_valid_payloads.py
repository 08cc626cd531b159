"""What two federated swarms send each other meets the original's schema rules (issue 22,
item 6): each ``/interswarm/*`` body between two real servers, read by a relay between them,
and every message stored in the origin's events."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from aiohttp import web
from tests._original_schema import strict_validator
from tests.interswarm.conftest import Cluster, FakePeer, swarm
from tests.interswarm.test_federation import answering, ask, beta_weather

from mail.testing import Incoming, ScriptedAgent, ScriptedCall, tc

STRICT = strict_validator()
Sent = list[tuple[str, Any]]


def relay(upstream: str, sent: Sent) -> Callable[[web.Request, Any], Awaitable[web.Response]]:
    """A FakePeer behaviour that records each body, then passes it on to ``upstream``."""

    async def behaviour(request: web.Request, body: Any) -> web.Response:
        sent.append((request.path, body))
        async with httpx.AsyncClient() as client:
            answer = await client.post(
                upstream + request.path,
                json=body,
                headers={"Authorization": request.headers.get("Authorization", "")},
            )
        return web.Response(
            body=answer.content, status=answer.status_code, content_type="application/json"
        )

    return behaviour


def supervisor() -> ScriptedAgent:
    def rule(incoming: Incoming) -> list[ScriptedCall] | ScriptedCall:
        if incoming.sender_type == "user":
            return [
                tc("send_broadcast", subject="Note", body="asking beta", targets=["weather@beta"]),
                tc("send_request", target="weather@beta", subject="Forecast", body=incoming.body),
            ]
        if incoming.body.startswith("sunny in"):
            return tc("task_complete", finish_message=incoming.body)
        return tc("await_message", reason="waiting for the forecast")

    return ScriptedAgent(rule=rule)


def wrapper_of(body: Any) -> Any:
    return body["message"] if "payload" not in body else body


async def test_interswarm_bodies_and_stored_messages_meet_the_original_rules(
    cluster: Cluster,
) -> None:
    alpha = swarm("alpha", {"supervisor": supervisor()}, {"supervisor": ["weather@beta"]})
    a = await cluster.start(alpha)
    b = await cluster.start(beta_weather(answering("sunny in")))
    sent: Sent = []
    async with (
        FakePeer("beta", behaviour=relay(b.url, sent)) as to_beta,
        FakePeer("alpha", behaviour=relay(a.url, sent)) as to_alpha,
    ):
        await cluster.link(a, to_beta)
        await cluster.link(b, to_alpha)
        result = await ask(a, "Tokyo")

    assert result["status"] == "completed", result
    assert result["response"].startswith("sunny in")
    assert {path for path, _ in sent} >= {"/interswarm/forward", "/interswarm/back"}
    kinds = set()
    for _path, body in sent:
        STRICT.validate(wrapper_of(body))
        kinds.add(wrapper_of(body)["msg_type"])
    assert {"request", "response", "broadcast"} <= kinds
    stored = [
        e["data"]["extra_data"]["full_message"]
        for e in result["events"]
        if e["event"] == "new_message" and "full_message" in e["data"].get("extra_data", {})
    ]
    assert stored
    for message in stored:
        STRICT.validate(message)
