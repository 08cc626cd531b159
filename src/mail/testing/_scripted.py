"""Test doubles for swarms: deterministic agents that answer with scripted tool calls.

A :class:`ScriptedAgent` is an agent function (``async (history, tool_choice) ->
(text, calls)``) that never calls an LLM. Give it a script of turns, a rule, or both::

    from mail.testing import ScriptedAgent, tc

    supervisor = ScriptedAgent(
        [
            tc("send_request", target="weather", subject="Forecast", body="Tokyo?"),
            tc("task_complete", finish_message="Sunny in Tokyo"),
        ]
    )

    def echo(incoming):  # a rule sees the message that started the turn
        return tc("send_response", target=incoming.sender, subject="Re", body=incoming.body)

    weather = ScriptedAgent(rule=echo)

Each turn of a script is one :class:`ScriptedCall` (or a list of them: several calls in
one turn), an exception instance (raised), or a callable taking the :class:`Incoming`
message and returning any of those.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii as _json_str
from typing import Any, Literal, TypeAlias

from mail.core.tools import AgentToolCall

__all__ = [
    "Incoming",
    "ScriptedAgent",
    "ScriptedCall",
    "Turn",
    "parse_incoming",
    "scripted_agent",
    "tc",
]


# Not frozen: a frozen dataclass sets each field through object.__setattr__, three times
# the cost of building one, and every scripted turn of the benchmarks builds two.
@dataclass(slots=True)
class ScriptedCall:
    """One tool call an agent makes: ``name`` with ``args``, optionally with reasoning."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    reasoning: tuple[str, ...] | None = None
    call_id: str | None = None


def tc(
    name: str,
    *,
    reasoning: str | Sequence[str] | None = None,
    call_id: str | None = None,
    **args: Any,
) -> ScriptedCall:
    """Build a :class:`ScriptedCall`: ``tc("send_request", target="math", subject="s", body="b")``."""
    if reasoning is None:
        return ScriptedCall(name, args, None, call_id)  # ``args`` is this call's own dict
    steps = (reasoning,) if isinstance(reasoning, str) else tuple(reasoning) or None
    return ScriptedCall(name, args, steps, call_id)


@dataclass(slots=True)
class Incoming:
    """The message that started a turn, read back from the agent's history."""

    sender: str
    sender_type: str
    subject: str
    body: str
    content: str


def _parse(content: str) -> Incoming:
    # str.find throughout: this runs on every scripted turn of the benchmarks
    i = content.find('<from type="')
    sender_type = sender = ""
    if i >= 0:
        i += 12
        j = content.find('">', i)
        if j >= i:
            sender_type = content[i:j]
            k = j + 2  # the sender follows the first <from type="..."> at once
            end = content.find("</from>", k)
            if end >= k:
                sender = content[k:end]
    body = content
    i = content.find("<body>")
    if i >= 0:
        j = content.rfind("</body>\n</incoming_message>")
        if j >= i + 6:
            body = content[i + 6 : j]
    subject_end = content.find("</subject>\n<body>")
    start_subject = content.find("<subject>")
    subject = content[start_subject + 9 : subject_end] if 0 <= start_subject < subject_end else ""
    return Incoming(sender, sender_type, subject, body, content)


def parse_incoming(history: Sequence[dict[str, Any]]) -> Incoming:
    """Read the newest incoming MAIL message of ``history`` (the XML the runtime renders)."""
    for item in reversed(history):
        content = item.get("content")
        if item.get("role") == "user" and isinstance(content, str):
            return _parse(content)
    return Incoming("", "", "", "", "")


def _arguments(args: dict[str, Any]) -> str:
    # The JSON text an LLM would send (as json.dumps writes it); flat string arguments
    # take a fast path.
    parts = []
    for key, value in args.items():
        if type(value) is not str:
            return json.dumps(args)
        parts.append(f"{_json_str(key)}: {_json_str(value)}")
    return "{" + ", ".join(parts) + "}"


# One counter for every scripted agent of the process, so call ids never collide.
_CALL_IDS = itertools.count(1)

TurnResult: TypeAlias = "ScriptedCall | Sequence[ScriptedCall] | BaseException"
Turn: TypeAlias = "TurnResult | Callable[[Incoming], TurnResult]"


