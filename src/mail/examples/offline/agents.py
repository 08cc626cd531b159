"""Scripted agents for the offline demo swarm: real routing, real actions, no LLM.

Each class is an agent factory for swarms.json (``python::mail.examples.offline.agents:
OfflineSupervisorFunction`` and so on): it takes the parameters every factory receives
and is called like any agent function, ``(history, tool_choice) -> (None, [calls])``.
Each turn is decided from the agent's own history alone, so the agents are stateless,
can serve many tasks at once, and pick up correctly when re-prompted:

- :class:`OfflineSupervisorFunction` reads the user's question; weather questions go to
  ``weather``, arithmetic to ``math`` (both requests in one turn when both are asked).
  It waits with ``await_message`` while answers are outstanding, then calls
  ``task_complete`` with the combined answer. Anything else it answers itself. A runtime
  error notice ends the task with an apology instead of a retry loop.
- :class:`OfflineWeatherFunction` calls ``get_weather_forecast`` for the place named in
  a request and, once the action has run, answers the requester with one sentence.
- :class:`OfflineMathFunction` does the same with ``calculate_expression``.

The model output recorded in histories has the shape of the agent's ``tool_format``.

Every agent takes two options (``agent_params`` in swarms.json) that make a task visible
as it runs, as an LLM swarm's would be (the ``offline-slow`` swarm sets them):
``turn_seconds``, the time each turn takes (0 by default: answers are immediate), and
``stream_tokens``, which spreads that time over the turn's reasoning (one scripted
sentence per turn, also kept on its first call) and the final answer, sent as live
``token_delta`` events (:func:`mail.core.emit_delta`) while the turn runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from mail.core import emit_delta
from mail.core.tools import AgentToolCall
from mail.errors import SwarmDefinitionError
from mail.examples.offline._history import Call, Received, Transcript, action_result
from mail.examples.offline._text import (
    DEFAULT_LOCATION,
    find_expression,
    find_location,
    is_weather_question,
    wants_tomorrow,
)
from mail.testing import ScriptedAgent, ScriptedCall, tc

__all__ = ["OfflineMathFunction", "OfflineSupervisorFunction", "OfflineWeatherFunction"]

Turn = ScriptedCall | list[ScriptedCall]

# Runtime notices after which waiting longer would not help.
_ERROR_SUBJECTS = frozenset(
    {
        "::agent_error::",
        "::tool_call_error::",
        "::invalid_recipient::",
        "::improper_response_to_user::",
        "::action_error::",
        "::runtime_error::",
    }
)
_MAXIMUM_STEPS = "::maximum_steps_reached::"
_LONGEST_TURN = 60.0  # seconds: turn_seconds beyond this is a mistake
_ANSWERING_TOOLS = frozenset({"send_response", "task_complete"})


def _forces_task_complete(tool_choice: str | dict[str, Any]) -> bool:
    if not isinstance(tool_choice, dict):
        return False
    function = tool_choice.get("function")
    name = function.get("name") if isinstance(function, dict) else tool_choice.get("name")
    return name == "task_complete"


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "unknown error"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _answer(question: Received, body: str) -> ScriptedCall:
    """Answer whoever asked: agents get a response, the user gets the final answer."""
    asker = question.message
    if asker.sender_type == "agent":
        return tc("send_response", target=asker.sender, subject=f"Re: {asker.subject}", body=body)
    return tc("task_complete", finish_message=body)


def _same_number(a: str, b: str) -> bool:
    try:
        return Decimal(a) == Decimal(b)
    except InvalidOperation:
        return a == b


def _nothing_to_do(reason: str) -> ScriptedCall:
    return tc("ignore_broadcast", reason=reason)


def _rationale(call: ScriptedCall) -> str:
    """One sentence on why a call is made, for a turn that shows its reasoning."""
    args = call.args
    match call.name:
        case "send_request":
            return f"This needs {args.get('target')}: I ask it ({args.get('subject')})."
        case "send_response":
            return f"I have what {args.get('target')} asked for: I answer it."
        case "await_message":
            return f"Nothing to answer yet: I wait ({args.get('reason')})."
        case "task_complete":
            return "Everything is in: I write the answer."
        case "ignore_broadcast":
            return f"Nothing to do: {args.get('reason')}."
        case _:
            shown = ", ".join(f"{k}={v!r}" for k, v in args.items())
            return f"I run {call.name}({shown}) and read its result."


def _pieces(text: str, count: int) -> list[str]:
    """``text`` cut at word ends into about ``count`` pieces that add up to it."""
    words = text.split(" ")
    size = max(1, -(-len(words) // max(count, 1)))
    starts = range(0, len(words), size)
    return [" ".join(words[i : i + size]) + (" " if i + size < len(words) else "") for i in starts]


class _OfflineAgent:
    """What the offline agents share: the factory parameters and the turn plumbing."""

    def __init__(
        self,
        name: str,
        comm_targets: Sequence[str],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        enable_entrypoint: bool = False,
        enable_interswarm: bool = False,
        tool_format: str = "responses",
        can_complete_tasks: bool = False,
        exclude_tools: Sequence[str] | None = None,
        user_token: str = "",
        turn_seconds: float = 0.0,
        stream_tokens: bool = False,
        **kwargs: Any,
    ) -> None:
        if isinstance(turn_seconds, bool) or not isinstance(turn_seconds, int | float):
            raise SwarmDefinitionError(
                f"must be a number of seconds, got {turn_seconds!r}",
                agent=name,
                field="turn_seconds",
            )
        if not 0 <= turn_seconds <= _LONGEST_TURN:
            raise SwarmDefinitionError(
                f"must be between 0 and {_LONGEST_TURN:g} seconds, got {turn_seconds!r}",
                agent=name,
                field="turn_seconds",
            )
        if tool_format not in ("completions", "responses"):
            raise SwarmDefinitionError(
                f"must be 'completions' or 'responses', got {tool_format!r}",
                agent=name,
                field="tool_format",
            )
        self.name = name
        self.comm_targets = list(comm_targets)
        self.tools = list(tools or ())
        self.enable_entrypoint = enable_entrypoint
        self.enable_interswarm = enable_interswarm
        self.tool_format: Literal["completions", "responses"] = (
            "completions" if tool_format == "completions" else "responses"
        )
        self.can_complete_tasks = can_complete_tasks
        self.exclude_tools = list(exclude_tools or ())
        self.print_llm_streams = False
        self.turn_seconds = float(turn_seconds)
        self.stream_tokens = bool(stream_tokens)

    async def __call__(
        self, messages: list[dict[str, Any]], tool_choice: str | dict[str, Any] = "required"
    ) -> tuple[str | None, list[AgentToolCall]]:
        """Decide this turn from ``messages`` and return its tool calls (after
        ``turn_seconds``, streaming the turn meanwhile with ``stream_tokens``)."""
        turn = self.decide(Transcript.read(messages), tool_choice)
        if self.turn_seconds or self.stream_tokens:
            turn = await self._take_time(turn)
        agent = ScriptedAgent(
            rule=lambda _incoming: turn, tool_format=self.tool_format, record=False
        )
        return await agent(messages, tool_choice)

    def decide(self, transcript: Transcript, tool_choice: str | dict[str, Any]) -> Turn:
        """The calls of this turn, given everything the agent has seen and done."""
        raise NotImplementedError

    async def _take_time(self, turn: Turn) -> list[ScriptedCall]:
        """Spend ``turn_seconds`` on ``turn`` as a model would: with ``stream_tokens``, its
        reasoning (kept on the first call) then its answer go out as deltas meanwhile."""
        calls = [turn] if isinstance(turn, ScriptedCall) else list(turn)
        if not self.stream_tokens:
            await asyncio.sleep(self.turn_seconds)
            return calls
        reasoning = " ".join(_rationale(call) for call in calls)
        answers = [c for c in calls if c.name == "task_complete"]
        answer = str(answers[0].args.get("finish_message", "")) if answers else ""
        pieces = [("reasoning", p) for p in _pieces(reasoning, 4)]
        pieces += [("answer", p) for p in _pieces(answer, 12)] if answer else []
        pause = self.turn_seconds / (len(pieces) + 1)
        for kind, piece in pieces:
            await asyncio.sleep(pause)
            emit_delta("answer" if kind == "answer" else "reasoning", piece)
        await asyncio.sleep(pause)
        return [replace(calls[0], reasoning=(reasoning,)), *calls[1:]] if calls else calls

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, comm_targets={self.comm_targets!r})"


# --- supervisor ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Job:
    """The question the supervisor is working on, and what happened since it arrived."""

    question: Received
    requests: list[str] = field(default_factory=list)  # targets, in the order asked
    replies: list[tuple[str, str]] = field(default_factory=list)  # (sender, body)
    answered: bool = False

    @property
    def outstanding(self) -> int:
        return max(len(self.requests) - len(self.replies), 0)


def _current_job(transcript: Transcript) -> _Job | None:
    """Replay the history: a message from an agent we asked is a reply, any other
    non-system message is a new question."""
    job: _Job | None = None
    pending: dict[str, int] = {}
    entries: list[Received | Call] = [*transcript.received, *transcript.calls]
    entries.sort(key=lambda entry: entry.index)
    for entry in entries:
        if isinstance(entry, Received):
            message = entry.message
            if entry.from_system:
                continue
            if message.sender_type == "agent" and pending.get(message.sender, 0) > 0:
                pending[message.sender] -= 1
                if job is not None:
                    job.replies.append((message.sender, message.body))
            else:
                job = _Job(entry)
        elif job is not None:
            target = entry.args.get("target")
            if entry.name == "send_request" and isinstance(target, str):
                pending[target] = pending.get(target, 0) + 1
                job.requests.append(target)
            elif entry.name in _ANSWERING_TOOLS:
                job.answered = True
    return job


class OfflineSupervisorFunction(_OfflineAgent):
    """The offline swarm's entrypoint: delegates weather and arithmetic, then answers.

    Takes the factory parameters (``name``, ``comm_targets``, ``tools``,
    ``enable_entrypoint``, ``enable_interswarm``, ``tool_format``, ``can_complete_tasks``,
    ``exclude_tools``, ``user_token``; anything else is ignored). The weather and math
    agents are the comm targets named ``weather`` and ``math`` (or containing those
    words). Raises :class:`~mail.errors.SwarmDefinitionError` for an unknown
    ``tool_format``.
    """

    def decide(self, transcript: Transcript, tool_choice: str | dict[str, Any]) -> Turn:
        trigger = transcript.last
        job = _current_job(transcript)
        forced = _forces_task_complete(tool_choice) or (
            trigger is not None
            and trigger.from_system
            and trigger.message.subject == _MAXIMUM_STEPS
        )
        if job is None:
            if forced:
                return tc("task_complete", finish_message=self._introduction())
            return _nothing_to_do("there is no question to work on")
        if forced:
            return self._finish(job, problem="I ran out of steps before every answer arrived")
        if trigger is job.question and not transcript.calls_after(job.question.index):
            return self._start(job)
        if job.answered:
            return _nothing_to_do("the question has already been answered")
        if (
            trigger is not None
            and trigger.from_system
            and trigger.message.subject in _ERROR_SUBJECTS
        ):
            return self._finish(job, problem=_first_line(trigger.message.body))
        if job.outstanding:
            return tc("await_message", reason=f"waiting for {job.outstanding} answer(s)")
        return self._finish(job)

    def _target(self, kind: str) -> str | None:
        if kind in self.comm_targets:
            return kind
        return next((t for t in self.comm_targets if kind in t.split("@")[0]), None)

    def _plan(self, question: str) -> tuple[list[ScriptedCall], list[str]]:
        """The requests a question needs, and notes about the ones nobody can handle."""
        requests: list[ScriptedCall] = []
        notes: list[str] = []
        if is_weather_question(question):
            place = find_location(question) or DEFAULT_LOCATION
            when = "tomorrow" if wants_tomorrow(question) else "today"
            target = self._target("weather")
            if target is None:
                notes.append("I have no weather agent to ask for a forecast.")
            else:
                body = f"What is the weather forecast for {place} {when}?"
                requests.append(
                    tc("send_request", target=target, subject="Weather forecast", body=body)
                )
        expression = find_expression(question)
        if expression is not None:
            target = self._target("math")
            if target is None:
                notes.append("I have no math agent to evaluate the arithmetic.")
            else:
                body = f"Please evaluate this expression: {expression}"
                requests.append(tc("send_request", target=target, subject="Calculation", body=body))
        return requests, notes

    def _start(self, job: _Job) -> Turn:
        requests, notes = self._plan(job.question.message.body)
        if requests:
            return requests
        return _answer(job.question, "\n".join(notes) if notes else self._introduction())

    def _finish(self, job: _Job, problem: str | None = None) -> ScriptedCall:
        order = {target: i for i, target in reversed(list(enumerate(job.requests)))}
        replies = sorted(job.replies, key=lambda reply: order.get(reply[0], len(order)))
        lines = [body.strip() for _sender, body in replies]
        lines += self._plan(job.question.message.body)[1]
        if problem is not None:
            text = f"Sorry, I could not finish this: {problem.rstrip('.')}."
            if lines:
                text += "\n\nWhat I found so far:\n" + "\n".join(f"- {line}" for line in lines)
        elif len(lines) == 1:
            text = lines[0]
        elif lines:
            text = "Here is what I found:\n" + "\n".join(f"- {line}" for line in lines)
        else:
            text = self._introduction()
        return _answer(job.question, text)

    def _introduction(self) -> str:
        skills = []
        if self._target("weather") is not None:
            skills.append(
                '- the weather, e.g. "What\'s the weather in Tokyo tomorrow?" (the forecast '
                "is made up, but the same question gets the same answer all day)"
            )
        if self._target("math") is not None:
            skills.append(
                '- arithmetic, e.g. "What is 12 * (3 + 4)?" (numbers, + - * / // % **, '
                "parentheses, pi, e and tau)"
            )
        greeting = (
            "Hello! I am the supervisor of an offline demo swarm (no language model involved)."
        )
        if not skills:
            return f"{greeting} I have no helpers to ask, so I cannot answer questions yet."
        text = f"{greeting} I can answer questions about:\n" + "\n".join(skills)
        if len(skills) > 1:
            text += "\nAsk both in one message and I will combine the answers."
        return text


# --- workers -------------------------------------------------------------------------------


class _OfflineWorker(_OfflineAgent):
    """An agent that answers each request by running one action."""

    default_action = ""

    def __init__(
        self,
        name: str,
        comm_targets: Sequence[str],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        action: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, comm_targets, tools, **kwargs)
        self.action = action or self.default_action

    def arguments(self, request: str) -> dict[str, Any]:
        """The action's arguments for the request body ``request``."""
        raise NotImplementedError

    def describe(self, ok: bool, result: Any, args: dict[str, Any]) -> str:
        """One sentence about the action's ``result`` (``ok`` False: an error text)."""
        raise NotImplementedError

    def decide(self, transcript: Transcript, tool_choice: str | dict[str, Any]) -> Turn:
        trigger = transcript.last
        request = next((r for r in reversed(transcript.received) if not r.from_system), None)
        if trigger is None or request is None:
            return _nothing_to_do("there is no request to work on")
        since = transcript.calls_after(request.index)
        if any(call.name in _ANSWERING_TOOLS for call in since):
            return _nothing_to_do("the request has already been answered")
        runs = [call for call in since if call.name == self.action]
        if runs and runs[-1].call_id in transcript.outputs:
            ok, result = action_result(transcript.outputs[runs[-1].call_id])
            return _answer(request, self.describe(ok, result, runs[-1].args))
        if trigger.from_system and trigger.message.subject in _ERROR_SUBJECTS:
            problem = _first_line(trigger.message.body)
            return _answer(request, f"Sorry, I could not answer that: {problem.rstrip('.')}.")
        return tc(self.action, **self.arguments(request.message.body))


