"""A running MAILSwarm reshaped: ``update_from_adjacency_matrix``, ``get_subswarm``, and
reloading its tasks from a store (CONTRACT 6.3)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mail.api import MAILAgentTemplate, MAILSwarm, MAILSwarmTemplate
from mail.db import CallerKey, MemoryStore
from mail.errors import SwarmDefinitionError, TaskStateError
from mail.factories import LiteLLMSupervisorFunction
from mail.testing import Incoming, ScriptedAgent, tc
from mail.testing.llm import StubLLMServer, StubRequest

WAIT = 10.0


def supervisor_rule(incoming: Incoming) -> Any:
    """Asks the agent named by the user's message; completes with what comes back."""
    if incoming.sender_type in ("user", "admin"):
        return tc("send_request", target=incoming.body, subject="job", body="hello")
    return tc("task_complete", finish_message=f"{incoming.subject}: {incoming.body}")


def helper_rule(incoming: Incoming) -> Any:
    return tc("send_response", target=incoming.sender, subject="re", body="helped")


def scripted(rule: Any) -> Any:
    def build(**params: Any) -> ScriptedAgent:
        agent = ScriptedAgent(rule=rule)
        # what MAILAgentFunction subclasses carry: the swarm keeps them in step
        agent.comm_targets = params["comm_targets"]  # type: ignore[attr-defined]
        agent.system = "You help."  # type: ignore[attr-defined]
        return agent

    return build


def template(**agents: Any) -> MAILSwarmTemplate:
    factories = {"supervisor": scripted(supervisor_rule), "worker": scripted(helper_rule)}
    factories["helper"] = scripted(helper_rule)
    factories.update(agents)
    targets = {"supervisor": ["worker"], "worker": ["supervisor"], "helper": ["supervisor"]}
    return MAILSwarmTemplate(
        "topo",
        "1.0.0",
        [
            MAILAgentTemplate(
                name,
                factory,
                targets[name],
                [],
                {},
                enable_entrypoint=name == "supervisor",
                can_complete_tasks=name == "supervisor",
            )
            for name, factory in factories.items()
        ],
        [],
        "supervisor",
    )


@pytest.fixture
async def swarm() -> AsyncIterator[MAILSwarm]:
    running = template().instantiate({}, user_id="u1")
    yield running
    await running.shutdown(timeout=1.0)


async def test_rewiring_a_running_swarm_changes_routing_tools_and_prompts(
    swarm: MAILSwarm,
) -> None:
    final, _ = await swarm.post_message("worker", timeout=WAIT)
    assert final["message"]["body"] == "re: helped"

    swarm.update_from_adjacency_matrix([[0, 0, 1], [1, 0, 0], [1, 0, 0]])

    assert swarm.adjacency_matrix == [[0, 0, 1], [1, 0, 0], [1, 0, 0]]
    supervisor = swarm.agents[0]
    assert supervisor.comm_targets == ["helper"]
    assert supervisor.function.comm_targets == ["helper"]
    assert "Name: helper" in supervisor.function.system
    assert "Name: worker" not in supervisor.function.system
    refused, _ = await swarm.post_message("worker", timeout=WAIT)
    assert "you may not contact worker" in refused["message"]["body"]
    assert "Allowed recipients: helper" in refused["message"]["body"]
    helped, _ = await swarm.post_message("helper", timeout=WAIT)
    assert helped["message"]["body"] == "re: helped"


async def test_bad_matrices_change_nothing(swarm: MAILSwarm) -> None:
    before = swarm.adjacency_matrix
    with pytest.raises(SwarmDefinitionError, match="must be 3x3") as shape:
        swarm.update_from_adjacency_matrix([[0, 1], [1, 0]])
    assert (shape.value.swarm, shape.value.field) == ("topo", "adjacency_matrix")
    with pytest.raises(SwarmDefinitionError, match="0 or 1"):
        swarm.update_from_adjacency_matrix([[0, 2, 0], [1, 0, 0], [1, 0, 0]])
    with pytest.raises(SwarmDefinitionError, match="no comm targets") as lonely:
        swarm.update_from_adjacency_matrix([[0, 1, 1], [0, 0, 0], [1, 0, 0]])
    assert (lonely.value.agent, lonely.value.field) == ("worker", "comm_targets")
    assert swarm.adjacency_matrix == before
    assert swarm.runtime.agents["worker"].comm_targets == ["supervisor"]


