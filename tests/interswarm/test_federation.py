"""Tasks that cross swarms, between real servers (CONTRACT 8; issue 6 "what must be true")."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tests.interswarm.conftest import Cluster, FakePeer, Node, agent_key, swarm, within

from mail.core.tasks import TaskState
from mail.testing import Incoming, ScriptedAgent, ScriptedCall, tc
from mail.version import PROTOCOL_VERSION

pytestmark = pytest.mark.timeout(40)


def names(events: list[dict[str, Any]]) -> list[str]:
    return [e["event"] for e in events]


def first(events: list[dict[str, Any]], name: str, start: int = 0) -> int:
    return next(i for i, e in enumerate(events) if i >= start and e["event"] == name)


def supervisor_asking(target: str) -> ScriptedAgent:
    """Asks ``target`` for the user's body; completes with the answer (or the error)."""

    def rule(incoming: Incoming) -> ScriptedCall:
        if incoming.sender_type == "user":
            return tc("send_request", target=target, subject="Forecast", body=incoming.body)
        if incoming.sender_type == "system":
            return tc("task_complete", finish_message=f"failed: {incoming.body}")
        return tc("task_complete", finish_message=f"{incoming.sender} says: {incoming.body}")

    return ScriptedAgent(rule=rule)


def answering(prefix: str) -> ScriptedAgent:
    """Answers whoever asked with ``<prefix> <body>``."""

    def rule(incoming: Incoming) -> ScriptedCall:
        return tc(
            "send_response", target=incoming.sender, subject="Re", body=f"{prefix} {incoming.body}"
        )

    return ScriptedAgent(rule=rule)


def alpha_asking(target: str) -> Any:
    return swarm("alpha", {"supervisor": supervisor_asking(target)}, {"supervisor": [target]})


def beta_weather(weather: ScriptedAgent | None = None) -> Any:
    return swarm(
        "beta",
        {
            "supervisor": ScriptedAgent(rule=lambda _m: tc("task_complete", finish_message="-")),
            "weather": weather or answering("sunny in"),
        },
        {"supervisor": ["weather"], "weather": ["supervisor", "supervisor@alpha", "u1@alpha"]},
    )


async def ask(node: Node, body: str, **extra: Any) -> dict[str, Any]:
    response = await (await node.user()).post(
        "/message", json={"body": body, "show_events": True, **extra}
    )
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


# --- request / response ----------------------------------------------------------------------


async def test_remote_agent_answers_and_the_task_completes_on_the_origin(
    cluster: Cluster,
) -> None:
    weather = answering("sunny in")
    a = await cluster.start(alpha_asking("weather@beta"))
    b = await cluster.start(beta_weather(weather))
    await cluster.link(a, b)
    await cluster.link(b, a)

    result = await ask(a, "Tokyo")

    assert result["response"] == "weather@beta says: sunny in Tokyo"
    assert result["status"] == "completed"
    events = [{"event": e["event"], **e["data"]} for e in result["events"]]
    sent = first(events, "interswarm_message_sent")
    received = first(events, "interswarm_message_received")
    answer = next(
        i
        for i, e in enumerate(events)
        if e["event"] == "new_message"
        and '<from type="agent">weather@beta</from>' in e["description"]
    )
    assert first(events, "tool_call") < sent < first(events, "task_complete_call")
    assert received < answer < first(events, "task_complete_call")
    assert events[sent]["description"].startswith("sent interswarm message forward to swarm beta:")
    assert '<from type="agent">supervisor@alpha</from>' in events[sent]["description"]
    assert events[received]["description"] == "received interswarm message from swarm beta"
    assert "interswarm_message_error" not in names(events)

    # B ran the request in the runtime of caller alpha, then closed its copy on the notice
    task_id = result["task_id"]
    copy = b.task_of("agent", "alpha", task_id)
    await within(copy.wait_turn())
    assert copy.state is TaskState.COMPLETED
    assert copy.task_owner == "user:u1@alpha"
    assert copy.task_contributors == ["user:u1@alpha", "swarm:alpha@beta"]
    b_events = [e.event for e in copy.log.all()]
    assert b_events == [
        "interswarm_message_received",
        "new_message",
        "tool_call",
        "interswarm_message_sent",
        "interswarm_message_received",  # A's ::task_complete:: notice
        "task_complete",  # which ended the copy's turn
    ]
    b_log = copy.log.all()
    assert "sending message:" in b_log[1].description
    assert '<from type="agent">supervisor@alpha</from>' in b_log[1].description
    assert b_log[3].description.startswith("sent interswarm message back to swarm alpha:")
    assert weather.invocations == 1
    # the notice went to the agent that answered, and closed B's copy with A's answer
    assert copy.response is not None
    assert copy.response["message"]["body"] == "weather@beta says: sunny in Tokyo"


