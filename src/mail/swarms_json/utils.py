"""Loading and checking ``swarms.json``.

A file is a JSON array of swarm objects. :func:`parse_swarm` checks one object's fields and
types and fills in defaults. What the fields mean together is checked in two steps:
:func:`check_swarm_structure` when a swarm is loaded (unique names, well-formed addresses,
actions, tool names) and :func:`check_swarm_wiring` when it is instantiated (entrypoint,
communication targets, an agent that completes tasks), so a file may name agents it does
not define until it is run. Every error is a :class:`~mail.errors.SwarmDefinitionError`
naming the swarm, the agent and the field.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from mail._limits import loads, name_problem
from mail.core.budget import budget_problem
from mail.core.message import parse_agent_address
from mail.core.tools import MAIL_TOOL_NAMES
from mail.errors import InvalidMessageError, SwarmDefinitionError
from mail.swarms_json._a2a import a2a_agent_objects
from mail.swarms_json._mcp import check_agent_mcp_servers, parse_mcp_servers
from mail.swarms_json.types import (
    SwarmsJSONAction,
    SwarmsJSONAgent,
    SwarmsJSONFile,
    SwarmsJSONSwarm,
)

__all__ = [
    "AgentShape",
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
    "validate_action_from_swarms_json",
    "validate_agent_from_swarms_json",
    "validate_swarm_from_swarms_json",
]

logger = logging.getLogger("mail.swarms_json")

_STRINGS = "a list of strings"

# field -> (expected type(s), type name, required, default)
_SWARM_FIELDS: dict[str, tuple[type | tuple[type, ...], str, bool, Any]] = {
    "name": (str, "a string", True, None),
    "version": (str, "a string", True, None),
    "entrypoint": (str, "a string", True, None),
    "agents": (list, "a list", True, None),
    "actions": (list, "a list", True, None),
    "description": (str, "a string", False, ""),
    "keywords": (list, _STRINGS, False, []),
    "public": (bool, "true or false", False, False),
    "enable_interswarm": (bool, "true or false", False, False),
    "action_imports": (list, _STRINGS, False, []),
    "breakpoint_tools": (list, _STRINGS, False, []),
    "exclude_tools": (list, _STRINGS, False, []),
    "enable_db_agent_histories": (bool, "true or false", False, False),
    "tool_format": (str, '"completions" or "responses"', False, None),
    "mcp_servers": (list, "a list of MCP server objects", False, []),
    "a2a_agents": (list, "a list of A2A agent objects", False, []),
    "budget": ((dict, type(None)), "an object of limits or null", False, None),
}
_AGENT_FIELDS: dict[str, tuple[type | tuple[type, ...], str, bool, Any]] = {
    "name": (str, "a string", True, None),
    "factory": (str, "a string", True, None),
    "comm_targets": (list, _STRINGS, True, None),
    "agent_params": (dict, "an object", True, None),
    "enable_entrypoint": (bool, "true or false", False, False),
    "enable_interswarm": (bool, "true or false", False, False),
    "can_complete_tasks": (bool, "true or false", False, False),
    "tool_format": (str, '"completions" or "responses"', False, "responses"),
    "actions": (list, _STRINGS, False, []),
    "exclude_tools": (list, _STRINGS, False, []),
    "mcp_servers": (list, _STRINGS, False, []),
}
_ACTION_FIELDS: dict[str, tuple[type | tuple[type, ...], str, bool, Any]] = {
    "name": (str, "a string", True, None),
    "description": (str, "a string", True, None),
    "parameters": (dict, "a JSON Schema object", True, None),
    "function": (str, "a 'python::module:attr' string", True, None),
}
_TOOL_FORMATS = ("completions", "responses")


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" Did you mean '{close[0]}'?" if close else ""


def _fields(
    obj: Any,
    spec: Mapping[str, tuple[type | tuple[type, ...], str, bool, Any]],
    where: dict[str, str | None],
) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise SwarmDefinitionError(f"must be a JSON object, got {type(obj).__name__}", **where)
    out: dict[str, Any] = {}
    for key in obj:
        if key not in spec and not key.startswith(("$", "_")):
            raise SwarmDefinitionError(
                f"unknown field.{did_you_mean(key, spec)}", **where, field=key
            )
    for key, (types, type_name, required, default) in spec.items():
        if key not in obj:
            if required:
                raise SwarmDefinitionError("is required", **where, field=key)
            out[key] = list(default) if isinstance(default, list) else default
            continue
        value = obj[key]
        # bool is an int subclass and str is iterable: check exactly
        if not isinstance(value, types) or (types is not bool and isinstance(value, bool)):
            raise SwarmDefinitionError(
                f"must be {type_name}, got {json.dumps(value)[:60]}", **where, field=key
            )
        if type_name == _STRINGS and not all(isinstance(v, str) for v in cast(list[Any], value)):
            raise SwarmDefinitionError(f"must be {type_name}", **where, field=key)
        if key == "tool_format" and value not in _TOOL_FORMATS:
            raise SwarmDefinitionError(
                f'must be "completions" or "responses", got {value!r}', **where, field=key
            )
        if key == "budget" and value is not None and (problem := budget_problem(value)):
            raise SwarmDefinitionError(problem, **where, field=key)
        out[key] = value
    return out


def parse_action(obj: Any, swarm: str | None = None) -> SwarmsJSONAction:
    """Check one action object. Raises :class:`SwarmDefinitionError`."""
    name = obj.get("name") if isinstance(obj, dict) else None
    where: dict[str, str | None] = {"swarm": swarm, "agent": None}
    fields = _fields(obj, _ACTION_FIELDS, where)
    if not fields["name"].strip():
        raise SwarmDefinitionError("must not be empty", **where, field="name")
    if fields["parameters"].get("type", "object") != "object":
        raise SwarmDefinitionError(
            f"action '{name}': parameters must describe an object", **where, field="parameters"
        )
    return cast(SwarmsJSONAction, fields)


def parse_agent(
    obj: Any, swarm: str | None = None, default_tool_format: str | None = None
) -> SwarmsJSONAgent:
    """Check one agent object and fill in its defaults. Raises :class:`SwarmDefinitionError`."""
    agent = obj.get("name") if isinstance(obj, dict) and isinstance(obj.get("name"), str) else None
    where: dict[str, str | None] = {"swarm": swarm, "agent": agent}
    if default_tool_format and isinstance(obj, dict) and "tool_format" not in obj:
        obj = {**obj, "tool_format": default_tool_format}
    fields = _fields(obj, _AGENT_FIELDS, where)
    if not fields["name"].strip():
        raise SwarmDefinitionError("must not be empty", **where, field="name")
    params = dict(fields["agent_params"])
    if "tool_format" in params:
        logger.warning(
            "swarm %s, agent %s: 'tool_format' inside agent_params is deprecated and ignored; "
            "set it on the agent",
            swarm,
            agent,
        )
        del params["tool_format"]
    fields["agent_params"] = params
    return cast(SwarmsJSONAgent, fields)


def parse_swarm(obj: Any) -> SwarmsJSONSwarm:
    """Check one swarm object's fields and types and fill in defaults.

    Raises :class:`SwarmDefinitionError` naming the swarm, agent and field at fault.
    """
    swarm = obj.get("name") if isinstance(obj, dict) and isinstance(obj.get("name"), str) else None
    fields = _fields(obj, _SWARM_FIELDS, {"swarm": swarm, "agent": None})
    problem = name_problem(fields["name"])
    if problem is not None:  # the value is in the message
        raise SwarmDefinitionError(problem, field="name")
    default_format = fields.pop("tool_format")
    fields["agents"] = [parse_agent(a, swarm, default_format) for a in fields["agents"]]
    remote = a2a_agent_objects(fields["a2a_agents"], fields["agents"], swarm)
    fields["agents"] += [parse_agent(a, swarm) for a in remote]
    fields["actions"] = [parse_action(a, swarm) for a in fields["actions"]]
    servers = parse_mcp_servers(fields["mcp_servers"], swarm)
    for agent in fields["agents"]:
        check_agent_mcp_servers(swarm or "", agent["name"], agent["mcp_servers"], servers)
    return cast(SwarmsJSONSwarm, fields)


def load_swarms_json(data: str | bytes | list[Any]) -> list[SwarmsJSONSwarm]:
    """Parse the text (or decoded JSON) of a ``swarms.json`` file: an array of swarms."""
    if isinstance(data, str | bytes):
        try:
            data = loads(data)
        except ValueError as e:
            raise SwarmDefinitionError(f"swarms.json is not valid JSON: {e}") from e
    if not isinstance(data, list):
        raise SwarmDefinitionError("swarms.json must be a JSON array of swarm objects")
    swarms = [parse_swarm(s) for s in data]
    seen: set[str] = set()
    for s in swarms:
        if s["name"] in seen:
            raise SwarmDefinitionError(
                "is defined twice in the file", swarm=s["name"], field="name"
            )
        seen.add(s["name"])
    return swarms


def load_swarms_json_file(path: str | Path) -> list[SwarmsJSONSwarm]:
    """Read and parse a ``swarms.json`` file. Raises :class:`SwarmDefinitionError`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise SwarmDefinitionError(f"cannot read swarm definitions from {path}: {e}") from e
    return load_swarms_json(text)


