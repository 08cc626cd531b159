"""MAIL tools: the function-tool specs agents are offered, and how their calls become messages.

Specs come in two formats (CONTRACT 5.3), chosen by ``style``:

- ``"completions"`` (chat completions):
  ``{"type": "function", "function": {"name", "strict": true, "parameters", "description"}}``
- ``"responses"`` (Responses API):
  ``{"type": "function", "name", "description", "parameters", "strict": true}``

Every spec is strict: ``additionalProperties: false``, every property in ``required``,
optional fields typed ``anyOf [T, null]``, and ``parameters.title`` = the tool name.

Specs are built once per distinct argument tuple and cached; every ``create_*`` function
and :func:`get_agent_tools` return fresh deep copies, so callers may mutate what they get.

:class:`AgentToolCall` is what an agent function returns for each call its model made;
:func:`convert_call_to_mail_message` turns the messaging calls into MAIL messages and
:func:`normalize_breakpoint_tool_call` renders a call for a ``::breakpoint_tool_call::``
(they live in :mod:`mail.core._calls`).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from mail.core._calls import (
    AgentToolCall,
    convert_call_to_mail_message,
    convert_manual_step_call_to_mail_message,
    normalize_breakpoint_tool_call,
)
from mail.core._tool_help import TOOL_HELP, get_tool_help
from mail.core._tool_specs import (
    ToolFormat,
    cached_mail_tool_spec,
    format_tool_spec,
    model_tool_spec,
    strict_json_schema,
)
from mail.errors import SwarmDefinitionError

__all__ = [
    # vocabulary
    "ToolFormat",
    "MAIL_TOOL_NAMES",
    "INTERSWARM_TOOL_NAMES",
    # calls
    "AgentToolCall",
    # specs
    "pydantic_model_to_tool",
    "json_schema_tool",
    "tool_name",
    "create_request_tool",
    "create_response_tool",
    "create_interrupt_tool",
    "create_broadcast_tool",
    "create_task_complete_tool",
    "create_acknowledge_broadcast_tool",
    "create_ignore_broadcast_tool",
    "create_await_message_tool",
    "create_help_tool",
    "create_interswarm_broadcast_tool",
    "create_swarm_discovery_tool",
    # tool sets
    "create_mail_tools",
    "create_supervisor_tools",
    "get_agent_tools",
    # conversions
    "convert_call_to_mail_message",
    "convert_manual_step_call_to_mail_message",
    "normalize_breakpoint_tool_call",
    # v1.3.6 names
    "get_tool_spec_name",
    "get_tool_help",
    "SEND_REQUEST_HELP_STRING",
    "SEND_RESPONSE_HELP_STRING",
    "SEND_INTERRUPT_HELP_STRING",
    "SEND_BROADCAST_HELP_STRING",
    "ACKNOWLEDGE_BROADCAST_HELP_STRING",
    "IGNORE_BROADCAST_HELP_STRING",
    "TASK_COMPLETE_HELP_STRING",
    "AWAIT_MESSAGE_HELP_STRING",
]

logger = logging.getLogger("mail.tools")

#: The help text of each MAIL tool, as the ``::help::`` broadcast shows it (v1.3.6 names;
#: our wording, not the original's).
SEND_REQUEST_HELP_STRING = TOOL_HELP["send_request"]
SEND_RESPONSE_HELP_STRING = TOOL_HELP["send_response"]
SEND_INTERRUPT_HELP_STRING = TOOL_HELP["send_interrupt"]
SEND_BROADCAST_HELP_STRING = TOOL_HELP["send_broadcast"]
ACKNOWLEDGE_BROADCAST_HELP_STRING = TOOL_HELP["acknowledge_broadcast"]
IGNORE_BROADCAST_HELP_STRING = TOOL_HELP["ignore_broadcast"]
TASK_COMPLETE_HELP_STRING = TOOL_HELP["task_complete"]
AWAIT_MESSAGE_HELP_STRING = TOOL_HELP["await_message"]

#: The MAIL tools the runtime handles (valid values for ``exclude_tools``).
MAIL_TOOL_NAMES: list[str] = [
    "send_request",
    "send_response",
    "send_interrupt",
    "send_broadcast",
    "task_complete",
    "acknowledge_broadcast",
    "ignore_broadcast",
    "await_message",
    "help",
]
#: Offered to interswarm-enabled supervisors; the runtime reaches the router through them.
INTERSWARM_TOOL_NAMES: list[str] = ["send_interswarm_broadcast", "discover_swarms"]

# --------------------------------------------------------------------------------------
# specs


def pydantic_model_to_tool(
    model_cls: type[BaseModel],
    name: str | None = None,
    description: str | None = None,
    style: ToolFormat = "completions",
) -> dict[str, Any]:
    """Return a strict function-tool spec whose parameters are ``model_cls``'s JSON schema.

    ``name`` defaults to the class name and ``description`` to the class docstring (the
    key is omitted when there is neither). ``parameters.title`` is set to the tool name.
    Validation keywords (``enum``, ``minimum``/``maximum``, patterns, ...) and nested
    models (under ``$defs``) are kept. Returns a new dict on every call. Raises
    :class:`SwarmDefinitionError` for a schema with a non-local ``$ref``.
    """
    return model_tool_spec(model_cls, name, description, style)


def json_schema_tool(
    name: str,
    description: str | None,
    parameters: dict[str, Any],
    style: ToolFormat = "completions",
) -> dict[str, Any]:
    """Return a strict function-tool spec for an action described by a JSON Schema.

    Properties the schema does not require stay optional in strict mode by accepting
    ``null``; ``enum``, bounds, patterns and nested objects are kept. ``parameters`` is not
    modified. Raises :class:`SwarmDefinitionError` for a non-local ``$ref``.
    """
    schema = copy.deepcopy(parameters)
    schema.setdefault("type", "object")
    _nullable_optionals(schema)
    strict = strict_json_schema(schema)
    strict["title"] = name
    return format_tool_spec(name, description, strict, style)


def _nullable_optionals(node: Any) -> None:
    if not isinstance(node, dict):
        return
    properties = node.get("properties")
    if isinstance(properties, dict):
        required = set(node.get("required") or ())
        for key, sub in list(properties.items()):
            _nullable_optionals(sub)
            if key not in required and isinstance(sub, dict) and not _accepts_null(sub):
                properties[key] = {"anyOf": [sub, {"type": "null"}]}
    _nullable_optionals(node.get("items"))
    for key in ("$defs", "definitions"):
        defs = node.get(key)
        if isinstance(defs, dict):
            for sub in defs.values():
                _nullable_optionals(sub)


def _accepts_null(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(isinstance(v, dict) and v.get("type") == "null" for v in schema.get("anyOf", ()))


def _spec(
    name: str,
    style: ToolFormat,
    targets: Iterable[str] = (),
    enable_interswarm: bool = False,
) -> dict[str, Any]:
    return copy.deepcopy(cached_mail_tool_spec(name, style, tuple(targets), enable_interswarm))


def tool_name(spec: dict[str, Any]) -> str:
    """Return the name of a tool spec in either format.

    Raises :class:`SwarmDefinitionError` when the spec carries no name.
    """
    name = spec.get("name")
    if isinstance(name, str):
        return name
    function = spec.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return str(function["name"])
    raise SwarmDefinitionError("tool spec has no name", field="tools")


def get_tool_spec_name(tool: dict[str, Any]) -> str:
    """v1.3.6's name for :func:`tool_name`: the name of a tool spec in either format."""
    return tool_name(tool)


