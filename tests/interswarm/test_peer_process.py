"""Failures of a peer that runs in its own ``mail server`` process (issue 20): its refusal
reaches the asking agent, and so do its death and its silence."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.interswarm.conftest import Cluster, Node
from tests.interswarm.peer_process import PeerProcess
from tests.interswarm.test_failures import error_event
from tests.interswarm.test_federation import alpha_asking, ask

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def beta(tmp_path: Path) -> Iterator[PeerProcess]:
    peer = PeerProcess(tmp_path / "beta")
    yield peer
    peer.stop()


async def _federate(cluster: Cluster, beta: PeerProcess, **interswarm: float) -> Node:
    """Start ``beta``, then ``alpha`` (in this process) asking ``weather@beta``, linked
    both ways."""
    beta.start()
    a = await cluster.start(alpha_asking("weather@beta"), interswarm=interswarm)
    await cluster.link(a, beta)
    await beta.link("alpha", a.url, "beta-to-alpha")
    return a


async def test_peer_refusal_reaches_the_asking_agent(cluster: Cluster, tmp_path: Path) -> None:
    # beta's weather may not answer supervisor@alpha: beta refuses the request at once
    beta = PeerProcess(tmp_path / "beta", weather_targets=["supervisor"])
    try:
        a = await _federate(cluster, beta)

        result = await ask(a, "Tokyo")
    finally:
        beta.stop()

    assert result["status"] == "completed"
    response = result["response"]
    assert response.startswith(
        "failed: Your message was not delivered: error sending interswarm message forward "
        f"to swarm beta: {beta.url}/interswarm/forward answered HTTP 400: "
    ), response
    assert "its agent 'weather' may not answer supervisor@alpha" in response
    assert "may not answer supervisor@alpha" in error_event(result)
