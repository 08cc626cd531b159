"""Tool calls: what an agent function returns for each call its model made, and how the
messaging calls become MAIL messages.

Public through :mod:`mail.core.tools`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal, cast

from pydantic import BaseModel, Field, model_validator

from mail._text import clean_text, find_bad_text
from mail.core._tool_specs import ToolFormat
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
    parse_agent_address,
)
from mail.errors import InvalidMessageError

__all__ = [
    "AgentToolCall",
    "convert_call_to_mail_message",
    "convert_manual_step_call_to_mail_message",
    "normalize_breakpoint_tool_call",
]

_DEFAULT_FINISH_MESSAGE = "Task completed successfully"


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
    def check_completion_or_responses(self) -> AgentToolCall:
        if not self.completion and not self.responses:
            raise ValueError("either 'completion' or 'responses' must be non-empty")
        return self

    @property
    def tool_format(self) -> ToolFormat:
        """``"completions"`` when the call came from a chat completion, else ``"responses"``."""
        return "completions" if self.completion else "responses"

    def cleaned(self) -> AgentToolCall:
        """This call, or a copy whose text no store refuses: a lone surrogate or a NUL
        character a model produced becomes ``U+FFFD`` (:func:`mail._text.clean_text`)."""
        parts = (self.tool_name, self.tool_call_id, self.tool_args, self.completion)
        if find_bad_text((*parts, self.responses, self.reasoning, self.preamble)) is None:
            return self
        return AgentToolCall.model_validate(clean_text(self.model_dump()))

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
# conversions


def _str_arg(call: AgentToolCall, key: str) -> str:
    if key not in call.tool_args:
        raise InvalidMessageError(
            f"tool call '{call.tool_name}' is missing argument '{key}'", field=key
        )
    value = call.tool_args[key]
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


def _with_swarms(message: MAILMessage, swarm: str | None) -> MAILMessage:
    """Name ``swarm`` as the sender's swarm, and each recipient's swarm (``swarm`` if local)."""
    if swarm is None:
        return message
    payload = cast(dict[str, Any], message["message"])
    payload["sender_swarm"] = swarm
    if "recipient" in payload:
        payload["recipient_swarm"] = (
            parse_agent_address(payload["recipient"]["address"])[1] or swarm
        )
    else:
        swarms = {parse_agent_address(r["address"])[1] or swarm for r in payload["recipients"]}
        payload["recipient_swarms"] = sorted(swarms)
    return message


def convert_call_to_mail_message(
    call: AgentToolCall, sender: str, task_id: str, *, swarm: str | None = None
) -> MAILMessage:
    """Turn a messaging tool call of agent ``sender`` into a MAIL message (CONTRACT 5.6).

    - ``send_request`` -> ``request`` to ``target`` (``target``, ``subject``, ``body`` required)
    - ``send_response`` / ``text_output`` -> ``response`` to ``target``; ``subject`` defaults
      to ``""``, the body is ``body`` or ``content`` or ``""``
    - ``send_interrupt`` -> ``interrupt`` to ``[target]``
    - ``send_broadcast`` -> ``broadcast`` to each of ``targets`` (deduplicated); to all
      local agents when ``targets`` is missing, empty or contains ``"all"``
    - ``task_complete`` -> ``broadcast_complete`` to all, subject ``"Task complete"``, body
      ``finish_message`` (default ``"Task completed successfully"``)

    The sender is the agent address ``sender`` and ``routing_info`` is ``{}`` (the runtime
    adds routing hints). With ``swarm`` (the local swarm's name) ``sender_swarm`` is
    ``swarm`` and the recipient swarm fields name each recipient's swarm (``swarm`` for a
    local agent); without it the swarm fields are left out (v1.3.6 set them to ``null``,
    which its own schema rejects). Raises
    :class:`InvalidMessageError` naming the argument when one is missing or mistyped,
    or for any other tool name.
    """
    return _with_swarms(_convert_call(call, sender, task_id), swarm)


def _convert_call(call: AgentToolCall, sender: str, task_id: str) -> MAILMessage:
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
