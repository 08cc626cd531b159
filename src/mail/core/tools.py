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
:func:`normalize_breakpoint_tool_call` renders a call for a ``::breakpoint_tool_call::``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from mail.core._tool_specs import (
    ToolFormat,
    cached_mail_tool_spec,
    format_tool_spec,
    model_tool_spec,
    strict_json_schema,
)
from mail.core.message import (
    MAIL_ALL_LOCAL_AGENTS,
    MAILAddress,
    MAILMessage,
    create_agent_address,
    make_broadcast,
    make_broadcast_complete,
    make_interrupt,
    make_request,
    make_response,
)
from mail.errors import InvalidMessageError, SwarmDefinitionError

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
]

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

_DEFAULT_FINISH_MESSAGE = "Task completed successfully"


# --------------------------------------------------------------------------------------
# calls


class AgentToolCall(BaseModel):
    """One tool call made by an agent's model in one turn.

    ``completion`` is the chat-completions assistant message that carried the call;
    ``responses`` the Responses API output items of the turn. At least one must be
    non-empty (else pydantic raises ``ValidationError``); which one is set decides
    :attr:`tool_format`. ``reasoning`` holds the reasoning blocks that preceded the call
    and ``preamble`` any text the model produced before it.
    """

    tool_name: str
    tool_args: dict[str, Any]
    tool_call_id: str
    completion: dict[str, Any] = Field(default_factory=dict)
    responses: list[dict[str, Any]] = Field(default_factory=list)
    reasoning: list[str] | None = None
    preamble: str | None = None

    @model_validator(mode="after")
    def _check_completion_or_responses(self) -> AgentToolCall:
        if not self.completion and not self.responses:
            raise ValueError("either 'completion' or 'responses' must be non-empty")
        return self

    @property
    def tool_format(self) -> ToolFormat:
        """``"completions"`` when the call came from a chat completion, else ``"responses"``."""
        return "completions" if self.completion else "responses"

    def create_response_msg(self, content: str) -> dict[str, Any]:
        """Return the history item carrying ``content`` as this call's result.

        Chat completions: ``{"role": "tool", "name", "content", "tool_call_id"}``;
        Responses: ``{"type": "function_call_output", "call_id", "output"}``.
        """
        if self.completion:
            return {
                "role": "tool",
                "name": self.tool_name,
                "content": content,
                "tool_call_id": self.tool_call_id,
            }
        return {"type": "function_call_output", "call_id": self.tool_call_id, "output": content}


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


# --------------------------------------------------------------------------------------
# conversions


_MISSING = object()


def _str_arg(call: AgentToolCall, key: str) -> str:
    value = call.tool_args.get(key, _MISSING)
    if type(value) is str:  # the usual case: one read of the (slow) model attribute
        return value
    if value is _MISSING:
        raise InvalidMessageError(
            f"tool call '{call.tool_name}' is missing argument '{key}'", field=key
        )
    if not isinstance(value, str):
        raise InvalidMessageError(
            f"argument '{key}' of tool call '{call.tool_name}' must be a string, "
            f"got {type(value).__name__}",
            field=key,
        )
    return value


def _text_body(call: AgentToolCall) -> str:
    body = call.tool_args.get("body") or call.tool_args.get("content") or ""
    if not isinstance(body, str):
        raise InvalidMessageError(
            f"argument 'body' of tool call '{call.tool_name}' must be a string", field="body"
        )
    return body


def _optional_subject(call: AgentToolCall) -> str:
    subject = call.tool_args.get("subject") or ""
    if not isinstance(subject, str):
        raise InvalidMessageError(
            f"argument 'subject' of tool call '{call.tool_name}' must be a string",
            field="subject",
        )
    return subject


def _agent_addresses(names: Iterable[str]) -> list[MAILAddress]:
    """One agent address per name, deduplicated in order; ``all`` anywhere wins."""
    unique = list(dict.fromkeys(names))
    if not unique or "all" in unique:
        return [create_agent_address(MAIL_ALL_LOCAL_AGENTS["address"])]
    return [create_agent_address(name) for name in unique]


def _broadcast_targets(call: AgentToolCall) -> list[MAILAddress]:
    targets = call.tool_args.get("targets")
    if targets is None:
        return _agent_addresses(())
    if isinstance(targets, str):
        targets = [targets]
    if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
        raise InvalidMessageError(
            "argument 'targets' of tool call 'send_broadcast' must be a list of agent names",
            field="targets",
        )
    return _agent_addresses(targets)


