"""Chat-completions adapter: the request LiteLLM's ``acompletion`` gets, and its answer as
``AgentToolCall`` objects.

The history handed to the model is ``[system] + messages``: the system prompt is prepended
per call, never stored in the caller's list.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from mail.core import DeltaKind, emit_delta, report_usage
from mail.core.tools import AgentToolCall
from mail.factories._live_output import AnswerStreams, usage_of
from mail.factories._shared import AgentOutputError, new_call_id, parse_arguments, plain

__all__ = ["request_messages", "build_request", "first_message", "collect_stream", "parse_message"]

logger = logging.getLogger("mail.factories.base")


def request_messages(system: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` (as plain dicts) behind the system prompt, unless the history has one."""
    history = [plain(m) for m in messages]
    if not system or (history and history[0].get("role") == "system"):
        return history
    return [{"role": "system", "content": system}, *history]


def build_request(
    model: str,
    system: str,
    messages: list[dict[str, Any]],
    tool_params: dict[str, Any],
    *,
    max_tokens: int | None = None,
    max_tokens_field: str = "max_tokens",
    reasoning_effort: str | None = None,
    stream: bool = False,
) -> dict[str, Any]:
    """A chat-completions request: ``model``, the :func:`request_messages`, the tool
    parameters, and ``max_tokens`` (sent as ``max_tokens_field``), ``reasoning_effort``
    and ``stream`` when set (a streamed answer ends with its token usage)."""
    request: dict[str, Any] = {
        "model": model,
        "messages": request_messages(system, messages),
        **tool_params,
    }
    if max_tokens is not None:
        request[max_tokens_field] = max_tokens
    if reasoning_effort is not None:
        request["reasoning_effort"] = reasoning_effort
    if stream:
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
    return request


def first_message(response: Any, agent: str) -> dict[str, Any]:
    """The assistant message of the first choice of a (non-streamed) completion, as a dict."""
    choices = response.get("choices") if isinstance(response, dict) else response.choices
    if not choices:
        raise AgentOutputError("the model returned no choices", agent=agent)
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else choice.message
    result: dict[str, Any] = plain(message) or {}
    return result


async def collect_stream(
    stream: AsyncIterator[Any], agent: str, log: bool, model: str | None = None
) -> dict[str, Any]:
    """Rebuild the assistant message of a streamed completion (tool calls merged by index).

    Text, reasoning and the answer of ``task_complete`` calls go to the runtime as live
    deltas (:func:`mail.core.emit_delta`), and the usage of the final chunk to
    :func:`mail.core.report_usage`. With ``log``, text and reasoning deltas are logged at
    DEBUG as they arrive.
    """
    content: list[str] = []
    reasoning: list[str] = []
    thinking_blocks: list[Any] = []
    calls: dict[int, dict[str, Any]] = {}
    answers = AnswerStreams()
    usage: dict[str, int] | None = None
    finished: list[str] = []
    async for chunk in stream:
        data = plain(chunk)
        usage = usage_of(data.get("usage")) or usage
        for choice in data.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            if reason := choice.get("finish_reason"):
                finished.append(str(reason))
            delta = choice.get("delta") or {}
            if text := delta.get("content"):
                content.append(text)
                _live(agent, log, "text", text)
            if thought := delta.get("reasoning_content"):
                reasoning.append(thought)
                _live(agent, log, "reasoning", thought)
            thinking_blocks.extend(delta.get("thinking_blocks") or [])
            for part in delta.get("tool_calls") or []:
                _merge_tool_call_delta(calls, part, answers)
    if usage is not None:
        report_usage(usage, model=model, finish_reasons=finished)
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if thinking_blocks:
        message["thinking_blocks"] = thinking_blocks
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def _live(agent: str, log: bool, kind: DeltaKind, text: str) -> None:
    emit_delta(kind, text)
    if log:
        label = " (reasoning)" if kind == "reasoning" else ""
        logger.debug("%s%s: %s", agent, label, text, extra={"agent": agent})


def _merge_tool_call_delta(
    calls: dict[int, dict[str, Any]], part: dict[str, Any], answers: AnswerStreams
) -> None:
    index = part.get("index") or 0
    slot = calls.setdefault(
        index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
    )
    if part.get("id"):
        slot["id"] = part["id"]
    function = part.get("function") or {}
    if function.get("name"):
        slot["function"]["name"] = function["name"]
    if function.get("arguments"):
        slot["function"]["arguments"] += function["arguments"]
    answers.feed(index, slot["function"]["name"], slot["id"], function.get("arguments") or "")


def _reasoning(message: dict[str, Any]) -> list[str] | None:
    text = message.get("reasoning_content")
    if isinstance(text, str) and text:
        return [text]
    blocks = message.get("thinking_blocks") or []
    thoughts = [
        b.get("thinking") or "[redacted thinking]"
        for b in blocks
        if isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")
    ]
    return thoughts or None


def parse_message(message: dict[str, Any], agent: str) -> tuple[str | None, list[AgentToolCall]]:
    """Turn an assistant message into the agent's output.

    Each tool call becomes an :class:`AgentToolCall` whose ``completion`` is the assistant
    message as plain dicts (``role``, ``content``, ``tool_calls``, plus
    ``thinking_blocks`` when the provider sent them); reasoning and any text before the
    calls go on the first call. Text without calls becomes one ``text_output`` call.
    Raises :class:`AgentOutputError` for malformed arguments or an empty answer.
    """
    content = message.get("content")
    text = content if isinstance(content, str) and content.strip() else None
    reasoning = _reasoning(message)
    raw_calls = [plain(c) for c in message.get("tool_calls") or []]
    completion: dict[str, Any] = {"role": "assistant", "content": content}
    if message.get("thinking_blocks"):
        completion["thinking_blocks"] = plain(message["thinking_blocks"])
    if not raw_calls:
        if text is None:
            raise AgentOutputError(
                "the model answered with neither text nor tool calls", agent=agent
            )
        call = AgentToolCall(
            tool_name="text_output",
            tool_args={"content": text},
            tool_call_id=new_call_id("text"),
            completion=completion,
            reasoning=reasoning,
        )
        return text, [call]
    completion["tool_calls"] = []
    parsed: list[tuple[str, str, dict[str, Any]]] = []
    for raw in raw_calls:
        function = raw.get("function") or {}
        name = str(function.get("name") or "")
        call_id = str(raw.get("id") or new_call_id())
        arguments = function.get("arguments")
        args = parse_arguments(agent, name, arguments)
        parsed.append((name, call_id, args))
        if not isinstance(arguments, str) or not arguments.strip():
            arguments = json.dumps(args)
        completion["tool_calls"].append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    calls = [
        AgentToolCall(
            tool_name=name,
            tool_args=args,
            tool_call_id=call_id,
            completion=completion,
            reasoning=reasoning if i == 0 else None,
            preamble=text if i == 0 else None,
        )
        for i, (name, call_id, args) in enumerate(parsed)
    ]
    return text, calls
