"""Wire shapes of the stub LLM: OpenAI chat-completions and Responses bodies and stream events.

Private to :mod:`mail.testing.llm`. Every builder returns plain JSON-ready dicts; the ids
come from the caller so one server numbers its objects deterministically.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "StubToolCall",
    "StubReply",
    "ReplyIds",
    "chat_body",
    "chat_chunks",
    "responses_body",
    "responses_events",
]

_FRAGMENTS = 3  # streamed texts and arguments are cut into this many pieces
_PAIR = 2  # a scripted call is a (name, arguments) pair


def _is_call_pair(item: Any) -> bool:
    return isinstance(item, tuple) and len(item) == _PAIR and isinstance(item[0], str)


@dataclass(frozen=True, slots=True)
class StubToolCall:
    """One tool call of a scripted reply; ``arguments`` given as a string is sent verbatim."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)

    @property
    def arguments_json(self) -> str:
        """The ``arguments`` string the model sends (verbatim when given as a string)."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True, slots=True)
class StubReply:
    """One reply of the stub LLM.

    A successful reply carries ``text``, ``calls`` (in order), ``reasoning`` (sent as
    ``reasoning_content`` by chat completions and as a reasoning summary by Responses)
    and raw Responses output ``items`` (e.g. a ``web_search_call``), each optional.
    ``status`` other than 200 answers an OpenAI-style error with ``error`` as its
    message. ``delay`` seconds pass before the server answers.
    """

    text: str | None = None
    calls: tuple[StubToolCall, ...] = ()
    reasoning: str | None = None
    items: tuple[dict[str, Any], ...] = ()
    status: int = 200
    error: str = ""
    delay: float = 0.0

    @classmethod
    def tool_calls(
        cls,
        *calls: tuple[str, dict[str, Any] | str],
        text: str | None = None,
        reasoning: str | None = None,
    ) -> StubReply:
        """Reply with ``calls`` (``(name, args)`` pairs), optionally preceded by text and reasoning."""
        return cls(
            text=text,
            calls=tuple(StubToolCall(n, a) for n, a in calls),
            reasoning=reasoning,
        )

    @classmethod
    def of(cls, reply: StubReply | str | Sequence[tuple[str, dict[str, Any] | str]]) -> StubReply:
        """``reply`` as a :class:`StubReply`: a string is a text answer, a sequence of
        ``(tool name, arguments)`` pairs one turn with those calls. Raises ``TypeError``
        for anything else."""
        if isinstance(reply, StubReply):
            return reply
        if isinstance(reply, str):
            return cls.message(reply)
        if isinstance(reply, Sequence) and all(_is_call_pair(c) for c in reply):
            return cls.tool_calls(*reply)
        raise TypeError(f"not a stub reply: {reply!r}")

    @classmethod
    def message(cls, text: str, *, reasoning: str | None = None) -> StubReply:
        """Reply with plain text (no tool call)."""
        return cls(text=text, reasoning=reasoning)

    @classmethod
    def malformed(cls, name: str, arguments: str = '{"target": ') -> StubReply:
        """Reply with one call of ``name`` whose ``arguments`` are the (broken) JSON text given."""
        return cls(calls=(StubToolCall(name, arguments),))

    @classmethod
    def http_error(cls, status: int = 500, message: str = "stub LLM failure") -> StubReply:
        """Answer HTTP ``status`` with an OpenAI-style error body carrying ``message``."""
        return cls(status=status, error=message)

    @classmethod
    def slow(
        cls,
        seconds: float,
        then: StubReply | str | Sequence[tuple[str, dict[str, Any] | str]] | None = None,
    ) -> StubReply:
        """Wait ``seconds`` before answering ``then``: a reply as :meth:`of` takes it
        (default: the text ``"done"``)."""
        base = cls.of(then if then is not None else "done")
        return cls(
            text=base.text,
            calls=base.calls,
            reasoning=base.reasoning,
            items=base.items,
            status=base.status,
            error=base.error,
            delay=seconds,
        )

    @classmethod
    def output_items(cls, *items: dict[str, Any], text: str | None = None) -> StubReply:
        """Reply with raw Responses output items (chat completions ignore them)."""
        return cls(text=text, items=tuple(items))


def _pieces(text: str) -> list[str]:
    if not text:
        return [text]
    size = max(1, -(-len(text) // _FRAGMENTS))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _usage_chat() -> dict[str, Any]:
    return {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
        "prompt_tokens_details": {"cached_tokens": 4},
        "completion_tokens_details": {"reasoning_tokens": 3},
    }


# --------------------------------------------------------------------------------------
# chat completions


def chat_body(reply: StubReply, model: str, rid: str, call_ids: list[str]) -> dict[str, Any]:
    """A non-streamed ``chat.completion`` body for ``reply``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": cid,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json},
            }
            for c, cid in zip(reply.calls, call_ids, strict=True)
        ]
    return {
        "id": rid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": _usage_chat(),
    }


