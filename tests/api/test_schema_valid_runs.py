"""Every message a run of each shipped swarm emits meets the original's schema rules.

Issue 22, item 6: the rules of v1.3.6's ``MAIL-core.schema.json`` (written strictly in
``tests/_original_schema.py``) hold for each message a task stores in its ``new_message``
events (``extra_data.full_message``). Each swarm of the repository's ``swarms.json`` runs
with scripted agents in place of its models: the entrypoint interrupts, broadcasts to all,
asks each of its targets and completes the task once all have answered. The offline swarm
also runs with its own agents, so action results are covered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests._original_schema import strict_validator

from mail.api import MAILSwarmTemplate
from mail.core.events import MAILEvent
from mail.swarms_json import load_swarms_json_file
from mail.testing import Incoming, ScriptedAgent, ScriptedCall, tc

ROOT = Path(__file__).resolve().parents[2]
SWARMS = ROOT / "swarms.json"
STRICT = strict_validator()
QUESTION = "Schema check"


def emitted_messages(events: list[MAILEvent]) -> list[Any]:
    messages = [e.extra_data.get("full_message") for e in events if e.event == "new_message"]
    return [m for m in messages if m is not None]


def assert_all_valid(events: list[MAILEvent]) -> list[Any]:
    messages = emitted_messages(events)
    for message in messages:
        errors = sorted(STRICT.iter_errors(message), key=lambda e: list(e.absolute_path))
        assert not errors, (message, [f"{list(e.absolute_path)}: {e.message}" for e in errors])
    return messages


class Entrypoint:
    """Interrupts, broadcasts, asks every target, completes when all have answered."""

    def __init__(self, targets: list[str]) -> None:
        self.targets = targets
        self.answers = 0

    def __call__(self, incoming: Incoming) -> list[ScriptedCall] | ScriptedCall:
        if incoming.sender_type == "user":
            if not self.targets:
                return tc("task_complete", finish_message="nothing to ask")
            return [
                tc("send_interrupt", target=self.targets[0], subject="Heads up", body="soon"),
                tc("send_broadcast", subject="Status", body="asking", targets=["all"]),
                *(tc("send_request", target=t, subject=QUESTION, body="?") for t in self.targets),
            ]
        if incoming.subject == f"Re: {QUESTION}":
            self.answers += 1
            if self.answers == len(self.targets):
                return tc("task_complete", finish_message="all answered")
        return tc("await_message", reason="waiting for answers")


def helper(incoming: Incoming) -> ScriptedCall:
    if incoming.subject == QUESTION:
        return tc("send_response", target=incoming.sender, subject=f"Re: {QUESTION}", body="ok")
    return tc("await_message", reason="nothing to do")


def scripted(template: MAILSwarmTemplate) -> MAILSwarmTemplate:
    agents = []
    for agent in template.agents:
        # local targets only: a remote one (agent@swarm) has no peer here; messages to peers
        # are checked by tests/interswarm/test_schema_valid_payloads.py
        local = [t for t in agent.comm_targets if "@" not in t]
        rule: Any = Entrypoint(local) if agent.name == template.entrypoint else helper
        function = ScriptedAgent(rule=rule, tool_format=agent.tool_format)
        agents.append(agent.copy(factory=lambda _f=function, **_params: _f))
    template.agents = agents
    return template


@pytest.mark.parametrize("name", [s["name"] for s in load_swarms_json_file(SWARMS)])
async def test_a_scripted_run_of_each_shipped_swarm_emits_schema_valid_messages(
    name: str,
) -> None:
    template = scripted(MAILSwarmTemplate.from_swarm_json_file(name, SWARMS))
    async with template:  # opens the MCP servers it declares (mcp-demo), closes them after
        swarm = template.instantiate({"user_token": "k"}, user_id="u1")
        try:
            final, events = await swarm.post_message("Go", show_events=True, timeout=20)
        finally:
            await swarm.shutdown()
    assert final["message"]["body"] in ("all answered", "nothing to ask"), final
    assert events is not None
    messages = assert_all_valid(events)
    kinds = {m["msg_type"] for m in messages}
    if template.agents[0].comm_targets or len(template.agents) > 1:
        assert {"request", "response", "broadcast", "interrupt"} <= kinds, kinds
    assert "broadcast_complete" in kinds


@pytest.mark.parametrize("question", ["What's the weather in Oslo?", "what is 6 * 7?"])
async def test_the_offline_swarm_with_its_own_agents_emits_schema_valid_messages(
    question: str,
) -> None:
    swarm = MAILSwarmTemplate.from_swarm_json_file("offline", SWARMS).instantiate({}, user_id="u1")
    try:
        _, events = await swarm.post_message(question, show_events=True, timeout=20)
    finally:
        await swarm.shutdown()
    assert events is not None
    messages = assert_all_valid(events)
    assert any(m["message"]["subject"] == "::action_complete::" for m in messages)