async def test_rewiring_is_refused_while_a_task_runs() -> None:
    entered, release = asyncio.Event(), asyncio.Event()
    inner = ScriptedAgent(rule=helper_rule)

    async def gated(history: list[dict[str, Any]], choice: Any) -> Any:
        entered.set()
        await release.wait()
        return await inner(history, choice)

    running = template(worker=lambda **_: gated).instantiate({}, user_id="u1")
    try:
        task = await running.submit_message_nowait(
            running.build_message("job", "worker", ["supervisor"])
        )
        await asyncio.wait_for(entered.wait(), WAIT)
        with pytest.raises(TaskStateError, match=task.task_id):
            running.update_from_adjacency_matrix([[0, 1, 1], [1, 0, 0], [1, 0, 0]])
        release.set()
        final = await running.runtime.wait_for_task(task.task_id, WAIT)
        assert final["message"]["body"] == "re: helped"
        running.update_from_adjacency_matrix([[0, 1, 1], [1, 0, 0], [1, 0, 0]])
        assert running.agents[0].comm_targets == ["worker", "helper"]
    finally:
        await running.shutdown(timeout=1.0)


async def test_get_subswarm_of_a_running_swarm_is_a_template_of_its_current_wiring(
    swarm: MAILSwarm,
) -> None:
    swarm.update_from_adjacency_matrix([[0, 1, 1], [1, 0, 0], [1, 0, 0]])

    sub = swarm.get_subswarm(["supervisor", "helper"], "-lite")

    assert isinstance(sub, MAILSwarmTemplate)
    assert (sub.name, sub.agent_names, sub.entrypoint) == (
        "topo-lite",
        ["supervisor", "helper"],
        "supervisor",
    )
    assert sub.agents[0].comm_targets == ["helper"]  # worker is not in the sub-swarm
    assert swarm.agent_names == ["supervisor", "worker", "helper"]  # unchanged
    small = sub.instantiate({}, user_id="u1")
    try:
        final, _ = await small.post_message("helper", timeout=WAIT)
        assert final["message"]["body"] == "re: helped"
        assert small.agents[0].function is not swarm.agents[0].function  # built anew
    finally:
        await small.shutdown(timeout=1.0)
    with pytest.raises(SwarmDefinitionError, match="unknown agents: nobody"):
        swarm.get_subswarm(["nobody"], "-x")
    # a sub-swarm without an entrypoint fails when it is instantiated, not before
    headless = swarm.get_subswarm(["helper"], "-headless")
    with pytest.raises(SwarmDefinitionError) as info:
        headless.instantiate({})
    assert (info.value.swarm, info.value.agent, info.value.field) == (
        "topo-headless",
        "helper",
        "enable_entrypoint",
    )


async def test_load_tasks_from_db_brings_back_a_callers_tasks() -> None:
    store = MemoryStore()
    await store.open()
    try:
        first = template().instantiate({}, user_id="u1", store=store)
        final, _ = await first.post_message("helper", timeout=WAIT)
        await first.shutdown(timeout=1.0)
        assert await store.load_tasks(CallerKey(swarm="topo", role="user", id="u1"))

        second = template().instantiate({}, user_id="u1", store=store)
        assert await second.load_tasks_from_db() == 1
        assert await second.load_agent_histories_from_db() == 0  # already there
        task = second.get_task_by_id(final["message"]["task_id"])
        assert task is not None
        assert second.get_response_message(task.task_id) == final
        await second.shutdown(timeout=1.0)
    finally:
        await store.close()


async def test_an_llm_agent_is_offered_its_new_targets_after_rewiring() -> None:
    def llm_supervisor(**params: Any) -> Any:
        return LiteLLMSupervisorFunction(
            **params, llm="openai/stub-model", system="You lead.", use_proxy=False
        )

    def request_targets(request: StubRequest) -> list[str]:
        send = next(t for t in request.json["tools"] if t.get("name") == "send_request")
        targets: list[str] = send["parameters"]["properties"]["target"]["enum"]
        return targets

    async with StubLLMServer() as llm:
        done = [("task_complete", {"finish_message": "ok"})]
        llm.script(done, done)
        running = template(supervisor=llm_supervisor).instantiate(
            {"api_base": llm.base_url, "api_key": "k"}, user_id="u1"
        )
        try:
            await running.post_message("hi", timeout=WAIT)
            running.update_from_adjacency_matrix([[0, 0, 1], [1, 0, 0], [1, 0, 0]])
            await running.post_message("hi again", timeout=WAIT)
        finally:
            await running.shutdown(timeout=1.0)
        before, after = llm.requests
    assert request_targets(before) == ["worker"]
    assert request_targets(after) == ["helper"]
    assert "Name: worker" in before.json["instructions"]
    assert "Name: helper" in after.json["instructions"]
    assert "Name: worker" not in after.json["instructions"]
