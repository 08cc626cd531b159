"""Failures of a peer that runs in its own ``mail server`` process (issue 20): its refusal
reaches the asking agent, and so do its death and its silence."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.interswarm.conftest import Cluster, Node, within
from tests.interswarm.peer_process import PeerProcess
from tests.interswarm.test_failures import error_event
from tests.interswarm.test_federation import alpha_asking, ask
from tests.persistence.server_process import read_line

from mail.core.events import MAILEvent
from mail.core.tasks import MAILTask

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


async def _until_forwarded_then(
    node: Node, body: str, action: Callable[[], None]
) -> dict[str, Any]:
    """Stream a task on ``node``; once its forward was accepted, run ``action``. Returns the
    final event's data (the stream is bounded by the client's timeout)."""
    client = await node.user()
    frame: dict[str, Any] = {}
    async with client.stream("POST", "/message", json={"body": body, "stream": True}) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            done = read_line(frame, line)
            if done is None:
                continue
            if done["event"] == "interswarm_message_sent":
                action()
            elif "id" not in done and done["event"] != "ping":
                data: dict[str, Any] = done["data"]
                return {"event": done["event"], **data}
    raise AssertionError("the stream ended without a final event")


async def test_peer_killed_after_accepting_fails_the_wait_when_marked_inactive(
    cluster: Cluster, beta: PeerProcess
) -> None:
    # a long deadline: what ends the wait is the health check that finds beta gone
    a = await _federate(cluster, beta, health_interval=0.2, reply_timeout=120)

    final = await within(_until_forwarded_then(a, "hang Tokyo", beta.kill), 20)

    assert final["event"] == "task_complete", final
    assert final["response"].startswith(
        "failed: Your request to swarm beta will get no reply: swarm 'beta' is inactive: "
        "its health check fails"
    ), final
    endpoint = a.state.registry.get_swarm_endpoint("beta")
    assert endpoint is not None and not endpoint.is_active


async def test_peer_paused_after_accepting_fails_the_wait_at_the_deadline(
    cluster: Cluster, beta: PeerProcess
) -> None:
    a = await _federate(cluster, beta, reply_timeout=1.5)

    final = await within(
        _until_forwarded_then(a, "hang Tokyo", lambda: beta.signal(signal.SIGSTOP)), 20
    )
    beta.signal(signal.SIGCONT)

    assert final["event"] == "task_complete", final
    assert final["response"] == (
        "failed: Your request to swarm beta will get no reply: swarm beta did not reply "
        "within 1.5 s. Continue without it, or end the task."
    )


async def test_a_reply_within_the_deadline_settles_the_wait(
    cluster: Cluster, beta: PeerProcess
) -> None:
    a = await _federate(cluster, beta, reply_timeout=1.0)

    result = await ask(a, "Tokyo")
    task_id = result["task_id"]

    assert result["response"] == "weather@beta says: sunny in Tokyo"
    # the answered request's deadline was cancelled: the ledger holds no wait
    swarm = a.state.swarms.lookup("user", "u1")
    assert swarm is not None
    assert not [k for k in swarm.runtime.remote._waits if k[0] == task_id]


async def _notice_sent(task: MAILTask) -> MAILEvent:
    """The first event of ``task`` that records a ``::task_complete::`` notice it sent."""
    async for event in task.log.follow():
        if event.event == "interswarm_message_sent" and "::task_complete::" in event.description:
            return event
    raise AssertionError("the log ended")


async def test_cancel_a_task_waiting_on_a_slow_peer_tells_the_peer(
    cluster: Cluster, beta: PeerProcess
) -> None:
    # beta's weather never ends its turn on "hang": alpha's task waits on the peer
    a = await _federate(cluster, beta)
    client = await a.user()
    task_id = "t-slow"
    body = {"body": "hang Tokyo", "stream": True, "task_id": task_id}
    async with client.stream("POST", "/message", json=body) as response:
        frame: dict[str, Any] = {}
        rest: list[dict[str, Any]] = []
        cancelled = None
        async for line in response.aiter_lines():
            done = read_line(frame, line)
            if done is None:
                continue
            rest.append(done)
            if done["event"] == "interswarm_message_sent" and cancelled is None:
                # beta accepted the request: the task waits on it
                cancelled = await client.post(f"/tasks/{task_id}/cancel")

    assert cancelled is not None
    assert (cancelled.status_code, cancelled.json()) == (
        200,
        {"task_id": task_id, "status": "cancelled"},
    )
    assert (rest[-1]["event"], rest[-1]["data"]["status"]) == ("task_error", "cancelled")
    # the peer got the completion notice with the cancellation text, and accepted it
    notice = await within(_notice_sent(a.task_of("user", "u1", task_id)))
    assert notice.description.startswith("sent interswarm message forward to swarm beta:")
    assert "The task was cancelled by its owner." in notice.description
    errors = [e for e in a.task_of("user", "u1", task_id).log.all() if "error" in e.event]
    assert [e.event for e in errors] == ["task_error"]  # the cancellation, no failed notice
    beta.kill()  # its weather's turn would hold up a graceful stop
