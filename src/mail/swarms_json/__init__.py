"""``swarms.json``: the file format that defines swarms, its parsing and its checks.

The ``*_from_swarms_json`` and ``load_swarms_json_from_*`` functions are v1.3.6's names,
thin adapters over :func:`parse_swarm`, :func:`load_swarms_json` and friends.
"""

from __future__ import annotations

from mail.swarms_json.types import (
    SwarmsJSONAction,
    SwarmsJSONAgent,
    SwarmsJSONFile,
    SwarmsJSONSwarm,
)
from mail.swarms_json.utils import (
    AgentShape,
    build_action_from_swarms_json,
    build_agent_from_swarms_json,
    build_swarm_from_swarms_json,
    build_swarms_from_swarms_json,
    check_swarm,
    check_swarm_structure,
    check_swarm_wiring,
    did_you_mean,
    find_swarm,
    load_swarms_json,
    load_swarms_json_file,
    load_swarms_json_from_file,
    load_swarms_json_from_string,
    parse_action,
    parse_agent,
    parse_swarm,
)

__all__ = [
    "AgentShape",
    "SwarmsJSONAction",
    "SwarmsJSONAgent",
    "SwarmsJSONFile",
    "SwarmsJSONSwarm",
    "build_action_from_swarms_json",
    "build_agent_from_swarms_json",
    "build_swarm_from_swarms_json",
    "build_swarms_from_swarms_json",
    "check_swarm",
    "check_swarm_structure",
    "check_swarm_wiring",
    "did_you_mean",
    "find_swarm",
    "load_swarms_json",
    "load_swarms_json_file",
    "load_swarms_json_from_file",
    "load_swarms_json_from_string",
    "parse_action",
    "parse_agent",
    "parse_swarm",
]
