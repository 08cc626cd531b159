"""Wire shapes of the stub Anthropic server: Messages API bodies, stream events and errors.

Private to :mod:`mail.testing.anthropic`. A :class:`~mail.testing.llm.StubReply` maps to
content blocks in this order: a ``thinking`` block for ``reasoning`` (with a signature),
the raw blocks of ``items`` (e.g. ``redacted_thinking``), a ``text`` block, then one
``tool_use`` block per call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from mail.testing._llm_wire import StubReply, _pieces

__all__ = ["content_blocks", "error_body", "message_body", "message_events"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(status: int, message: str) -> dict[str, Any]:
    """Anthropic's error JSON for ``status``."""
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _tool_input(arguments: dict[str, Any] | str) -> Any:
    if isinstance(arguments, dict):
        return arguments
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return arguments  # sent verbatim: the client sees malformed input


def content_blocks(reply: StubReply, call_ids: list[str], signature: str) -> list[dict[str, Any]]:
    """The content blocks of ``reply``; its thinking block carries ``signature``."""
    blocks: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        blocks.append({"type": "thinking", "thinking": reply.reasoning, "signature": signature})
    blocks.extend(dict(item) for item in reply.items)
    if reply.text is not None:
        blocks.append({"type": "text", "text": reply.text})
    for call, call_id in zip(reply.calls, call_ids, strict=True):
        blocks.append(
            {
                "type": "tool_use",
                "id": call_id,
                "name": call.name,
                "input": _tool_input(call.arguments),
            }
        )
    return blocks


def message_body(model: str, message_id: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``message`` object holding ``blocks``."""
    calls = any(b.get("type") == "tool_use" for b in blocks)
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _block_events(index: int, block: dict[str, Any]) -> Iterator[dict[str, Any]]:
    kind = block.get("type")
    start: dict[str, Any] = dict(block)
    deltas: list[dict[str, Any]] = []
    if kind == "thinking":
        start.update(thinking="", signature="")
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "text":
        start["text"] = ""
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
    elif kind == "tool_use":
        start["input"] = {}
        raw = block["input"]
        text = raw if isinstance(raw, str) else json.dumps(raw)
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(text)]
    yield {"type": "content_block_start", "index": index, "content_block": start}
    for delta in deltas:
        yield {"type": "content_block_delta", "index": index, "delta": delta}
    yield {"type": "content_block_stop", "index": index}


def message_events(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The stream events of the message ``body``, ``message_start`` to ``message_stop``."""
    started = {
        **body,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    yield {"type": "message_start", "message": started}
    for index, block in enumerate(body["content"]):
        yield from _block_events(index, block)
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": 5},
    }
    yield {"type": "message_stop"}
