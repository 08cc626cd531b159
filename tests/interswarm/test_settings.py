"""``[server.interswarm]`` reaches the server's registry and router (real servers)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.interswarm.conftest import Cluster, FakePeer, swarm, within
from tests.interswarm.test_federation import alpha_asking, ask

from mail.testing import Incoming, ScriptedAgent, ScriptedCall, tc

pytestmark = pytest.mark.timeout(40)


async def test_the_configured_health_interval_drives_the_registry(cluster: Cluster) -> None:
    default = await cluster.start(alpha_asking("weather@beta"))
    a = await cluster.start(
        swarm("gamma", {"supervisor": ScriptedAgent()}, {"supervisor": ["supervisor"]}),
        interswarm={"health_interval": 0.2, "health_max_backoff": 3.0},
    )
    assert (default.state.registry.health_interval, default.state.registry.max_backoff) == (
        30.0,
        600.0,
    )
    assert (a.state.registry.health_interval, a.state.registry.max_backoff) == (0.2, 3.0)

    async with FakePeer("beta") as peer:
        await cluster.link(a, peer)  # reads GET /, not /health
        # the server's own health loop checks the peer again and again, well within 30 s
        await within(peer.health_checks.get())
        await within(peer.health_checks.get())


def discovering() -> Any:
    """alpha, whose supervisor discovers from the URL the user sends, then reports."""

    def rule(incoming: Incoming) -> ScriptedCall:
        if incoming.sender_type == "user":
            return tc("discover_swarms", discovery_urls=[incoming.body])
        return tc("task_complete", finish_message=f"{incoming.subject}: {incoming.body}")

    return swarm("alpha", {"supervisor": ScriptedAgent(rule=rule)}, {"supervisor": ["supervisor"]})


async def test_a_refused_discovery_url_reaches_the_agent_and_is_not_fetched(
    cluster: Cluster,
) -> None:
    a = await cluster.start(discovering(), interswarm={"discovery_hosts": []})
    async with FakePeer("beta") as peer:
        refused = await ask(a, peer.url)
        await cluster.link(a, peer)  # a registered peer may be asked
        allowed = await ask(a, peer.url)

    assert refused["status"] == "completed"
    assert "swarm discovery failed: discovery refused for " in refused["response"]
    assert "is neither a registered swarm nor an allowed discovery host" in refused["response"]
    assert allowed["response"].startswith("::action_complete::")
    assert peer.hits["/swarms"] == 1  # only the allowed call fetched anything


async def test_agent_discovery_can_be_turned_off(cluster: Cluster) -> None:
    a = await cluster.start(discovering(), interswarm={"agent_discovery": False})
    async with FakePeer("beta") as peer:
        result = await ask(a, peer.url)

    assert "swarm discovery is disabled on this server" in result["response"]
    assert peer.hits["/swarms"] == 0
