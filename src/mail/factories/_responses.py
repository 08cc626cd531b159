"""Responses-API adapter: the input LiteLLM's ``aresponses`` gets, and its output items as
``AgentToolCall`` objects.

The system prompt travels as ``instructions``; the caller's history is sent as ``input``
unchanged (converted to plain dicts).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from mail.core import DeltaKind, emit_delta, report_usage
from mail.core.tools import AgentToolCall
from mail.factories._live_output import AnswerStreams, finish_reasons_of, usage_of
from mail.factories._shared import AgentOutputError, new_call_id, parse_arguments, plain

__all__ = ["request_input", "instructions_for", "build_request", "collect_stream", "parse_response"]

logger = logging.getLogger("mail.factories.base")

_TEXT_DELTAS: dict[str, DeltaKind] = {
    "response.output_text.delta": "text",
    "response.reasoning_summary_text.delta": "reasoning",
    "response.reasoning_text.delta": "reasoning",
}
_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


def request_input(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history as plain dicts (LiteLLM objects dumped)."""
    return [plain(m) for m in messages]


def instructions_for(system: str, history: list[dict[str, Any]]) -> str | None:
    """The ``instructions`` to send: the system prompt, unless the history starts with one."""
    if not system or (history and history[0].get("role") == "system"):
        return None
    return system


def build_request(
    model: str,
    system: str,
    messages: list[dict[str, Any]],
    tool_params: dict[str, Any],
    *,
    max_tokens: int | None = None,
    reasoning_effort: str | None = None,
    reasoning: bool = False,
    stream: bool = False,
) -> dict[str, Any]:
    """A Responses request: ``model``, the history as ``input``, the system prompt as
    ``instructions`` (see :func:`instructions_for`), the tool parameters, and when set
    ``max_output_tokens``, ``reasoning`` (``{"effort": reasoning_effort or "medium",
    "summary": "auto"}``, when ``reasoning``) and ``stream``."""
    history = request_input(messages)
    request: dict[str, Any] = {"model": model, "input": history, **tool_params}
    instructions = instructions_for(system, history)
    if instructions is not None:
        request["instructions"] = instructions
    if max_tokens is not None:
        request["max_output_tokens"] = max_tokens
    if reasoning:
        request["reasoning"] = {"effort": reasoning_effort or "medium", "summary": "auto"}
    if stream:
        request["stream"] = True
    return request


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


async def collect_stream(
    stream: AsyncIterator[Any], agent: str, log: bool, model: str | None = None
) -> Any:
    """Return the final response object of a streamed Responses answer.

    Text, reasoning and the answer of ``task_complete`` calls go to the runtime as live
    deltas (:func:`mail.core.emit_delta`), and the final response's usage to
    :func:`mail.core.report_usage`. With ``log``, text and reasoning deltas are logged at
    DEBUG as they arrive. Raises :class:`AgentOutputError` when the stream ends without a
    final response.
    """
    final: Any = None
    answers = AnswerStreams()
    names: dict[Any, tuple[str | None, str | None]] = {}
    async for event in stream:
        kind = _field(event, "type")
        if kind in _TEXT_DELTAS:
            _live(agent, log, _TEXT_DELTAS[kind], _field(event, "delta"))
        elif kind == "response.output_item.added":
            item = _field(event, "item")
            if _field(item, "type") == "function_call":
                names[_field(item, "id")] = (_field(item, "name"), _field(item, "call_id"))
        elif kind == "response.function_call_arguments.delta":
            key = _field(event, "item_id")
            name, call_id = names.get(key, (None, None))
            answers.feed(key, name, call_id, _field(event, "delta") or "")
        elif kind in _FINAL_EVENTS:
            final = _field(event, "response")
    if final is None:
        raise AgentOutputError("the response stream ended without a final response", agent=agent)
    if (usage := usage_of(_field(final, "usage"))) is not None:
        report_usage(usage, model=model, finish_reasons=finish_reasons_of(final))
    return final


