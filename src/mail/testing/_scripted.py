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
from typing import Any, Literal, TypeAlias

from mail.core.message import Incoming, parse_incoming
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
            return None, self._build(self._next_turn(messages))
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
        if callable(turn):  # a rule
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
                function = {"name": c.name, "arguments": json.dumps(c.args)}
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


def _function_call_item(c: ScriptedCall, call_id: str) -> dict[str, Any]:
    """The Responses API output item of ``c``, as a model would emit it."""
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": c.name,
        "arguments": json.dumps(c.args),  # the JSON text a model sends
        "status": "completed",
    }


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