def find_swarm(swarms: Sequence[SwarmsJSONSwarm], name: str) -> SwarmsJSONSwarm:
    """The swarm called ``name``. Raises :class:`SwarmDefinitionError` when absent."""
    for swarm in swarms:
        if swarm["name"] == name:
            return swarm
    names = [s["name"] for s in swarms]
    raise SwarmDefinitionError(
        f"no swarm named '{name}' (defined: {', '.join(names) or 'none'}).{did_you_mean(name, names)}"
    )


@dataclass(frozen=True, slots=True)
class AgentShape:
    """What :func:`check_swarm` needs to know of an agent."""

    name: str
    comm_targets: Sequence[str]
    actions: Sequence[str]
    enable_entrypoint: bool
    enable_interswarm: bool
    can_complete_tasks: bool
    exclude_tools: Sequence[str] = ()


def check_swarm(
    *,
    name: str,
    agents: Sequence[AgentShape],
    action_names: Iterable[str],
    entrypoint: str,
    enable_interswarm: bool,
    breakpoint_tools: Iterable[str] = (),
    exclude_tools: Iterable[str] = (),
) -> None:
    """Check a whole swarm: :func:`check_swarm_structure`, then :func:`check_swarm_wiring`.

    Raises :class:`SwarmDefinitionError` naming the swarm, agent and field.
    """
    check_swarm_structure(
        name=name,
        agents=agents,
        action_names=action_names,
        breakpoint_tools=breakpoint_tools,
        exclude_tools=exclude_tools,
    )
    check_swarm_wiring(
        name=name, agents=agents, entrypoint=entrypoint, enable_interswarm=enable_interswarm
    )