def create_request_tool(
    targets: list[str], enable_interswarm: bool = False, style: ToolFormat = "completions"
) -> dict[str, Any]:
    """Return the ``send_request`` spec; ``target`` is limited to ``targets`` unless interswarm."""
    return _spec("send_request", style, targets, enable_interswarm)


def create_response_tool(
    targets: list[str], enable_interswarm: bool = False, style: ToolFormat = "completions"
) -> dict[str, Any]:
    """Return the ``send_response`` spec; ``target`` is limited to ``targets`` unless interswarm."""
    return _spec("send_response", style, targets, enable_interswarm)


def create_interrupt_tool(
    targets: list[str], enable_interswarm: bool = False, style: ToolFormat = "completions"
) -> dict[str, Any]:
    """Return the ``send_interrupt`` spec; ``target`` is limited to ``targets`` unless interswarm."""
    return _spec("send_interrupt", style, targets, enable_interswarm)


def create_broadcast_tool(style: ToolFormat = "completions") -> dict[str, Any]:
    """Return the ``send_broadcast`` spec (``subject``, ``body``, ``targets``)."""
    return _spec("send_broadcast", style)


def create_task_complete_tool(style: ToolFormat = "completions") -> dict[str, Any]:
    """Return the ``task_complete`` spec (``finish_message``)."""
    return _spec("task_complete", style)


