"""The original's team swarms (support, data-analysis, research): their shipped entries
load, and their offline variants complete tasks on a real swarm, calling every action."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mail.api import MAILSwarmTemplate
from mail.core.events import EventName

SWARMS = Path(__file__).resolve().parents[2] / "swarms.json"

# swarm -> (entry agent, workers in order, every action its question exercises)
TEAMS = {
    "support": (
        "coordinator",
        ["faq", "classifier", "sentiment"],
        ["search_faq", "classify_ticket", "analyze_sentiment", "create_escalation"],
    ),
    "data-analysis": (
        "analyst",
        ["processor", "statistics", "reporter"],
        [
            "generate_sample_data",
            "parse_csv",
            "calculate_statistics",
            "run_correlation",
            "format_report",
        ],
    ),
    "research": (
        "researcher",
        ["searcher", "verifier", "summarizer"],
        [
            "search_topic",
            "extract_facts",
            "verify_claim",
            "rate_confidence",
            "summarize_text",
            "create_bibliography",
        ],
    ),
}
QUESTIONS = {
    "support": "I was charged twice and I am angry! Refund me or I cancel.",
    "data-analysis": "Analyze the sales data please.",
    "research": "What is solar power?",
}


@pytest.mark.parametrize("name", [*TEAMS, *(f"{n}-offline" for n in TEAMS)])
def test_team_swarm_loads_with_its_entry_able_to_complete(name: str) -> None:
    template = MAILSwarmTemplate.from_swarm_json_file(name, SWARMS)
    template.validate()
    entry, workers, actions = TEAMS[name.removesuffix("-offline")]
    assert template.entrypoint == entry
    assert set(template.agent_names) == {entry, *workers}
    assert {action.name for action in template.actions} == set(actions)
    [entry_agent] = [a for a in template.agents if a.name == entry]
    assert entry_agent.can_complete_tasks


def test_llm_entry_agents_are_offered_task_complete() -> None:
    """Regression (v1.3.6 known bug): the entry agents of support, data-analysis and
    research were plain agents never offered task_complete."""
    from mail.examples.data_analysis.analyst.agent import LiteLLMAnalystFunction
    from mail.examples.research.researcher.agent import LiteLLMResearcherFunction
    from mail.examples.support.coordinator.agent import LiteLLMCoordinatorFunction

    for cls, name in [
        (LiteLLMCoordinatorFunction, "coordinator"),
        (LiteLLMAnalystFunction, "analyst"),
        (LiteLLMResearcherFunction, "researcher"),
    ]:
        agent = cls(name, ["helper"], [])
        assert agent.can_complete_tasks
        assert "{swarm}" in agent.system


@pytest.mark.parametrize("name", list(TEAMS))
async def test_offline_team_completes_a_task_with_every_action(name: str) -> None:
    _entry, workers, actions = TEAMS[name]
    template = MAILSwarmTemplate.from_swarm_json_file(f"{name}-offline", SWARMS)
    swarm = template.instantiate({}, user_id="tester")
    try:
        final, events = await swarm.post_message(QUESTIONS[name], show_events=True, timeout=20)
    finally:
        await swarm.shutdown()
    assert events is not None
    assert final["msg_type"] == "broadcast_complete"
    body = final["message"]["body"]
    assert body.startswith("Here is what the team found:"), body
    for worker in workers:
        assert f"- {worker}: " in body
    called = [e.extra_data["tool_name"] for e in events if e.event == EventName.TOOL_CALL]
    assert [c for c in called if c in actions] == actions
    assert called[-1] == "task_complete"
    action_calls = [e for e in events if e.event == EventName.ACTION_CALL]
    assert len(action_calls) == len(actions)
    assert sum(e.event == EventName.ACTION_COMPLETE for e in events) == len(actions)
    if name == "support":
        assert re.search(r"Escalated as ESC-[0-9A-F]{8} \(urgent, SLA 1 hour\)", body)
        assert "Category billing" in body
    elif name == "data-analysis":
        assert "Values of revenue: " in body and "# Analysis report" in body
    else:
        assert "is supported" in body and "Bibliography: " in body
    for event in events:
        if event.event == EventName.ACTION_COMPLETE:
            payload = event.description.split("\n", 1)[1]
            assert isinstance(json.loads(payload), dict)


@pytest.mark.parametrize(
    ("name", "peer"), [("swarm-alpha", "swarm-beta"), ("swarm-beta", "swarm-alpha")]
)
def test_federation_demo_swarms_reach_each_others_supervisor(name: str, peer: str) -> None:
    template = MAILSwarmTemplate.from_swarm_json_file(name, SWARMS)
    template.validate()
    assert template.enable_interswarm
    [supervisor] = [a for a in template.agents if a.name == "supervisor"]
    assert supervisor.enable_interswarm and supervisor.can_complete_tasks
    assert f"supervisor@{peer}" in supervisor.comm_targets
