"""One task crossing two real ``mail server`` processes is one trace: both export over
OTLP/HTTP to a receiver on loopback that decodes the protobuf, and ``traceparent`` links
alpha's interswarm hop to beta's request, and beta's reply to alpha's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.interswarm.peer_process import PeerProcess

from mail.testing.otlp import OTLPReceiver, ReceivedSpan, render_trace

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def peers(tmp_path: Path) -> Iterator[tuple[PeerProcess, PeerProcess]]:
    alpha, beta = PeerProcess.alpha(tmp_path / "alpha"), PeerProcess(tmp_path / "beta")
    yield alpha, beta
    alpha.stop()
    beta.stop()


def one(spans: list[ReceivedSpan], service: str, name: str) -> ReceivedSpan:
    found = [s for s in spans if s.service == service and s.name == name]
    assert len(found) == 1, (service, name, render_trace(spans))
    return found[0]


def complete(spans: list[ReceivedSpan]) -> bool:
    """Both tasks ended and alpha took beta's reply."""
    names = {(s.service, s.name) for s in spans}
    return {
        ("alpha", "mail task"),
        ("beta", "mail task"),
        ("alpha", "POST /interswarm/back"),
        ("alpha", "POST /message"),
    } <= names


async def test_a_task_across_two_servers_is_one_trace(
    peers: tuple[PeerProcess, PeerProcess],
) -> None:
    alpha, beta = peers
    async with OTLPReceiver() as receiver:
        for peer in (alpha, beta):
            peer.env |= {
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
                "OTEL_BSP_SCHEDULE_DELAY": "50",
            }
        beta.start()
        alpha.start()
        await alpha.link("beta", beta.url, "alpha-to-beta")
        await beta.link("alpha", alpha.url, "beta-to-alpha")
        async with alpha.user() as client:
            response = await client.post("/message", json={"body": "Tokyo", "task_id": "t-fed"})
        assert response.status_code == 200, response.text
        assert response.json()["response"] == "weather@beta says: sunny in Tokyo"

        spans = await receiver.wait_for(complete)

    request = one(spans, "alpha", "POST /message")
    trace = [s for s in spans if s.trace_id == request.trace_id]
    print(render_trace(trace))  # the docs' rendering of a cross-swarm trace
    assert {s.service for s in trace} == {"alpha", "beta"}
    assert request.kind == "SERVER" and request.parent_id == ""

    task_a = one(trace, "alpha", "mail task")
    assert task_a.parent_id == request.span_id
    assert task_a.attributes["mail.task.id"] == "t-fed"
    assert task_a.attributes["mail.task.status"] == "completed"
    hop = one(trace, "alpha", "interswarm forward")
    assert hop.kind == "CLIENT" and hop.parent_id == task_a.span_id
    assert hop.attributes["mail.peer"] == "beta"

    forward = one(trace, "beta", "POST /interswarm/forward")
    assert forward.kind == "SERVER" and forward.parent_id == hop.span_id
    task_b = one(trace, "beta", "mail task")
    assert task_b.parent_id == forward.span_id
    weather = one(trace, "beta", "invoke_agent weather")
    assert weather.parent_id == task_b.span_id
    back = one(trace, "beta", "interswarm back")
    assert back.parent_id == task_b.span_id and back.attributes["mail.peer"] == "alpha"

    received = one(trace, "alpha", "POST /interswarm/back")
    assert received.parent_id == back.span_id
    turns = [s for s in trace if s.service == "alpha" and s.name == "invoke_agent supervisor"]
    assert len(turns) == 2 and all(t.parent_id == task_a.span_id for t in turns)
