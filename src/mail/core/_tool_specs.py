"""Argument models of the MAIL tools and the strict JSON-schema transform.

The models' docstrings and field descriptions are what the LLM reads (CONTRACT 5.2); the
``title`` of each model is the tool name. :func:`strict_json_schema` rewrites a pydantic
JSON schema into the shape OpenAI's strict function tools accept, keeping every
validation keyword (``enum``, ``minimum``, ``maximum``, nested objects, ``$defs``).
"""

from __future__ import annotations

import copy
import functools
import inspect
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from mail.errors import SwarmDefinitionError

__all__ = [
    "ToolFormat",
    "ARG_MODELS",
    "model_tool_spec",
    "format_tool_spec",
    "cached_mail_tool_spec",
    "strict_json_schema",
]

ToolFormat: TypeAlias = Literal["completions", "responses"]

# What the ``target`` of each targeted tool addresses ("...agent for the <noun>").
_TARGET_NOUN: dict[str, str] = {
    "send_request": "message",
    "send_response": "message",
    "send_interrupt": "interrupt",
}
_INTERSWARM_TARGET_SUFFIX = (
    ", or use 'agent-name@swarm-name' format for interswarm messaging"
    " (supports interswarm format: agent-name@swarm-name)"
)

_TARGET_PLACEHOLDER = "The target recipient agent."
_BODY = "The message content to send."


class _SendRequest(BaseModel):
    """Send a message to a specific target recipient agent."""

    model_config = ConfigDict(title="send_request")
    target: str = Field(description=_TARGET_PLACEHOLDER)
    subject: str = Field(description="The subject of the message.")
    body: str = Field(description=_BODY)


class _SendResponse(BaseModel):
    """Send a message to a specific target recipient agent."""

    model_config = ConfigDict(title="send_response")
    target: str = Field(description=_TARGET_PLACEHOLDER)
    subject: str = Field(description="The subject of the message.")
    body: str = Field(description=_BODY)


class _SendInterrupt(BaseModel):
    """Interrupt a specific target recipient agent."""

    model_config = ConfigDict(title="send_interrupt")
    target: str = Field(description=_TARGET_PLACEHOLDER)
    subject: str = Field(description="The subject of the interrupt.")
    body: str = Field(description=_BODY)


class _SendBroadcast(BaseModel):
    """Broadcast a message to a specified list of agents, or all agents in the swarm."""

    model_config = ConfigDict(title="send_broadcast")
    subject: str = Field(description="The subject of the broadcast.")
    body: str = Field(description=_BODY)
    targets: list[str] = Field(
        description=(
            "The list of agents to broadcast to. "
            "Use ['all'] to broadcast to all agents in the swarm."
        )
    )


class _TaskComplete(BaseModel):
    """Indicate that a task has been completed. This will end the current loop, and should always be the last tool called."""

    model_config = ConfigDict(title="task_complete")
    finish_message: str = Field(
        description=(
            "The complete answer the user receives. The user sees none of the messages "
            "exchanged inside the swarm, so put the whole answer here, not a reference to it."
        )
    )


class _AcknowledgeBroadcast(BaseModel):
    """Store the received broadcast in memory, do not respond. Only valid when the message you received is a broadcast that needs no answer."""

    model_config = ConfigDict(title="acknowledge_broadcast")
    note: str | None = Field(
        default=None,
        description="A private note kept with the acknowledgement; nobody receives it.",
    )


class _IgnoreBroadcast(BaseModel):
    """Ignore the received broadcast. No memory, no response."""

    model_config = ConfigDict(title="ignore_broadcast")
    reason: str | None = Field(
        default=None, description="Why the broadcast is ignored; recorded for observers, not sent."
    )


class _AwaitMessage(BaseModel):
    """Wait until another message is received."""

    model_config = ConfigDict(title="await_message")
    reason: str | None = Field(
        default=None, description="What you are waiting for; shown in the task's events."
    )


_HelpTopic = Literal[
    "send_request",
    "send_response",
    "send_broadcast",
    "send_interrupt",
    "acknowledge_broadcast",
    "ignore_broadcast",
    "await_message",
    "task_complete",
]


class _Help(BaseModel):
    """Get help with MAIL."""

    model_config = ConfigDict(title="help")
    get_summary: bool = Field(default=True, description="Include an overview of how MAIL works.")
    get_identity: bool = Field(
        default=False, description="Include who you are: your name, swarm, contacts and actions."
    )
    get_tool_help: list[_HelpTopic] = Field(
        default=[], description="MAIL tools to explain in detail."
    )
    get_full_protocol: bool = Field(
        default=False, description="Include the complete protocol specification (long)."
    )


class _SendInterswarmBroadcast(BaseModel):
    """Broadcast a message to all known swarms."""

    model_config = ConfigDict(title="send_interswarm_broadcast")
    subject: str = Field(description="The subject of the broadcast.")
    body: str = Field(description=_BODY)
    target_swarms: list[str] = Field(
        default=[],
        description="Names of the swarms to reach; an empty list reaches every active known swarm.",
    )


class _DiscoverSwarms(BaseModel):
    """Discover and register new swarms from discovery endpoints."""

    model_config = ConfigDict(title="discover_swarms")
    discovery_urls: list[str] = Field(
        description="Base URLs of MAIL servers whose swarm lists should be read and registered."
    )