async def test_a_volatile_peer_registered_over_http_is_routable_at_once(cluster: Cluster) -> None:
    a = await cluster.start(alpha_asking("weather@beta"))
    b = await cluster.start(beta_weather())
    before = await ask(a, "first")  # the caller's runtime exists before the peer is known
    assert before["response"].startswith("failed: Your message was not delivered")
    assert "swarm 'beta' is not registered" in before["response"]

    await cluster.link(a, b, volatile=True)
    await cluster.link(b, a, volatile=True)
    after = await ask(a, "second")

    assert after["response"] == "weather@beta says: sunny in second"
    endpoint = a.state.registry.get_swarm_endpoint("beta")
    assert endpoint is not None and endpoint.volatile


async def test_a_persistent_peer_registered_with_a_token_is_routable_at_once(
    cluster: Cluster, tmp_path: Path
) -> None:
    assert not os.environ.get("SWARM_AUTH_TOKEN_BETA")  # only the token given over HTTP
    registry_file = tmp_path / "alpha-registry.json"
    a = await cluster.start(alpha_asking("weather@beta"), registry=registry_file)
    b = await cluster.start(beta_weather())
    await cluster.link(a, b, volatile=False)
    await cluster.link(b, a)

    result = await ask(a, "Lima")

    assert result["response"] == "weather@beta says: sunny in Lima"
    text = registry_file.read_text(encoding="utf-8")
    assert agent_key("alpha", "beta") not in text
    saved = json.loads(text)["endpoints"]["beta"]
    assert (saved["auth_token_ref"], saved["volatile"]) == ("${SWARM_AUTH_TOKEN_BETA}", False)


async def test_the_local_entry_carries_the_protocol_version(cluster: Cluster) -> None:
    a = await cluster.start(alpha_asking("weather@beta"))  # its swarm's version is 1.0.0

    listed = (await (await a.user()).get("/swarms")).json()["swarms"]

    (local,) = [s for s in listed if s["swarm_name"] == "alpha"]
    assert local["version"] == PROTOCOL_VERSION


# --- broadcast ---------------------------------------------------------------------------------


async def test_broadcast_reaches_two_remote_swarms_and_both_answer(cluster: Cluster) -> None:
    replies: list[str] = []

    def collect(incoming: Incoming) -> ScriptedCall:
        if incoming.sender_type == "user":
            return tc(
                "send_interswarm_broadcast",
                subject="Roll call",
                body=incoming.body,
                target_swarms=[],
            )
        replies.append(f"{incoming.sender}: {incoming.body}")
        if len(replies) < 2:
            return tc("await_message", reason="the other swarm")
        return tc("task_complete", finish_message=" | ".join(sorted(replies)))

    remote = {
        name: ScriptedAgent(
            rule=lambda m, name=name: tc(
                "send_response", target=m.sender, subject="Re", body=f"{name} here, got {m.body}"
            )
        )
        for name in ("beta", "gamma")
    }
    a = await cluster.start(
        swarm("alpha", {"supervisor": ScriptedAgent(rule=collect)}, {"supervisor": ["supervisor"]})
    )
    others = [
        await cluster.start(
            swarm(name, {"supervisor": agent}, {"supervisor": ["supervisor@alpha"]})
        )
        for name, agent in remote.items()
    ]
    for other in others:
        await cluster.link(a, other)
        await cluster.link(other, a)

    result = await ask(a, "hello")

    assert result["response"] == (
        "supervisor@beta: beta here, got hello | supervisor@gamma: gamma here, got hello"
    )
    events = result["events"]
    tool = next(e for e in events if e["event"] == "tool_call")
    assert tool["data"]["extra_data"]["tool_name"] == "send_interswarm_broadcast"
    sent = [e["data"]["description"] for e in events if e["event"] == "interswarm_message_sent"]
    # (the completion notices "back" to both may be sent while the answer is being stored)
    assert sorted(d.split(":")[0] for d in sent if " forward " in d) == [
        "sent interswarm message forward to swarm beta",
        "sent interswarm message forward to swarm gamma",
    ]
    assert all(agent.invocations == 1 for agent in remote.values())
    for other in others:
        copy = other.task_of("agent", "alpha", result["task_id"])
        first_message = next(e for e in copy.log.all() if e.event == "new_message")
        assert '<address type="agent">all</address>' in first_message.description


