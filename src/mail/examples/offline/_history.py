"""Reading an agent's history back: what it received, which tools it called, what came back.

Histories mix the runtime's ``<incoming_message>`` user turns with the model output of
each turn, in the shape of the agent's tool format: Responses items (``function_call``
and ``function_call_output``), chat completions (an assistant message with
``tool_calls`` and ``role: tool`` results) or Anthropic content blocks (``tool_use`` and
``tool_result``). :class:`Transcript` reads all three.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from mail.testing import Incoming, parse_incoming

__all__ = ["Call", "Received", "Transcript", "action_result"]


@dataclass(slots=True, frozen=True)
class Received:
    """An incoming MAIL message, at position ``index`` of the history."""

    index: int
    message: Incoming

    @property
    def from_system(self) -> bool:
        """True for messages the runtime itself sent (``::subject::`` notices)."""
        return self.message.sender_type == "system"


@dataclass(slots=True, frozen=True)
class Call:
    """A tool call the agent made, at position ``index`` of the history."""

    index: int
    name: str
    args: dict[str, Any]
    call_id: str


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def _text(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):  # Anthropic tool_result content blocks
        return "".join(str(block.get("text", "")) for block in raw if isinstance(block, dict))
    return "" if raw is None else str(raw)


def _calls(index: int, item: dict[str, Any]) -> Iterator[Call]:
    if item.get("type") == "function_call":
        yield Call(
            index,
            str(item.get("name", "")),
            _args(item.get("arguments")),
            str(item.get("call_id", "")),
        )
        return
    if item.get("role") != "assistant":
        return
    for tool_call in item.get("tool_calls") or ():
        function = tool_call.get("function") or {}
        yield Call(
            index,
            str(function.get("name", "")),
            _args(function.get("arguments")),
            str(tool_call.get("id", "")),
        )
    content = item.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                yield Call(
                    index,
                    str(block.get("name", "")),
                    _args(block.get("input")),
                    str(block.get("id", "")),
                )


def _outputs(item: dict[str, Any]) -> Iterator[tuple[str, str]]:
    if item.get("type") == "function_call_output":
        yield str(item.get("call_id", "")), _text(item.get("output"))
    elif item.get("role") == "tool":
        yield str(item.get("tool_call_id", "")), _text(item.get("content"))
    elif item.get("role") == "user" and isinstance(item.get("content"), list):
        for block in item["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                yield str(block.get("tool_use_id", "")), _text(block.get("content"))


@dataclass(slots=True)
class Transcript:
    """The messages, calls and call results of one agent's history, in order."""

    received: list[Received] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, history: Sequence[dict[str, Any]]) -> Transcript:
        """Read ``history`` (any of the three shapes, mixed freely)."""
        transcript = cls()
        for index, item in enumerate(history):
            content = item.get("content")
            if (
                item.get("role") == "user"
                and isinstance(content, str)
                and "<incoming_message>" in content
            ):
                transcript.received.append(Received(index, parse_incoming([item])))
                continue
            transcript.calls.extend(_calls(index, item))
            for call_id, output in _outputs(item):
                transcript.outputs[call_id] = output
        return transcript

    @property
    def last(self) -> Received | None:
        """The message that started the current turn."""
        return self.received[-1] if self.received else None

    def received_after(self, index: int) -> list[Received]:
        """The messages received after history position ``index``."""
        return [r for r in self.received if r.index > index]

    def calls_after(self, index: int) -> list[Call]:
        """The calls made after history position ``index``."""
        return [c for c in self.calls if c.index > index]


def action_result(output: str) -> tuple[bool, Any]:
    """Split an action's tool result into ``(ok, value)``.

    ``"SUCCESS: {json}"`` gives ``(True, <parsed JSON>)``; an ``"ERROR: ..."`` result
    or a ``"SUCCESS: Error: ..."`` argument error gives ``(False, <error text>)``.
    """
    if output.startswith("ERROR: "):
        return False, output.removeprefix("ERROR: ")
    text = output.removeprefix("SUCCESS: ")
    try:
        return True, json.loads(text)
    except ValueError:
        return not text.startswith("Error"), text