#: Tool name -> argument model, for every tool this package generates.
ARG_MODELS: dict[str, type[BaseModel]] = {
    "send_request": _SendRequest,
    "send_response": _SendResponse,
    "send_interrupt": _SendInterrupt,
    "send_broadcast": _SendBroadcast,
    "task_complete": _TaskComplete,
    "acknowledge_broadcast": _AcknowledgeBroadcast,
    "ignore_broadcast": _IgnoreBroadcast,
    "await_message": _AwaitMessage,
    "help": _Help,
    "send_interswarm_broadcast": _SendInterswarmBroadcast,
    "discover_swarms": _DiscoverSwarms,
}


# --------------------------------------------------------------------------------------
# specs


def format_tool_spec(
    name: str, description: str | None, parameters: dict[str, Any], style: ToolFormat
) -> dict[str, Any]:
    if style == "completions":
        function: dict[str, Any] = {"name": name, "strict": True, "parameters": parameters}
        if description is not None:
            function["description"] = description
        return {"type": "function", "function": function}
    spec: dict[str, Any] = {"type": "function", "name": name}
    if description is not None:
        spec["description"] = description
    spec["parameters"] = parameters
    spec["strict"] = True
    return spec


def model_tool_spec(
    model_cls: type[BaseModel], name: str | None, description: str | None, style: ToolFormat
) -> dict[str, Any]:
    """Build a fresh strict tool spec from a pydantic model (see ``pydantic_model_to_tool``)."""
    tool = name or model_cls.__name__
    if description is None and model_cls.__doc__:
        description = inspect.cleandoc(model_cls.__doc__)
    parameters = strict_json_schema(model_cls.model_json_schema())
    parameters["title"] = tool
    return format_tool_spec(tool, description, parameters, style)


@functools.lru_cache(maxsize=512)
def cached_mail_tool_spec(
    name: str, style: ToolFormat, targets: tuple[str, ...], enable_interswarm: bool
) -> dict[str, Any]:
    """The shared spec of MAIL tool ``name``: read-only, callers hand out deep copies."""
    spec = model_tool_spec(ARG_MODELS[name], name, None, style)
    noun = _TARGET_NOUN.get(name)
    if noun is not None:
        parameters = (
            spec["function"]["parameters"] if style == "completions" else spec["parameters"]
        )
        target = parameters["properties"]["target"]
        description = (
            f"The target recipient agent for the {noun}. Must be one of: {', '.join(targets)}"
        )
        if enable_interswarm:
            description += _INTERSWARM_TARGET_SUFFIX
        target["description"] = description
        # an empty enum is not a valid schema; without targets the tool is not offered anyway
        if not enable_interswarm and targets:
            target["enum"] = list(targets)
    return spec


# --------------------------------------------------------------------------------------
# strict transform


def strict_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Rewrite a JSON schema in place into OpenAI's strict form and return it.

    Objects get ``additionalProperties: false`` (unless set) and list every property in
    ``required``; ``default: null`` is dropped (optional fields stay ``anyOf [T, null]``);
    a one-item ``allOf`` is merged into its parent; ``oneOf`` becomes ``anyOf``; a
    ``$ref`` with sibling keywords is inlined. ``$defs`` and every validation keyword are
    kept. Raises :class:`SwarmDefinitionError` for a ``$ref`` that is not local.
    """
    return _strict(schema, schema, frozenset())


def _strict(node: dict[str, Any], root: dict[str, Any], inlining: frozenset[str]) -> dict[str, Any]:
    for defs_key in ("$defs", "definitions"):
        defs = node.get(defs_key)
        if isinstance(defs, dict):
            for sub in defs.values():
                _strict_child(sub, root, inlining)
    if node.get("type") == "object" and "additionalProperties" not in node:
        node["additionalProperties"] = False
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["required"] = list(properties)
        for sub in properties.values():
            _strict_child(sub, root, inlining)
    _strict_child(node.get("items"), root, inlining)
    _strict_combinators(node, root, inlining)
    if "default" in node and node["default"] is None:
        del node["default"]
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1 and ref not in inlining:
        # strict mode rejects keywords beside $ref, so the target is inlined
        merged = {**copy.deepcopy(_resolve_ref(root, ref)), **node}
        del merged["$ref"]
        node.clear()
        node.update(merged)
        return _strict(node, root, inlining | {ref})
    return node


def _strict_combinators(
    node: dict[str, Any], root: dict[str, Any], inlining: frozenset[str]
) -> None:
    if isinstance(node.get("oneOf"), list) and "anyOf" not in node:
        # strict mode has no oneOf; pydantic's discriminated unions are disjoint anyway
        node["anyOf"] = node.pop("oneOf")
        node.pop("discriminator", None)
    for key in ("anyOf", "allOf"):
        variants = node.get(key)
        if isinstance(variants, list):
            for sub in variants:
                _strict_child(sub, root, inlining)
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        del node["allOf"]
        for key, value in all_of[0].items():
            node.setdefault(key, value)


def _strict_child(node: Any, root: dict[str, Any], inlining: frozenset[str]) -> None:
    if isinstance(node, dict):
        _strict(node, root, inlining)


def _resolve_ref(root: dict[str, Any], ref: str) -> dict[str, Any]:
    if not ref.startswith("#/"):
        raise SwarmDefinitionError(f"only local $ref is supported, got {ref!r}", field="parameters")
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, dict) or part not in node:
            raise SwarmDefinitionError(f"unresolvable $ref {ref!r}", field="parameters")
        node = node[part]
    if not isinstance(node, dict):
        raise SwarmDefinitionError(f"$ref {ref!r} does not point to a schema", field="parameters")
    return node
