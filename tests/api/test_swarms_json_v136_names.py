"""The v1.3.6 names of mail.swarms_json and the v1.3.6 keyword names of the templates'
``from_swarms_json``/``from_swarm_json``: adapters over parse_swarm and friends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mail.api import MAILAction, MAILAgentTemplate, MAILSwarmTemplate
from mail.errors import SwarmDefinitionError
from mail.swarms_json import (
    build_action_from_swarms_json,
    build_agent_from_swarms_json,
    build_swarm_from_swarms_json,
    build_swarms_from_swarms_json,
    load_swarms_json_from_file,
    load_swarms_json_from_string,
    parse_swarm,
)
from mail.swarms_json.utils import (
    validate_action_from_swarms_json,
    validate_agent_from_swarms_json,
    validate_swarm_from_swarms_json,
)

FACTORY = "python::mail.testing:scripted_agent"
ACTION: dict[str, Any] = {
    "name": "lookup",
    "description": "Look something up.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    "function": "python::mail.examples.math_dummy._calculator:calculate_expression",
}
AGENT: dict[str, Any] = {
    "name": "supervisor",
    "factory": FACTORY,
    "comm_targets": [],
    "enable_entrypoint": True,
    "can_complete_tasks": True,
    "agent_params": {},
}
SWARM: dict[str, Any] = {
    "name": "demo",
    "version": "1.0.0",
    "entrypoint": "supervisor",
    "agents": [AGENT],
    "actions": [ACTION],
}


def test_load_from_string_and_file_wrap_the_parsed_swarms(tmp_path: Path) -> None:
    text = json.dumps([SWARM])
    loaded = load_swarms_json_from_string(text)
    assert loaded == {"swarms": [parse_swarm(SWARM)]}
    path = tmp_path / "swarms.json"
    path.write_text(text, encoding="utf-8")
    assert load_swarms_json_from_file(path) == loaded
    assert build_swarms_from_swarms_json(loaded) == loaded["swarms"]
    assert build_swarms_from_swarms_json([SWARM]) == loaded["swarms"]


def test_load_from_string_rejects_what_load_swarms_json_rejects() -> None:
    with pytest.raises(SwarmDefinitionError, match="not valid JSON"):
        load_swarms_json_from_string("[")
    with pytest.raises(SwarmDefinitionError, match="defined twice"):
        build_swarms_from_swarms_json([SWARM, SWARM])


def test_build_fills_defaults_and_validate_raises() -> None:
    assert build_swarm_from_swarms_json(SWARM)["public"] is False
    assert build_agent_from_swarms_json(AGENT)["tool_format"] == "responses"
    assert build_action_from_swarms_json(ACTION)["name"] == "lookup"
    validate_swarm_from_swarms_json(SWARM)
    validate_agent_from_swarms_json(AGENT)
    validate_action_from_swarms_json(ACTION)
    with pytest.raises(SwarmDefinitionError):
        validate_swarm_from_swarms_json({**SWARM, "version": 1})
    with pytest.raises(SwarmDefinitionError):
        validate_agent_from_swarms_json({k: v for k, v in AGENT.items() if k != "factory"})
    with pytest.raises(SwarmDefinitionError):
        validate_action_from_swarms_json({**ACTION, "parameters": {"type": "array"}})


async def test_templates_take_the_v136_keyword_names() -> None:
    action = MAILAction.from_swarms_json(action_data=ACTION)
    again_action = MAILAction.from_swarm_json(json_dump=json.dumps(ACTION))
    assert again_action.name == action.name == "lookup"
    assert json.loads(await action.function({"expression": "6*7"}))["result"] == "42"
    agent = MAILAgentTemplate.from_swarms_json(agent_data=AGENT)
    assert MAILAgentTemplate.from_swarm_json(json_dump=json.dumps(AGENT)).name == agent.name
    swarm = MAILSwarmTemplate.from_swarms_json(swarm_data=SWARM)
    again = MAILSwarmTemplate.from_swarm_json(json_dump=json.dumps(SWARM))
    assert (swarm.name, again.name) == ("demo", "demo")
