"""``swarms.json``: the file format that defines swarms, its parsing and its checks.

The ``*_from_swarms_json`` and ``load_swarms_json_from_*`` functions are v1.3.6's names,
thin adapters over :func:`parse_swarm`, :func:`load_swarms_json` and friends. A swarm's
``mcp_servers`` are parsed into :class:`MCPServerSpec` (:func:`parse_mcp_servers`,
:func:`check_agent_mcp_servers`, :func:`env_reference`); reference strings (``python::``,
``url::``) are resolved by :mod:`mail.swarms_json.references`.
"""

from __future__ import annotations

from mail.swarms_json._mcp import (
    MCPServerSpec,
    check_agent_mcp_servers,
    env_reference,
    parse_mcp_servers,
)
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
    "MCPServerSpec",
    "SwarmsJSONAction",
    "SwarmsJSONAgent",
    "SwarmsJSONFile",
    "SwarmsJSONSwarm",
    "build_action_from_swarms_json",
    "build_agent_from_swarms_json",
    "build_swarm_from_swarms_json",
    "build_swarms_from_swarms_json",
    "check_agent_mcp_servers",
    "check_swarm",
    "check_swarm_structure",
    "check_swarm_wiring",
    "did_you_mean",
    "env_reference",
    "find_swarm",
    "load_swarms_json",
    "load_swarms_json_file",
    "load_swarms_json_from_file",
    "load_swarms_json_from_string",
    "parse_action",
    "parse_agent",
    "parse_mcp_servers",
    "parse_swarm",
]