def check_swarm_structure(
    *,
    name: str,
    agents: Sequence[AgentShape],
    action_names: Iterable[str],
    breakpoint_tools: Iterable[str] = (),
    exclude_tools: Iterable[str] = (),
) -> None:
    """Check what a swarm definition says on its own (checked when it is loaded).

    Names non-empty and unique; at least one agent; communication targets well-formed
    addresses; agents' actions exist; breakpoint tools are MAIL tools or actions; excluded
    tools are MAIL tools. Raises :class:`SwarmDefinitionError` naming the swarm, agent
    and field.
    """
    if not name or not name.strip():
        raise SwarmDefinitionError("must not be empty", field="name")
    if not agents:
        raise SwarmDefinitionError("a swarm needs at least one agent", swarm=name, field="agents")
    names = [a.name for a in agents]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SwarmDefinitionError(
            f"agent names must be unique: {', '.join(duplicates)}", swarm=name, field="agents"
        )
    actions = set(action_names)
    for agent in agents:
        _check_agent(name, agent, actions)
    tools = set(MAIL_TOOL_NAMES)
    for tool in breakpoint_tools:
        if tool not in tools and tool not in actions:
            raise SwarmDefinitionError(
                f"'{tool}' is neither a MAIL tool nor an action.{did_you_mean(tool, tools | actions)}",
                swarm=name,
                field="breakpoint_tools",
            )
    for tool in exclude_tools:
        if tool not in tools:
            raise SwarmDefinitionError(
                f"'{tool}' is not a MAIL tool.{did_you_mean(tool, tools)}",
                swarm=name,
                field="exclude_tools",
            )


def check_swarm_wiring(
    *,
    name: str,
    agents: Sequence[AgentShape],
    entrypoint: str,
    enable_interswarm: bool,
) -> None:
    """Check that a swarm's agents reach each other (checked when it is instantiated).

    The entrypoint exists and has ``enable_entrypoint``; at least one agent can complete
    tasks; communication targets name agents of the swarm, or ``agent@swarm`` when the
    swarm enables interswarm. Raises :class:`SwarmDefinitionError` naming the swarm,
    agent and field.
    """
    by_name = {a.name: a for a in agents}
    if entrypoint not in by_name:
        raise SwarmDefinitionError(
            f"entrypoint '{entrypoint}' is not an agent of this swarm.{did_you_mean(entrypoint, by_name)}",
            swarm=name,
            field="entrypoint",
        )
    if not by_name[entrypoint].enable_entrypoint:
        raise SwarmDefinitionError(
            f"entrypoint '{entrypoint}' must have enable_entrypoint: true",
            swarm=name,
            agent=entrypoint,
            field="enable_entrypoint",
        )
    if not any(a.can_complete_tasks for a in agents):
        raise SwarmDefinitionError(
            "at least one agent needs can_complete_tasks: true",
            swarm=name,
            field="can_complete_tasks",
        )
    for agent in agents:
        for target in agent.comm_targets:
            _check_target(name, agent.name, target, by_name, enable_interswarm)