class OfflineWeatherFunction(_OfflineWorker):
    """The offline swarm's weather agent: answers requests with ``get_weather_forecast``.

    Takes the factory parameters (see :class:`OfflineSupervisorFunction`) and ``action``,
    the name of the forecast action (default ``"get_weather_forecast"``). The place is
    the capitalised name after "in", "for" or "at" (default San Francisco); "tomorrow"
    asks for the next day; temperatures are in Celsius.
    """

    default_action = "get_weather_forecast"

    def arguments(self, request: str) -> dict[str, Any]:
        return {
            "location": find_location(request) or DEFAULT_LOCATION,
            "days_ahead": 1 if wants_tomorrow(request) else 0,
            "metric": True,
        }

    def describe(self, ok: bool, result: Any, args: dict[str, Any]) -> str:
        if ok and isinstance(result, dict):
            # a forecast a caller supplied (a breakpoint tool's result) may leave fields out
            place = result.get("location") or args.get("location")
            date = f" on {result['date']}" if result.get("date") else ""
            degrees = f"{result.get('temperature')}°{result.get('units') or ''}"
            return f"Forecast for {place}{date}: {result.get('condition')}, {degrees}."
        error = str(result).removeprefix("Error: ")
        return f"Sorry, I could not get a forecast for {args.get('location')}: {error}"


class OfflineMathFunction(_OfflineWorker):
    """The offline swarm's math agent: answers requests with ``calculate_expression``.

    Takes the factory parameters (see :class:`OfflineSupervisorFunction`) and ``action``,
    the name of the calculator action (default ``"calculate_expression"``). The
    expression is the arithmetic found in the request (or the whole request).
    """

    default_action = "calculate_expression"

    def arguments(self, request: str) -> dict[str, Any]:
        return {"expression": find_expression(request) or request.strip()}

    def describe(self, ok: bool, result: Any, args: dict[str, Any]) -> str:
        if ok and isinstance(result, dict):
            exact, rounded = str(result.get("result")), str(result.get("formatted_result"))
            if _same_number(exact, rounded):
                return f"{result.get('expression')} = {exact}"
            return f"{result.get('expression')} ≈ {rounded}"
        error = str(result).removeprefix("Error: ")
        return f"Sorry, I could not evaluate {args.get('expression')!r}: {error}."