def _live(agent: str, log: bool, kind: DeltaKind, text: Any) -> None:
    if not isinstance(text, str) or not text:
        return
    emit_delta(kind, text)
    if log:
        label = " (reasoning)" if kind == "reasoning" else ""
        logger.debug("%s%s: %s", agent, label, text, extra={"agent": agent})


def _message_text(item: dict[str, Any]) -> str:
    parts = item.get("content") or []
    texts = [
        p.get("text") or p.get("refusal") or ""
        for p in parts
        if isinstance(p, dict) and p.get("type") in ("output_text", "text", "refusal")
    ]
    return "".join(texts)


def _reasoning_texts(item: dict[str, Any]) -> list[str]:
    summary = [s.get("text", "") for s in item.get("summary") or [] if isinstance(s, dict)]
    if any(summary):
        return [s for s in summary if s]
    content = [c.get("text", "") for c in item.get("content") or [] if isinstance(c, dict)]
    return [c for c in content if c]


def _builtin_call(item: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    kind = item.get("type")
    if kind == "web_search_call":
        action = item.get("action") or {}
        return kind, {
            "query": action.get("query", ""),
            "search_type": action.get("type", "search"),
            "status": item.get("status"),
        }
    if kind == "code_interpreter_call":
        return kind, {
            "code": item.get("code"),
            "outputs": item.get("outputs") or [],
            "status": item.get("status"),
        }
    return None


def parse_response(response: Any, agent: str) -> tuple[str | None, list[AgentToolCall]]:
    """Turn a Responses answer into the agent's output.

    ``function_call`` items become calls (JSON-decoded arguments), ``web_search_call``
    and ``code_interpreter_call`` become calls of those names; every call carries all
    output items as plain dicts (``responses``), the reasoning summaries and message
    text that came before it (``reasoning``, ``preamble``). Text without calls becomes
    one ``text_output`` call. Raises :class:`AgentOutputError` for malformed arguments
    or an answer with neither text nor calls.
    """
    # only the output items are dumped: LiteLLM's usage objects do not always serialize cleanly
    dumped = [plain(i) for i in _field(response, "output") or []]
    items: list[dict[str, Any]] = [i for i in dumped if isinstance(i, dict)]
    if not items:
        status = _field(response, "status")
        raise AgentOutputError(f"the model returned no output (status {status!r})", agent=agent)
    calls: list[AgentToolCall] = []
    texts: list[str] = []
    reasoning: list[str] = []
    preamble: list[str] = []
    for item in items:
        kind = item.get("type")
        if kind == "reasoning":
            reasoning += _reasoning_texts(item)
            continue
        if kind == "message":
            if text := _message_text(item):
                texts.append(text)
                preamble.append(text)
            continue
        if kind == "function_call":
            name = str(item.get("name") or "")
            args = parse_arguments(agent, name, item.get("arguments"))
            item.setdefault("call_id", item.get("id") or new_call_id())
            found: tuple[str, dict[str, Any]] | None = (name, args)
            call_id = str(item["call_id"])
        else:
            found = _builtin_call(item)
            call_id = str(item.get("id") or new_call_id(str(kind)))
        if found is None:
            continue
        calls.append(
            AgentToolCall(
                tool_name=found[0],
                tool_args=found[1],
                tool_call_id=call_id,
                responses=items,
                reasoning=reasoning or None,
                preamble="\n\n".join(preamble) or None,
            )
        )
        reasoning, preamble = [], []
    answer = "\n\n".join(texts) or None
    if calls:
        return answer, calls
    if answer is None:
        raise AgentOutputError("the model answered with neither text nor tool calls", agent=agent)
    message_id = next((i.get("id") for i in items if i.get("type") == "message"), None)
    output = AgentToolCall(
        tool_name="text_output",
        tool_args={"content": answer},
        tool_call_id=str(message_id or new_call_id("text")),
        responses=items,
        reasoning=reasoning or None,
    )
    return answer, [output]