def chat_chunks(
    reply: StubReply, model: str, rid: str, call_ids: list[str], include_usage: bool
) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of a streamed answer (without ``[DONE]``)."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": rid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    yield chunk({"role": "assistant", "content": ""})
    if reply.reasoning:
        for piece in _pieces(reply.reasoning):
            yield chunk({"reasoning_content": piece})
    if reply.text:
        for piece in _pieces(reply.text):
            yield chunk({"content": piece})
    for index, (call, cid) in enumerate(zip(reply.calls, call_ids, strict=True)):
        head = {"index": index, "id": cid, "type": "function"}
        yield chunk({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
        for piece in _pieces(call.arguments_json):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if reply.calls else "stop")
    if include_usage:
        usage = chunk({})
        usage["choices"] = []
        usage["usage"] = _usage_chat()
        yield usage


# --------------------------------------------------------------------------------------
# Responses


@dataclass(slots=True)
class ReplyIds:
    """Names the output items of one Responses reply."""

    rid: str
    call_ids: list[str]
    new_id: Callable[[str], str]


def _output_items(reply: StubReply, ids: ReplyIds) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        items.append(
            {
                "type": "reasoning",
                "id": ids.new_id("rs"),
                "summary": [{"type": "summary_text", "text": reply.reasoning}],
            }
        )
    items.extend(dict(item) for item in reply.items)
    if reply.text is not None:
        items.append(
            {
                "type": "message",
                "id": ids.new_id("msg"),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for call, cid in zip(reply.calls, ids.call_ids, strict=True):
        items.append(
            {
                "type": "function_call",
                "id": ids.new_id("fc"),
                "call_id": cid,
                "name": call.name,
                "arguments": call.arguments_json,
                "status": "completed",
            }
        )
    return items


def responses_body(
    reply: StubReply,
    request: dict[str, Any],
    ids: ReplyIds,
    output: list[dict[str, Any]] | None = None,
    status: str = "completed",
) -> dict[str, Any]:
    """A ``response`` object for ``reply`` (``output`` overrides the items, e.g. ``[]``)."""
    return {
        "id": ids.rid,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": request.get("model", ""),
        "output": _output_items(reply, ids) if output is None else output,
        "parallel_tool_calls": bool(request.get("parallel_tool_calls", True)),
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools", []),
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 4},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 3},
            "total_tokens": 15,
        },
        "user": None,
        "metadata": {},
    }


def _item_events(index: int, item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    kind, item_id = item.get("type"), item.get("id", "")
    where = {"item_id": item_id, "output_index": index}
    if kind == "message":
        started = {**item, "status": "in_progress", "content": []}
        yield {"type": "response.output_item.added", "output_index": index, "item": started}
        part = item["content"][0]
        empty = {**part, "text": ""}
        yield {"type": "response.content_part.added", **where, "content_index": 0, "part": empty}
        for piece in _pieces(part["text"]):
            yield {
                "type": "response.output_text.delta",
                **where,
                "content_index": 0,
                "delta": piece,
                "logprobs": [],
            }
        yield {
            "type": "response.output_text.done",
            **where,
            "content_index": 0,
            "text": part["text"],
            "logprobs": [],
        }
        yield {"type": "response.content_part.done", **where, "content_index": 0, "part": part}
    elif kind == "function_call":
        started = {**item, "status": "in_progress", "arguments": ""}
        yield {"type": "response.output_item.added", "output_index": index, "item": started}
        for piece in _pieces(item["arguments"]):
            yield {"type": "response.function_call_arguments.delta", **where, "delta": piece}
        yield {
            "type": "response.function_call_arguments.done",
            **where,
            "arguments": item["arguments"],
        }
    elif kind == "reasoning":
        yield {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "summary": []},
        }
        for s_index, summary in enumerate(item.get("summary", [])):
            at = {**where, "summary_index": s_index}
            empty = {"type": "summary_text", "text": ""}
            yield {"type": "response.reasoning_summary_part.added", **at, "part": empty}
            for piece in _pieces(summary["text"]):
                yield {"type": "response.reasoning_summary_text.delta", **at, "delta": piece}
            yield {"type": "response.reasoning_summary_text.done", **at, "text": summary["text"]}
            yield {"type": "response.reasoning_summary_part.done", **at, "part": summary}
    else:
        yield {"type": "response.output_item.added", "output_index": index, "item": item}
    yield {"type": "response.output_item.done", "output_index": index, "item": item}


def responses_events(
    reply: StubReply, request: dict[str, Any], ids: ReplyIds
) -> Iterator[dict[str, Any]]:
    """The Responses stream events of ``reply``, numbered by ``sequence_number``."""
    final = responses_body(reply, request, ids)
    started = responses_body(reply, request, ids, output=[], status="in_progress")
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    for index, item in enumerate(final["output"]):
        events.extend(_item_events(index, item))
    events.append({"type": "response.completed", "response": final})
    for seq, event in enumerate(events):
        yield {**event, "sequence_number": seq}