async def test_discover_swarms_registers_what_a_peer_lists(cluster: Cluster) -> None:
    b = await cluster.start(beta_weather())

    def discover(incoming: Incoming) -> ScriptedCall:
        if incoming.sender_type == "user":
            return tc("discover_swarms", discovery_urls=[incoming.body])
        return tc("task_complete", finish_message=f"after {incoming.subject}")

    supervisor = ScriptedAgent(rule=discover)
    a = await cluster.start(
        swarm("alpha", {"supervisor": supervisor}, {"supervisor": ["supervisor"]})
    )

    result = await ask(a, b.url)

    assert result["response"] == "after ::action_complete::"
    endpoint = a.state.registry.get_swarm_endpoint("beta")
    assert endpoint is not None and endpoint.volatile and endpoint.base_url == b.url
    history = supervisor.calls[-1][0]
    outputs = [h.get("output") for h in history if h.get("type") == "function_call_output"]
    assert "SUCCESS: registered 1 new swarm(s): beta" in outputs


# --- A -> B -> C and back ------------------------------------------------------------------------


async def test_a_task_hops_alpha_beta_gamma_and_back(cluster: Cluster) -> None:
    def plan(incoming: Incoming) -> ScriptedCall:
        if incoming.sender == "supervisor@alpha":
            return tc("send_request", target="calc@gamma", subject="Compute", body=incoming.body)
        return tc(
            "send_response",
            target="supervisor@alpha",
            subject="Plan",
            body=f"planned: {incoming.body}",
        )

    calc = answering("calc of")
    a = await cluster.start(alpha_asking("planner@beta"))
    b = await cluster.start(
        swarm(
            "beta",
            {"planner": ScriptedAgent(rule=plan)},
            {"planner": ["supervisor@alpha", "calc@gamma"]},
            entrypoint="planner",
        )
    )
    c = await cluster.start(
        swarm("gamma", {"calc": calc}, {"calc": ["planner@beta"]}, entrypoint="calc")
    )
    await cluster.link(a, b)
    await cluster.link(b, a)
    await cluster.link(b, c)
    await cluster.link(c, b)

    result = await ask(a, "2+2")

    assert result["response"] == "planner@beta says: planned: calc of 2+2"
    task_id = result["task_id"]
    on_b = b.task_of("agent", "alpha", task_id)
    on_c = c.task_of("agent", "beta", task_id)
    assert on_c.task_owner == "user:u1@alpha"
    assert on_c.task_contributors == ["user:u1@alpha", "swarm:alpha@beta", "swarm:beta@gamma"]
    # A's completion closes B's copy, and B passes the notice on to C
    await within(on_b.wait_turn())
    await within(on_c.wait_turn())
    assert on_b.state is TaskState.COMPLETED
    assert on_c.state is TaskState.COMPLETED
    assert [e.event for e in on_c.log.all()].count("interswarm_message_received") == 2
    assert calc.invocations == 1
    assert agent_key("beta", "gamma") in c.auth.mapping


# --- the registry across a restart ------------------------------------------------------------


async def test_after_a_restart_the_registry_file_holds_persistent_peers_and_references_only(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry_file = tmp_path / "alpha-registry.json"
    a = await cluster.start(alpha_asking("weather@beta"), registry=registry_file)
    b = await cluster.start(beta_weather())
    async with FakePeer("gamma") as gamma:
        await cluster.link(a, b, volatile=False)
        await cluster.link(a, gamma, volatile=True)
    await a.stop()

    text = registry_file.read_text(encoding="utf-8")
    saved = json.loads(text)
    assert set(saved["endpoints"]) == {"alpha", "beta"}  # the volatile peer is gone
    assert saved["endpoints"]["beta"]["auth_token_ref"] == "${SWARM_AUTH_TOKEN_BETA}"
    assert saved["endpoints"]["beta"]["base_url"] == b.url
    assert agent_key("alpha", "beta") not in text
    refs = [e["auth_token_ref"] for e in saved["endpoints"].values()]
    assert all(ref is None or (ref.startswith("${") and ref.endswith("}")) for ref in refs)

    # the restarted server knows beta from the file and reaches it with the variable's token
    monkeypatch.setenv("SWARM_AUTH_TOKEN_BETA", agent_key("alpha", "beta"))
    again = await cluster.start(alpha_asking("weather@beta"), registry=registry_file)
    await cluster.link(b, again)  # beta learns alpha's new address
    endpoint = again.state.registry.get_swarm_endpoint("beta")
    assert endpoint is not None and not endpoint.volatile

    result = await ask(again, "Oslo")

    assert result["response"] == "weather@beta says: sunny in Oslo"
    assert json.loads(registry_file.read_text(encoding="utf-8")) == saved
