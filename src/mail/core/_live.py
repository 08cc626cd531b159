"""Live output of an agent turn: token deltas and token usage, reported by agent functions.

The runtime runs every agent call inside :func:`live_turn`, which puts the turn (its task
and agent) in a context variable. An agent function that streams its model's answer calls
:func:`emit_delta` with each piece of text, reasoning or answer as it arrives, and
:func:`report_usage` with the tokens each model call used. Both are no-ops outside a turn,
so agent functions stay plain ``await agent(history, tool_choice) -> (text, calls)``
callables that also work on their own.

Deltas become ephemeral ``token_delta`` events on the task's live streams (see
:meth:`mail.core.events.EventLog.publish`): never stored, never replayed. Usage is summed
on the task (:attr:`mail.core.tasks.MAILTask.usage`) and kept per model call on the turn
(:class:`LiveTurn`), whose first ``tool_call`` event records them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from mail.core.events import EventName, MAILEvent
from mail.core.message import utc_timestamp
from mail.core.tasks import ActionRun, ListenerTee, ModelCall

if TYPE_CHECKING:
    from mail.core.tasks import MAILTask, TurnObserver, TurnTracer

__all__ = [
    "USAGE_KEYS",
    "DeltaKind",
    "LiveTurn",
    "current_task_id",
    "current_turn",
    "emit_delta",
    "live_turn",
    "logged_turn",
    "model_call",
    "report_usage",
    "trace_headers",
    "traced_action",
    "turn_failed",
    "traced_hop",
    "tracer_of",
]

logger = logging.getLogger("mail.runtime")

#: What a delta is: assistant text, reasoning, or the growing ``finish_message`` of a
#: ``task_complete`` call.
DeltaKind: TypeAlias = Literal["text", "reasoning", "answer"]
_KINDS = frozenset({"text", "reasoning", "answer"})
#: The keys of a task's ``usage``, summed over its model calls.
USAGE_KEYS = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_input_tokens")


@dataclass(slots=True)
class LiveTurn:
    """One agent turn of the runtime: its task and agent, when the agent function was
    called (ISO-8601 UTC) and the model calls it reported, each ``{"model", "usage",
    "timestamp"}`` (the time the call's usage was reported, i.e. its end)."""

    task: MAILTask
    agent: str
    started: str = field(default_factory=utc_timestamp)
    model_calls: list[dict[str, object]] = field(default_factory=list)


_CURRENT: ContextVar[LiveTurn | None] = ContextVar("mail_live_turn", default=None)
#: the agent turn being handled: its model call, actions and tool calls
_LOGGED: ContextVar[LiveTurn | None] = ContextVar("mail_logged_turn", default=None)
#: the model call under way in a traced turn (see :func:`model_call`)
_CALL: ContextVar[ModelCall | None] = ContextVar("mail_model_call", default=None)


@contextmanager
def live_turn(task: MAILTask, agent: str) -> Iterator[LiveTurn]:
    """Make ``task`` and ``agent`` the current turn for :func:`emit_delta` and
    :func:`report_usage` until the block ends; yields the turn (its start and the model
    calls reported in it)."""
    turn = LiveTurn(task, agent)
    token = _CURRENT.set(turn)
    started = time.perf_counter()
    try:
        yield turn
    finally:
        _CURRENT.reset(token)
        observers = _observers(task)
        if observers:
            seconds = time.perf_counter() - started
            for observer in observers:
                _tell(task, observer.agent_turn, agent, seconds)


@contextmanager
def logged_turn(task: MAILTask, agent: str) -> Iterator[None]:
    """Make ``(task id, agent)`` what :func:`current_turn` answers until the block ends
    (the runtime's handling of one agent turn: its model call, actions and tool calls),
    inside the span of the task's tracer, if it has one."""
    token = _LOGGED.set(LiveTurn(task, agent))
    tracer = tracer_of(task)
    try:
        if tracer is None:
            yield
        else:
            with tracer.agent_turn(task, agent):
                yield
    finally:
        _LOGGED.reset(token)


def tracer_of(task: MAILTask) -> TurnTracer | None:
    """The tracer of ``task``'s runtime (``None``: tracing is off)."""
    listener = task.listener
    return listener.tracer if isinstance(listener, ListenerTee) else None


@contextmanager
def model_call(
    model: str | None,
    *,
    system: str | None = None,
    messages: list[dict[str, Any]] | None = None,
) -> Iterator[ModelCall]:
    """Around one call of an agent function to ``model`` (of provider ``system``, sent
    ``messages``): the block fills in the :class:`ModelCall` it gets (``output``), and
    :func:`report_usage` its usage and finish reasons. Within a traced turn the call is a
    span of its own; otherwise the block only runs."""
    call = ModelCall(model, system, messages=messages)
    turn = _CURRENT.get()
    tracer = None if turn is None else tracer_of(turn.task)
    if turn is None or tracer is None:
        yield call
        return
    token = _CALL.set(call)
    try:
        with tracer.model_call(turn.task, turn.agent, call):
            yield call
    finally:
        _CALL.reset(token)


@contextmanager
def traced_action(task: MAILTask, agent: str, run: ActionRun) -> Iterator[ActionRun]:
    """Around one action call of ``agent`` (a span when ``task`` is traced): the block
    sets ``run.status``."""
    tracer = tracer_of(task)
    if tracer is None:
        yield run
        return
    with tracer.action(task, agent, run):
        yield run


def current_turn() -> tuple[str, str] | None:
    """The ``(task_id, agent)`` of the agent turn handled here, if any (for log records)."""
    turn = _LOGGED.get() or _CURRENT.get()
    return None if turn is None else (turn.task.task_id, turn.agent)


def turn_failed(task: MAILTask, reason: str) -> None:
    """Tell ``task``'s tracer, if any, that the agent turn under way failed."""
    tracer = tracer_of(task)
    if tracer is not None:
        tracer.turn_failed(reason)


def trace_headers() -> dict[str, str]:
    """The headers that carry the current span's trace (``traceparent``) to another
    service, within a traced agent turn (its model call, actions and tool calls); empty
    otherwise."""
    turn = _LOGGED.get() or _CURRENT.get()
    tracer = None if turn is None else tracer_of(turn.task)
    return {} if tracer is None else tracer.headers()


@contextmanager
def traced_hop(kind: str, peer: str, operation: str) -> Iterator[dict[str, str]]:
    """Around a call of the current agent turn to another server (``kind`` ``a2a``...):
    a span of its own when the turn is traced; the block gets the headers that carry the
    trace (empty otherwise)."""
    turn = _LOGGED.get() or _CURRENT.get()
    tracer = None if turn is None else tracer_of(turn.task)
    if turn is None or tracer is None:
        yield {}
        return
    with tracer.hop(turn.task, kind, peer, operation) as headers:
        yield headers


def _observers(task: MAILTask) -> list[TurnObserver]:
    listener = task.listener
    return listener.turn_observers if isinstance(listener, ListenerTee) else []


def _tell(task: MAILTask, hook: Callable[..., None], *args: object) -> None:
    try:
        hook(task, *args)
    except Exception:
        logger.exception("a turn observer of task %s failed", task.task_id)


def current_task_id() -> str | None:
    """The id of the task whose agent turn runs (``None`` outside a turn of the runtime):
    an agent function that calls another service keeps its state per task with it."""
    turn = _CURRENT.get()
    return None if turn is None else turn.task.task_id


def emit_delta(kind: DeltaKind, delta: str, *, call_id: str | None = None) -> None:
    """Send a piece of the model's output, as it streams, to the task's live streams.

    Args:
        kind: ``"text"`` (assistant text), ``"reasoning"`` (reasoning or thinking) or
            ``"answer"`` (the growing ``finish_message`` of a ``task_complete`` call).
        delta: the new text (empty deltas are dropped).
        call_id: the tool call the delta belongs to (for ``"answer"``).

    Does nothing outside an agent turn of the runtime, or when ``kind`` is unknown.
    """
    turn = _CURRENT.get()
    if turn is None or not delta or kind not in _KINDS:
        return
    log = turn.task.log
    if not log.live_readers:
        return
    ts = utc_timestamp()
    payload: dict[str, str] = {
        "timestamp": ts,
        "task_id": turn.task.task_id,
        "agent": turn.agent,
        "kind": kind,
        "delta": delta,
    }
    if call_id is not None:
        payload["call_id"] = call_id
    log.publish(MAILEvent(EventName.TOKEN_DELTA, turn.task.task_id, timestamp=ts, payload=payload))


def report_usage(
    usage: Mapping[str, object],
    *,
    model: str | None = None,
    finish_reasons: Sequence[str] = (),
) -> None:
    """Add the tokens of one model call to the current task's usage.

    ``usage`` has any of :data:`USAGE_KEYS` (other keys and non-integer values are
    ignored); ``model`` names the model called, for the task's observers (the server's
    metrics); ``finish_reasons`` why it stopped, for the call's span (see
    :func:`model_call`). Does nothing outside an agent turn of the runtime.
    """
    turn = _CURRENT.get()
    if turn is None:
        return
    call = _CALL.get()
    if call is not None:
        call.usage = usage
        call.finish_reasons.extend(finish_reasons)
    total = turn.task.usage
    if total is None:
        total = turn.task.usage = dict.fromkeys(USAGE_KEYS, 0)
    counted: dict[str, int] = {}
    for key in USAGE_KEYS:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            total[key] += value
            counted[key] = value
    turn.model_calls.append({"model": model, "usage": counted, "timestamp": utc_timestamp()})
    for observer in _observers(turn.task):
        _tell(turn.task, observer.model_call, turn.agent, model, usage)