def create_acknowledge_broadcast_tool(style: ToolFormat = "completions") -> dict[str, Any]:
    """Return the ``acknowledge_broadcast`` spec (``note``: string or null)."""
    return _spec("acknowledge_broadcast", style)


def create_ignore_broadcast_tool(style: ToolFormat = "completions") -> dict[str, Any]:
    """Return the ``ignore_broadcast`` spec (``reason``: string or null)."""
    return _spec("ignore_broadcast", style)


def create_await_message_tool(style: ToolFormat = "completions") -> dict[str, Any]:
    """Return the ``await_message`` spec (``reason``: string or null)."""
    return _spec("await_message", style)


def create_help_tool(style: ToolFormat = "completions") -> dict[str, Any]:
    """Return the ``help`` spec (summary, identity, per-tool help, full protocol)."""
    return _spec("help", style)


def create_interswarm_broadcast_tool(style: ToolFormat = "completions") -> dict[str, Any]:
    """Return the ``send_interswarm_broadcast`` spec."""
    return _spec("send_interswarm_broadcast", style)


def create_swarm_discovery_tool(style: ToolFormat = "completions") -> dict[str, Any]:
    """Return the ``discover_swarms`` spec."""
    return _spec("discover_swarms", style)


# --------------------------------------------------------------------------------------
# tool sets


def _without(tools: list[dict[str, Any]], exclude_tools: Iterable[str]) -> list[dict[str, Any]]:
    excluded = frozenset(exclude_tools)
    return [t for t in tools if tool_name(t) not in excluded]


def create_mail_tools(
    targets: list[str],
    enable_interswarm: bool = False,
    style: ToolFormat = "completions",
    exclude_tools: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Return the tools every communicating agent gets, minus ``exclude_tools``.

    Order: ``send_request``, ``send_response``, ``acknowledge_broadcast``,
    ``ignore_broadcast``, ``await_message``, ``help``.
    """
    tools = [
        create_request_tool(targets, enable_interswarm, style),
        create_response_tool(targets, enable_interswarm, style),
        create_acknowledge_broadcast_tool(style),
        create_ignore_broadcast_tool(style),
        create_await_message_tool(style),
        create_help_tool(style),
    ]
    return _without(tools, exclude_tools)


def create_supervisor_tools(
    targets: list[str],
    can_complete_tasks: bool = True,
    enable_interswarm: bool = False,
    style: ToolFormat = "completions",
    exclude_tools: Iterable[str] = (),
    _debug_include_intraswarm: bool = True,
) -> list[dict[str, Any]]:
    """Return the supervisor-only tools, minus ``exclude_tools``.

    ``send_interrupt`` and ``send_broadcast`` when ``targets`` is non-empty (and
    ``_debug_include_intraswarm``), then ``send_interswarm_broadcast`` and
    ``discover_swarms`` when ``enable_interswarm``, then ``task_complete`` when
    ``can_complete_tasks``.
    """
    tools: list[dict[str, Any]] = []
    if targets and _debug_include_intraswarm:
        tools += [
            create_interrupt_tool(targets, enable_interswarm, style),
            create_broadcast_tool(style),
        ]
    if enable_interswarm:
        tools += [create_interswarm_broadcast_tool(style), create_swarm_discovery_tool(style)]
    if can_complete_tasks:
        tools.append(create_task_complete_tool(style))
    return _without(tools, exclude_tools)


def get_agent_tools(
    *,
    comm_targets: list[str],
    action_tools: list[dict[str, Any]],
    supervisor: bool,
    can_complete_tasks: bool,
    enable_interswarm: bool,
    style: ToolFormat,
    exclude_tools: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Return every tool offered to an agent on one turn (CONTRACT 5.4).

    The base set of :func:`create_mail_tools` when ``comm_targets`` is non-empty, then
    ``action_tools`` (as given, in order), then for supervisors the tools of
    :func:`create_supervisor_tools`. ``task_complete`` is offered exactly when
    ``can_complete_tasks`` (supervisor factories force it on): unlike the original, a
    non-supervisor agent that may complete tasks gets it too, as the last tool.
    ``exclude_tools`` removes MAIL tools only.
    """
    excluded = frozenset(exclude_tools)
    tools: list[dict[str, Any]] = []
    if comm_targets:
        tools += create_mail_tools(comm_targets, enable_interswarm, style, excluded)
    tools += action_tools
    if supervisor:
        tools += create_supervisor_tools(
            comm_targets, can_complete_tasks, enable_interswarm, style, excluded
        )
    elif can_complete_tasks and "task_complete" not in excluded:
        tools.append(create_task_complete_tool(style))
    return tools
