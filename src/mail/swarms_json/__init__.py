"""``swarms.json``: the file format that defines swarms, its parsing and its checks."""

from __future__ import annotations

from mail.swarms_json.types import SwarmsJSONAction, SwarmsJSONAgent, SwarmsJSONSwarm
from mail.swarms_json.utils import (
    AgentShape,
    check_swarm,
    check_swarm_structure,
    check_swarm_wiring,
    did_you_mean,
    find_swarm,
    load_swarms_json,
    load_swarms_json_file,
    parse_action,
    parse_agent,
    parse_swarm,
)

__all__ = [
    "AgentShape",
    "SwarmsJSONAction",
    "SwarmsJSONAgent",
    "SwarmsJSONSwarm",
    "check_swarm",
    "check_swarm_structure",
    "check_swarm_wiring",
    "did_you_mean",
    "find_swarm",
    "load_swarms_json",
    "load_swarms_json_file",
    "parse_action",
    "parse_agent",
    "parse_swarm",
]
