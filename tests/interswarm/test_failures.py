"""Failures never vanish: each reaches the sending agent, and its task still completes.

The peer is down (connection refused), marked inactive by the registry's health checks,
slow (timeout), failing (500), or refuses our token (401). A dropped connection is retried
and the receiver runs the message once.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from tests.interswarm.conftest import Cluster, DropProxy, FakePeer, swarm, within
from tests.interswarm.test_federation import alpha_asking, answering, ask, beta_weather

from mail.net import RouterSettings

pytestmark = pytest.mark.timeout(40)


def event_names(result: dict[str, Any]) -> list[str]:
    return [e["event"] for e in result["events"]]


def error_event(result: dict[str, Any]) -> str:
    found: str = next(
        e["data"]["description"]
        for e in result["events"]
        if e["event"] == "interswarm_message_error"
    )
    return found


def assert_agent_was_told(result: dict[str, Any], problem: str) -> None:
    """The agent got an ::agent_error:: naming the problem, and completed the task."""
    assert result["status"] == "completed"
    response = result["response"]
    assert response.startswith(
        "failed: Your message was not delivered: error sending interswarm message forward "
        "to swarm beta: "
    ), response
    assert problem in response
    assert problem in error_event(result)
    delivered = [
        e["data"]["description"]
        for e in result["events"]
        if e["event"] == "new_message" and "::agent_error::" in e["data"]["description"]
    ]
    assert len(delivered) == 1


async def test_peer_down_reaches_the_agent_after_retries(cluster: Cluster) -> None:
    a = await cluster.start(alpha_asking("weather@beta"))
    async with FakePeer("beta") as peer:
        await cluster.link(a, peer)
    # closed: its port now refuses connections

    result = await ask(a, "Tokyo")

    assert_agent_was_told(result, f"cannot reach {peer.url}/interswarm/forward")
    assert "(4 attempts)" in result["response"]


async def test_a_swarm_marked_inactive_by_health_checks_reaches_the_agent(
    cluster: Cluster,
) -> None:
    a = await cluster.start(alpha_asking("weather@beta"))
    async with FakePeer("beta") as peer:
        await cluster.link(a, peer)
    registry = a.state.registry
    assert await registry.run_health_checks(only_due=False) == {"beta": False}
    endpoint = registry.get_swarm_endpoint("beta")
    assert endpoint is not None and not endpoint.is_active
    assert a.state.router.known_swarms() == []

    result = await ask(a, "Tokyo")

    assert_agent_was_told(result, "swarm 'beta' is inactive: its health check fails")
    assert peer.hits.total() == 0


async def test_slow_peer_times_out(cluster: Cluster) -> None:
    async def slow(_request: web.Request, _body: Any) -> web.Response:
        await peer.sleep(30)
        return web.json_response({})

    a = await cluster.start(
        alpha_asking("weather@beta"), router_settings=RouterSettings(timeout=0.5)
    )
    async with FakePeer("beta", behaviour=slow) as peer:
        await cluster.link(a, peer)

        result = await ask(a, "Tokyo")

    assert_agent_was_told(result, f"{peer.url}/interswarm/forward did not answer within 0.5 s")
    assert peer.hits["/interswarm/forward"] == 1  # a timeout is not retried


async def test_peer_answering_500_is_retried_then_reported(cluster: Cluster) -> None:
    async def broken(_request: web.Request, _body: Any) -> web.Response:
        return web.json_response({"detail": "internal server error"}, status=500)

    a = await cluster.start(alpha_asking("weather@beta"))
    async with FakePeer("beta", behaviour=broken) as peer:
        await cluster.link(a, peer)

        result = await ask(a, "Tokyo")

    assert_agent_was_told(
        result,
        f"{peer.url}/interswarm/forward answered HTTP 500: internal server error (4 attempts)",
    )
    assert peer.hits["/interswarm/forward"] == 4


async def test_wrong_token_is_refused_with_401_and_not_retried(cluster: Cluster) -> None:
    a = await cluster.start(alpha_asking("weather@beta"))
    b = await cluster.start(beta_weather())
    await cluster.link(a, b, auth_token="not-a-key-of-beta")
    calls_before = b.auth.calls

    result = await ask(a, "Tokyo")

    assert_agent_was_told(result, f"{b.url}/interswarm/forward answered HTTP 401: invalid API key")
    assert b.auth.calls == calls_before + 1


async def test_no_token_names_the_variable_to_set(cluster: Cluster) -> None:
    a = await cluster.start(alpha_asking("weather@beta"))
    async with FakePeer("beta") as peer:
        response = await (await a.admin()).post(
            "/swarms", json={"name": "beta", "base_url": peer.url}
        )
        assert response.status_code == 200

        result = await ask(a, "Tokyo")

    assert_agent_was_told(result, "no token for swarm beta; set SWARM_AUTH_TOKEN_BETA")
    assert peer.hits.total() == 0


async def test_a_delivery_retried_after_a_dropped_connection_runs_once(cluster: Cluster) -> None:
    weather = answering("sunny in")
    a = await cluster.start(alpha_asking("weather@beta"))
    b = await cluster.start(beta_weather(weather))
    async with DropProxy("beta", b.url) as proxy:
        await cluster.link(a, proxy)
        await cluster.link(b, a)

        result = await ask(a, "Tokyo")
        copy = b.task_of("agent", "alpha", result["task_id"])
        # closed by A's completion notice, which goes through the proxy too: it stays up
        # until then
        await within(copy.wait_turn())

    assert proxy.dropped == 1
    assert result["response"] == "weather@beta says: sunny in Tokyo"
    assert "interswarm_message_error" not in event_names(result)
    received = [e for e in copy.log.all() if e.event == "interswarm_message_received"]
    assert len(received) == 2  # the request once (not twice), then the notice
    assert weather.invocations == 1
    delivered = [e for e in copy.log.all() if e.event == "new_message"]
    assert len(delivered) == 1


async def test_unreachable_swarm_does_not_block_the_other_one(cluster: Cluster) -> None:
    # a broadcast to a live and a dead swarm: the live one answers, the dead one is reported
    replies: list[str] = []

    def collect(incoming: Any) -> Any:
        from mail.testing import tc

        if incoming.sender_type == "user":
            return tc(
                "send_interswarm_broadcast",
                subject="Hi",
                body="hi",
                target_swarms=["beta", "gamma"],
            )
        replies.append(f"{incoming.sender}: {incoming.body[:60]}")
        if len(replies) < 2:
            return tc("await_message", reason="more")
        return tc("task_complete", finish_message=" | ".join(sorted(replies)))

    from mail.testing import ScriptedAgent

    a = await cluster.start(
        swarm("alpha", {"supervisor": ScriptedAgent(rule=collect)}, {"supervisor": ["supervisor"]})
    )
    b = await cluster.start(
        swarm("beta", {"supervisor": answering("beta got")}, {"supervisor": ["supervisor@alpha"]})
    )
    await cluster.link(a, b)
    await cluster.link(b, a)
    async with FakePeer("gamma") as dead:
        await cluster.link(a, dead)

    result = await ask(a, "hi")

    assert result["status"] == "completed"
    assert "supervisor@beta: beta got hi" in result["response"]
    assert "gamma" in error_event(result)