def _check_target(
    swarm: str, agent: str, target: str, by_name: Mapping[str, AgentShape], interswarm: bool
) -> None:
    target_name, target_swarm = parse_agent_address(target)  # well-formed: checked at load
    if target_swarm is not None and target_swarm != swarm:
        if not interswarm:
            raise SwarmDefinitionError(
                f"'{target}' is in another swarm, but this swarm does not enable interswarm",
                swarm=swarm,
                agent=agent,
                field="comm_targets",
            )
        return
    if target_name not in by_name:
        raise SwarmDefinitionError(
            f"'{target}' is not an agent of this swarm.{did_you_mean(target_name, by_name)}",
            swarm=swarm,
            agent=agent,
            field="comm_targets",
        )


def _check_agent(swarm: str, agent: AgentShape, actions: set[str]) -> None:
    for target in agent.comm_targets:
        try:
            parse_agent_address(target)
        except InvalidMessageError as e:
            raise SwarmDefinitionError(
                str(e), swarm=swarm, agent=agent.name, field="comm_targets"
            ) from e
    for action in agent.actions:
        if action not in actions:
            raise SwarmDefinitionError(
                f"action '{action}' is not defined by the swarm.{did_you_mean(action, actions)}",
                swarm=swarm,
                agent=agent.name,
                field="actions",
            )
    for tool in agent.exclude_tools:
        if tool not in MAIL_TOOL_NAMES:
            raise SwarmDefinitionError(
                f"'{tool}' is not a MAIL tool.{did_you_mean(tool, MAIL_TOOL_NAMES)}",
                swarm=swarm,
                agent=agent.name,
                field="exclude_tools",
            )


# --- v1.3.6 names ---------------------------------------------------------------------------
# Thin adapters over the functions above. Checks raise SwarmDefinitionError (v1.3.6 raised
# ValueError/TypeError) and the built objects are our parsed typed dicts, defaults filled in.


def load_swarms_json_from_string(contents: str) -> SwarmsJSONFile:
    """Parse the text of a ``swarms.json`` file into ``{"swarms": [...]}``.

    Each swarm is checked and completed like :func:`parse_swarm`. Raises
    :class:`SwarmDefinitionError` for invalid JSON or a bad swarm.
    """
    return {"swarms": load_swarms_json(contents)}


def load_swarms_json_from_file(path: str | Path) -> SwarmsJSONFile:
    """Read and parse a ``swarms.json`` file into ``{"swarms": [...]}``.

    Raises :class:`SwarmDefinitionError` when the file cannot be read or is invalid.
    """
    return {"swarms": load_swarms_json_file(path)}


def build_swarms_from_swarms_json(
    contents: SwarmsJSONFile | Sequence[Any],
) -> list[SwarmsJSONSwarm]:
    """The checked swarms of a parsed file: ``{"swarms": [...]}`` or the bare JSON array.

    Raises :class:`SwarmDefinitionError` for a bad swarm or a name defined twice.
    """
    swarms = contents["swarms"] if isinstance(contents, Mapping) else contents
    return load_swarms_json(list(swarms))


def validate_swarm_from_swarms_json(swarm_candidate: Any) -> None:
    """Check one swarm object (fields, types, its agents and actions).

    Raises :class:`SwarmDefinitionError` naming the swarm, agent and field at fault.
    """
    parse_swarm(swarm_candidate)


def build_swarm_from_swarms_json(swarm_candidate: Any) -> SwarmsJSONSwarm:
    """Check one swarm object and return it with its defaults filled in (:func:`parse_swarm`)."""
    return parse_swarm(swarm_candidate)


def validate_agent_from_swarms_json(agent_candidate: Any) -> None:
    """Check one agent object. Raises :class:`SwarmDefinitionError`."""
    parse_agent(agent_candidate)


def build_agent_from_swarms_json(agent_candidate: Any) -> SwarmsJSONAgent:
    """Check one agent object and return it with its defaults filled in (:func:`parse_agent`)."""
    return parse_agent(agent_candidate)


def validate_action_from_swarms_json(action_candidate: Any) -> None:
    """Check one action object. Raises :class:`SwarmDefinitionError`."""
    parse_action(action_candidate)


def build_action_from_swarms_json(action_candidate: Any) -> SwarmsJSONAction:
    """Check one action object and return it (:func:`parse_action`)."""
    return parse_action(action_candidate)