def convert_call_to_mail_message(call: AgentToolCall, sender: str, task_id: str) -> MAILMessage:
    """Turn a messaging tool call of agent ``sender`` into a MAIL message (CONTRACT 5.6).

    - ``send_request`` -> ``request`` to ``target`` (``target``, ``subject``, ``body`` required)
    - ``send_response`` / ``text_output`` -> ``response`` to ``target``; ``subject`` defaults
      to ``""``, the body is ``body`` or ``content`` or ``""``
    - ``send_interrupt`` -> ``interrupt`` to ``[target]``
    - ``send_broadcast`` -> ``broadcast`` to each of ``targets`` (deduplicated); to all
      local agents when ``targets`` is missing, empty or contains ``"all"``
    - ``task_complete`` -> ``broadcast_complete`` to all, subject ``"Task complete"``, body
      ``finish_message`` (default ``"Task completed successfully"``)

    The sender is the agent address ``sender``; swarm fields are ``None`` and
    ``routing_info`` is ``{}`` (the runtime adds routing hints). Raises
    :class:`InvalidMessageError` naming the argument when one is missing or mistyped,
    or for any other tool name.
    """
    me = create_agent_address(sender)
    name = call.tool_name
    if name == "send_request":
        return make_request(
            task_id=task_id,
            sender=me,
            recipient=create_agent_address(_str_arg(call, "target")),
            subject=_str_arg(call, "subject"),
            body=_str_arg(call, "body"),
        )
    if name in ("send_response", "text_output"):
        return make_response(
            task_id=task_id,
            sender=me,
            recipient=create_agent_address(_str_arg(call, "target")),
            subject=_optional_subject(call),
            body=_text_body(call),
        )
    if name == "send_interrupt":
        return make_interrupt(
            task_id=task_id,
            sender=me,
            recipients=[create_agent_address(_str_arg(call, "target"))],
            subject=_str_arg(call, "subject"),
            body=_str_arg(call, "body"),
        )
    if name == "send_broadcast":
        return make_broadcast(
            task_id=task_id,
            sender=me,
            recipients=_broadcast_targets(call),
            subject=_str_arg(call, "subject"),
            body=_str_arg(call, "body"),
        )
    if name == "task_complete":
        finish = call.tool_args.get("finish_message", _DEFAULT_FINISH_MESSAGE)
        if not isinstance(finish, str):
            raise InvalidMessageError(
                "argument 'finish_message' of tool call 'task_complete' must be a string",
                field="finish_message",
            )
        return make_broadcast_complete(
            task_id=task_id, sender=me, subject="Task complete", body=finish
        )
    raise InvalidMessageError(f"tool '{name}' does not produce a MAIL message", field="tool_name")


def convert_manual_step_call_to_mail_message(
    call: AgentToolCall,
    sender: str,
    task_id: str,
    response_targets: list[str],
    response_type: Literal["broadcast", "response", "request"],
) -> MAILMessage:
    """Turn any call (typically ``text_output``) into a message with manual-mode routing.

    ``request`` / ``response`` go to the first of ``response_targets``; ``broadcast`` to
    all of them (deduplicated; all local agents when empty or containing ``"all"``).
    Subject defaults to ``""``, the body is ``body`` or ``content`` or ``""``. Raises
    :class:`InvalidMessageError` when a request or response has no target.
    """
    me = create_agent_address(sender)
    subject = _optional_subject(call)
    body = _text_body(call)
    if response_type == "broadcast":
        return make_broadcast(
            task_id=task_id,
            sender=me,
            recipients=_agent_addresses(response_targets),
            subject=subject,
            body=body,
        )
    if not response_targets:
        raise InvalidMessageError(
            f"a manual-step {response_type} needs a target", field="response_targets"
        )
    recipient = create_agent_address(response_targets[0])
    if response_type == "request":
        return make_request(
            task_id=task_id, sender=me, recipient=recipient, subject=subject, body=body
        )
    return make_response(
        task_id=task_id, sender=me, recipient=recipient, subject=subject, body=body
    )


def _find_raw_call(call: AgentToolCall) -> dict[str, Any] | None:
    """The provider item behind ``call``: a Responses ``function_call`` or a ``tool_use`` block."""
    content = call.completion.get("content")
    blocks = content if isinstance(content, list) else []
    for item in [*call.responses, *blocks]:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call" and item.get("call_id") == call.tool_call_id:
            return item
        if item.get("type") == "tool_use" and item.get("id") == call.tool_call_id:
            return item
    return None


def normalize_breakpoint_tool_call(call: AgentToolCall, raw: Any = None) -> dict[str, Any]:
    """Render ``call`` as a Responses-style ``function_call`` item (CONTRACT 4.7).

    Returns ``{"arguments": <JSON string>, "call_id", "name", "type": "function_call",
    "id", "status"}``. ``raw`` is the provider item behind the call; when not given it is
    looked up in ``call.responses`` (a ``function_call`` with this ``call_id``) or in
    Anthropic-style ``tool_use`` content blocks of ``call.completion``. Its ``arguments``,
    ``id`` and ``status`` are used when present; otherwise ``arguments`` is the JSON of
    ``tool_args``, ``id`` is ``"fc_" + call_id`` and ``status`` ``"completed"``. Works for
    any completion shape, including ``content: None``.
    """
    if not isinstance(raw, dict):
        raw = _find_raw_call(call)
    call_id = call.tool_call_id
    name = call.tool_name
    arguments: Any = None
    item_id: Any = None
    status: Any = None
    if raw is not None and raw.get("type") == "function_call":
        call_id = raw.get("call_id") or call_id
        name = raw.get("name") or name
        arguments = raw.get("arguments")
        item_id = raw.get("id")
        status = raw.get("status")
    elif raw is not None and raw.get("type") == "tool_use":
        call_id = raw.get("id") or call_id
        name = raw.get("name") or name
        arguments = raw.get("input")
    if arguments is None:
        arguments = call.tool_args
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {
        "arguments": arguments,
        "call_id": call_id,
        "name": name,
        "type": "function_call",
        "id": item_id or f"fc_{call_id}",
        "status": status or "completed",
    }