class ScriptedAgent:
    """An agent function that answers from a script, then from a rule.

    Args:
        script: turns played in order, one per invocation.
        rule: called with the incoming message once the script is used up.
        tool_format: ``"completions"`` or ``"responses"``: the shape of the model output
            the agent's history receives, as an LLM of that API would produce.
        gate: when set, every turn first waits for this event (for tests that need an
            agent to be mid-turn).
        record: keep a copy of each history the agent was called with, in ``calls``.
    """

    def __init__(
        self,
        script: Iterable[Turn] = (),
        *,
        rule: Callable[[Incoming], TurnResult] | None = None,
        tool_format: Literal["completions", "responses"] = "responses",
        gate: asyncio.Event | None = None,
        record: bool = True,
    ) -> None:
        self._script = list(script)
        self._position = 0
        self.rule = rule
        self.tool_format = tool_format
        self.gate = gate
        self.record = record
        self.calls: list[tuple[list[dict[str, Any]], str | dict[str, Any]]] = []
        self.invocations = 0
        self.running = 0
        self.max_running = 0

    async def __call__(
        self, messages: list[dict[str, Any]], tool_choice: str | dict[str, Any] = "required"
    ) -> tuple[str | None, list[AgentToolCall]]:
        self.invocations += 1
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            if self.record:
                self.calls.append((list(messages), tool_choice))
            if self.gate is not None:
                await self.gate.wait()
            turn = self._next_turn(messages)
            if type(turn) is ScriptedCall and self.tool_format == "responses":
                return None, [self._one(turn)]  # the usual turn, without _build
            return None, self._build(turn)
        finally:
            self.running -= 1

    def _next_turn(self, messages: list[dict[str, Any]]) -> TurnResult:
        if self._position < len(self._script):
            turn = self._script[self._position]
            self._position += 1
        elif self.rule is not None:
            turn = self.rule
        else:
            raise RuntimeError("scripted agent has no turn left")
        if callable(turn) and not isinstance(turn, _PLAIN_TURNS):
            # parse_incoming's first step, inlined: the newest item is the usual answer
            last = messages[-1] if messages else None
            content = last.get("content") if last is not None else None
            if isinstance(content, str) and last is not None and last.get("role") == "user":
                turn = turn(_parse(content))
            else:
                turn = turn(parse_incoming(messages))
        if isinstance(turn, BaseException):
            raise turn
        return turn

    def _build(self, turn: TurnResult) -> list[AgentToolCall]:
        calls = [turn] if isinstance(turn, ScriptedCall) else list(turn)  # type: ignore[arg-type]
        ids = [c.call_id or f"call_{next(_CALL_IDS)}" for c in calls]
        completion: dict[str, Any] = {}
        responses: list[dict[str, Any]] = []
        if self.tool_format == "completions":
            completion = {"role": "assistant", "content": None, "tool_calls": []}
            for c, i in zip(calls, ids, strict=True):
                function = {"name": c.name, "arguments": _arguments(c.args)}
                completion["tool_calls"].append({"id": i, "type": "function", "function": function})
        else:
            responses = [_function_call_item(c, i) for c, i in zip(calls, ids, strict=True)]
        return [
            AgentToolCall(
                tool_name=c.name,
                tool_args=c.args,
                tool_call_id=i,
                completion=completion,
                responses=responses,
                reasoning=list(c.reasoning) if c.reasoning else None,
                preamble=None,
            )
            for c, i in zip(calls, ids, strict=True)
        ]

    @staticmethod
    def _one(c: ScriptedCall) -> AgentToolCall:
        """:meth:`_build` of a turn of one call in the Responses format (the usual turn).

        ``AgentToolCall(**fields)`` validated straight from a dict (what ``__init__``
        does, without its Python frame).
        """
        i = c.call_id or f"call_{next(_CALL_IDS)}"
        fields = {
            "tool_name": c.name,
            "tool_args": c.args,
            "tool_call_id": i,
            "responses": [_function_call_item(c, i)],
            "reasoning": list(c.reasoning) if c.reasoning else None,
        }
        return _validate_call(fields)  # type: ignore[no-any-return]


def _function_call_item(c: ScriptedCall, call_id: str) -> dict[str, Any]:
    """The Responses API output item of ``c``, as a model would emit it."""
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": c.name,
        "arguments": _arguments(c.args),
        "status": "completed",
    }


#: ``AgentToolCall.model_validate`` without its Python frame
_validate_call = AgentToolCall.__pydantic_validator__.validate_python

#: turns that are results already, not rules to call
_PLAIN_TURNS = (ScriptedCall, BaseException)


def scripted_agent(
    *,
    script: Iterable[Turn] = (),
    rule: Callable[[Incoming], TurnResult] | None = None,
    tool_format: Literal["completions", "responses"] = "responses",
    **_factory_params: Any,
) -> ScriptedAgent:
    """An agent factory for swarm definitions: ``python::mail.testing:scripted_agent``.

    Accepts (and ignores) the wiring every factory receives (``name``, ``comm_targets``,
    ``tools``, ...); ``script`` and ``rule`` come from ``agent_params``, typically as
    ``python::`` references.
    """
    return ScriptedAgent(script, rule=rule, tool_format=tool_format, record=False)
