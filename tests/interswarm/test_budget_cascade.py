"""Budgets cascade across swarms: a request forwarded to a peer (a real ``mail server``
process) carries what is left of the task's budget, and the peer enforces the lower of its
own limits and the carried ones."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.interswarm.conftest import Cluster, FakePeer, Node, within
from tests.interswarm.peer_process import PeerProcess, _definition
from tests.interswarm.test_federation import alpha_asking, ask

from mail.core.message import validate_interswarm_message

pytestmark = pytest.mark.timeout(60)


def _capped_beta(tmp: Path, budget: dict[str, Any]) -> PeerProcess:
    """Swarm ``beta`` with its own ``budget`` in swarms.json and metrics on."""
    definition = _definition(("supervisor", "supervisor@alpha"))
    definition["budget"] = budget
    peer = PeerProcess(tmp, definition=definition)
    toml = tmp / "mail.toml"
    toml.write_text(toml.read_text() + "[server.metrics]\nenabled = true\n", encoding="utf-8")
    return peer


@pytest.fixture
def beta(tmp_path: Path) -> Iterator[PeerProcess]:
    peer = _capped_beta(tmp_path / "beta", {"agent_turns": 10})
    yield peer
    peer.stop()


async def _budget_stops(peer: PeerProcess) -> dict[str, float]:
    headers = {"Authorization": f"Bearer {peer.name}-admin"}
    async with httpx.AsyncClient(base_url=peer.url, timeout=10, headers=headers) as client:
        response = await client.get("/metrics")
    assert response.status_code == 200, response.text
    return {
        s.labels["limit"]: s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
        if s.name == "mail_budget_stops_total"
    }


async def _federate(cluster: Cluster, beta: PeerProcess) -> Node:
    beta.start()
    a = await cluster.start(alpha_asking("weather@beta"), interswarm={"reply_timeout": 1.0})
    await cluster.link(a, beta)
    await beta.link("alpha", a.url, "beta-to-alpha")
    return a


async def test_the_peer_enforces_what_is_left_of_the_budget(
    cluster: Cluster, beta: PeerProcess
) -> None:
    a = await _federate(cluster, beta)

    # alpha's supervisor spends the only agent turn: beta gets agent_turns 0 (its own: 10)
    result = await within(ask(a, "Tokyo", budget={"agent_turns": 1}), 30)
    stops = await _budget_stops(beta)

    assert stops == {"agent_turns": 1.0}, beta.output()
    # no answer came back: alpha's supervisor was told, and its next turn was one too many
    assert result["status"] == "failed"
    assert "budget exceeded: agent_turns 2 > 1" in result["response"]


async def test_a_forward_carries_the_remaining_budget_in_its_metadata(
    cluster: Cluster,
) -> None:
    a = await cluster.start(alpha_asking("weather@beta"), interswarm={"reply_timeout": 0.5})
    async with FakePeer("beta") as peer:
        await cluster.link(a, peer)

        await within(ask(a, "Osaka", budget={"agent_turns": 3, "actions": 4, "warn_at": 0.9}))

    (path, _headers, body) = peer.received[0]
    assert path == "/interswarm/forward"
    # the supervisor's turn was spent before it sent the request; no action ran
    assert body["message"]["metadata"]["budget"] == {"agent_turns": 2, "actions": 4, "warn_at": 0.9}
    assert validate_interswarm_message(body["message"])["metadata"] == body["message"]["metadata"]


async def test_the_peer_takes_its_own_limit_when_it_is_the_lower(
    cluster: Cluster, tmp_path: Path
) -> None:
    peer = _capped_beta(tmp_path / "beta0", {"agent_turns": 0})
    try:
        a = await _federate(cluster, peer)

        result = await within(ask(a, "Kyoto", budget={"agent_turns": 5}), 30)
        stops = await _budget_stops(peer)
    finally:
        peer.stop()

    assert stops == {"agent_turns": 1.0}, peer.output()
    assert result["status"] == "completed"  # alpha's supervisor was told no answer came
