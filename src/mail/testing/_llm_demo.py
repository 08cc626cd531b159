"""The default rule of ``python -m mail.testing.llm``: a model that plays the ``example`` and
``example-no-proxy`` swarms of the repository's ``swarms.json`` without an LLM provider.

Stateless: each answer depends on the request alone (the tools offered and the newest
messages), so any number of tasks, in any order, run end to end:

- the supervisor (offered ``task_complete``) sends the user's question to ``math`` when it
  holds an arithmetic expression, else to ``weather``, and completes the task with the
  first answer an agent sends back;
- ``weather`` calls ``get_weather_forecast`` for the place the question names, then
  answers its sender with the forecast the action returned;
- ``math`` calls ``calculate_expression``, then answers with the result;
- any other agent answers ``"stub LLM: nothing scripted for this agent"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from mail.testing._llm_wire import StubReply
from mail.testing._scripted import Incoming, parse_incoming

__all__ = ["example_swarm_rule"]

_ARITHMETIC = re.compile(r"\d\s*[-+*/^%]\s*[\d(]")
_EXPRESSION = re.compile(r"[\d\s.+\-*/()^%]*\d[\d\s.+\-*/()^%]*")
_PLACE = re.compile(r"\b(?:in|for|at)\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)")
_DEFAULT_PLACE = "Paris"
_ACTION_COMPLETE = "::action_complete::"


def example_swarm_rule(body: dict[str, Any]) -> StubReply:
    """Answer one LLM request of the ``example`` swarms (see the module docstring)."""
    tools = _tool_names(body)
    history = _history(body)
    incoming = parse_incoming(history)
    if "task_complete" in tools:
        return _supervisor(incoming)
    if "get_weather_forecast" in tools:
        return _weather(history, incoming)
    if "calculate_expression" in tools:
        return _math(history, incoming)
    return StubReply.message("stub LLM: nothing scripted for this agent")


def _supervisor(incoming: Incoming) -> StubReply:
    if incoming.sender_type == "user":
        target = "math" if _ARITHMETIC.search(incoming.body) else "weather"
        request = {"target": target, "subject": incoming.subject, "body": incoming.body}
        return StubReply.tool_calls(("send_request", request))
    if incoming.sender_type == "agent":
        answer = incoming.body
    else:  # a system message (an error, a timeout): end the task saying so
        answer = f"The agents could not answer ({incoming.subject}): {incoming.body}"
    return StubReply.tool_calls(("task_complete", {"finish_message": answer}))


def _weather(history: Sequence[dict[str, Any]], incoming: Incoming) -> StubReply:
    if incoming.subject == _ACTION_COMPLETE:
        return _answer(history, _forecast_text(_last_tool_output(history)))
    found = _PLACE.search(incoming.body)
    place = found.group(1) if found else _DEFAULT_PLACE
    arguments = {"location": place, "days_ahead": 1, "metric": True}
    return StubReply.tool_calls(("get_weather_forecast", arguments))


def _math(history: Sequence[dict[str, Any]], incoming: Incoming) -> StubReply:
    if incoming.subject == _ACTION_COMPLETE:
        result = _result(_last_tool_output(history))
        return _answer(history, result)
    found = max(_EXPRESSION.findall(incoming.body), key=len, default="").strip()
    return StubReply.tool_calls(("calculate_expression", {"expression": found or "0"}))


def _answer(history: Sequence[dict[str, Any]], text: str) -> StubReply:
    """Send ``text`` back to the agent that asked (the newest agent sender)."""
    target = "supervisor"
    for item in reversed(history):
        asked = parse_incoming([item])
        if asked.sender_type == "agent":
            target = asked.sender
            break
    response = {"target": target, "subject": "Re: your request", "body": text}
    return StubReply.tool_calls(("send_response", response))


def _tool_names(body: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for tool in body.get("tools") or []:
        function = tool.get("function")
        names.add(str(function.get("name") if isinstance(function, dict) else tool.get("name")))
    return names


def _history(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("messages", body.get("input", []))
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return [item for item in items if isinstance(item, dict)]


def _last_tool_output(history: Sequence[dict[str, Any]]) -> str:
    for item in reversed(history):
        if item.get("role") == "tool":
            return str(item.get("content", ""))
        if item.get("type") == "function_call_output":
            return str(item.get("output", ""))
    return ""


def _decoded(output: str) -> Any:
    text = output.removeprefix("SUCCESS:").strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _forecast_text(output: str) -> str:
    data = _decoded(output)
    if not isinstance(data, dict):
        return str(data)
    return (
        f"{data.get('location')} on {data.get('date')}: {data.get('condition')}, "
        f"{data.get('temperature')} {data.get('units')}"
    )


def _result(output: str) -> str:
    data = _decoded(output)
    if not isinstance(data, dict):
        return str(data)
    return f"{data.get('expression')} = {data.get('formatted_result', data.get('result'))}"
