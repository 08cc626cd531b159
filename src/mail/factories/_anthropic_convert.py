"""Chat-completions shapes to Anthropic's Messages API and back (private).

The runtime keeps an Anthropic agent's history as chat-completions items; each call
converts it: system prompts become ``system``, assistant ``tool_calls`` become ``tool_use``
blocks (after the turn's ``thinking_blocks``, which Anthropic requires back with their
signatures), and consecutive ``tool`` results one user message of ``tool_result`` blocks.
An answer comes back as a chat-completions assistant message that
:func:`mail.factories._completions.parse_message` reads.
"""

from __future__ import annotations

import json
from typing import Any

from mail.core.tools import tool_name
from mail.factories._completions import request_messages
from mail.factories._shared import normalize_tool_choice, plain

__all__ = ["assistant_message", "request_history", "tool_choice", "tools"]

_THINKING = ("thinking", "redacted_thinking")
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content] if content else []
    parts = content if isinstance(content, list) else []
    return [p["text"] for p in parts if isinstance(p, dict) and p.get("text")]


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    blocks = [{"type": "text", "text": t} for t in _texts(content)]
    if isinstance(content, list):  # Anthropic-native parts (images, documents) pass through
        blocks += [
            p for p in content if isinstance(p, dict) and p.get("type") in ("image", "document")
        ]
    return blocks


def _tool_input(arguments: Any) -> Any:
    if isinstance(arguments, dict):
        return arguments
    try:
        decoded = json.loads(arguments or "{}")
    except (TypeError, json.JSONDecodeError):
        return {}
    return decoded if isinstance(decoded, dict) else {}


def _assistant_blocks(item: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = [
        dict(b)
        for b in item.get("thinking_blocks") or []
        if isinstance(b, dict) and b.get("type") in _THINKING
    ]
    blocks += [{"type": "text", "text": t} for t in _texts(item.get("content"))]
    for call in item.get("tool_calls") or []:
        function = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": function.get("name"),
                "input": _tool_input(function.get("arguments")),
            }
        )
    return blocks


def _append(out: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    if not blocks:
        return
    if out and out[-1]["role"] == role:  # Anthropic alternates roles: merge a run
        out[-1]["content"].extend(blocks)
    else:
        out.append({"role": role, "content": list(blocks)})


def request_history(
    system: str, messages: list[dict[str, Any]]
) -> tuple[str, list[dict[str, Any]]]:
    """``(system, messages)`` for a request: the system prompt (``system`` unless the
    history starts with its own) and the history as Anthropic messages.

    A ``tool`` result whose call is not in an earlier assistant turn (e.g. the runtime's
    answer to a plain-text turn) is sent as user text.
    """
    history = request_messages(system, messages)
    systems = [t for m in history if m.get("role") == "system" for t in _texts(m.get("content"))]
    out: list[dict[str, Any]] = []
    calls: set[str] = set()
    for item in history:
        role = item.get("role")
        if role == "system":
            continue
        if role == "assistant":
            blocks = _assistant_blocks(item)
            calls.update(str(b["id"]) for b in blocks if b["type"] == "tool_use")
            _append(out, "assistant", blocks)
        elif role == "tool" and item.get("tool_call_id") in calls:
            result = {
                "type": "tool_result",
                "tool_use_id": item["tool_call_id"],
                "content": "".join(_texts(item.get("content"))),
            }
            _append(out, "user", [result])
        else:
            _append(out, "user", _user_blocks(item.get("content")))
    return "\n\n".join(systems), out


def tools(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat-completions tool specs as Anthropic tools; other specs (Anthropic's server
    tools, e.g. ``{"type": "web_search_20250305", ...}``) pass through."""
    converted = []
    for spec in specs:
        function = spec.get("function")
        if spec.get("type") != "function" or not isinstance(function, dict):
            converted.append(spec)
            continue
        tool: dict[str, Any] = {
            "name": function["name"],
            "input_schema": function.get("parameters") or _EMPTY_SCHEMA,
        }
        if function.get("description"):
            tool["description"] = function["description"]
        converted.append(tool)
    return converted


def tool_choice(
    choice: str | dict[str, Any],
    specs: list[dict[str, Any]],
    *,
    thinking: bool,
    parallel_tool_calls: bool | None,
) -> dict[str, Any]:
    """Anthropic's ``tool_choice`` for the runtime's ``choice``: ``"required"`` is
    ``any``, a named function ``tool`` (``any`` if not offered), ``"auto"`` and ``"none"``
    themselves. With thinking on a forced choice falls back to ``auto`` (Anthropic refuses
    it); ``parallel_tool_calls=False`` sets ``disable_parallel_tool_use``."""
    names = [tool_name(s) for s in specs if s.get("type") == "function"]
    shaped = normalize_tool_choice(choice, "responses", names)
    if isinstance(shaped, dict):
        result: dict[str, Any] = {"type": "tool", "name": shaped["name"]}
    elif shaped in ("auto", "none"):
        result = {"type": shaped}
    else:
        result = {"type": "any"}
    if thinking and result["type"] in ("any", "tool"):
        result = {"type": "auto"}
    if parallel_tool_calls is False and result["type"] != "none":
        result["disable_parallel_tool_use"] = True
    return result


def assistant_message(message: Any) -> dict[str, Any]:
    """An Anthropic ``Message`` as a chat-completions assistant message: text joined as
    ``content``, ``thinking``/``redacted_thinking`` blocks kept as ``thinking_blocks``,
    ``tool_use`` blocks as ``tool_calls``."""
    content = getattr(message, "content", None)
    blocks = [b for b in plain(content or []) if isinstance(b, dict)]
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    result: dict[str, Any] = {"role": "assistant", "content": text or None}
    thinking = [b for b in blocks if b.get("type") in _THINKING]
    if thinking:
        result["thinking_blocks"] = thinking
    calls = [
        {
            "id": b.get("id"),
            "type": "function",
            "function": {
                "name": b.get("name"),
                "arguments": b["input"]
                if isinstance(b.get("input"), str)
                else json.dumps(b.get("input") or {}),
            },
        }
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    if calls:
        result["tool_calls"] = calls
    return result
