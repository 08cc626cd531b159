"""Tasks: their states, their record and the table that keeps them in memory.

A task is created by its first message and lives through *turns*: each submission (a new
task, a ``user_response`` follow-up or a breakpoint resume) opens a turn whose future is
resolved exactly once, with the message that ended that turn. Completion is tied to the
turn, so a follow-up sent right after an answer can never receive the previous answer.

States::

    running ──task_complete──▶ completed ──user_response──▶ running
       │ ──breakpoint tool────▶ waiting_breakpoint ──breakpoint result──▶ running
       │ ──error / timeout────▶ failed ──user_response──▶ running
       └ ──shutdown──────────▶ cancelled
    (interrupted: was running when the process died; resumable with user_response)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import KW_ONLY, InitVar, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from mail.core._task_compat import V136TaskMethods
from mail.core._task_state import QueueItem, TaskState
from mail.core.events import EventLog, EventName, LogListener, MAILEvent

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from mail.core.budget import TaskBudget
    from mail.core.message import MAILMessage
    from mail.core.tools import AgentToolCall

logger = logging.getLogger("mail.runtime")

__all__ = [
    "TurnRequest",
    "TaskState",
    "QueueItem",
    "PendingBreakpoint",
    "MAILTask",
    "TaskListener",
    "ListenerTee",
    "TaskTable",
    "TurnObserver",
    "TurnTracer",
    "ModelCall",
    "ActionRun",
    "TITLE_LENGTH",
    "short_title",
    "turn_status",
    "closing_event",
]

#: How long a task's title may be, ellipsis included.
TITLE_LENGTH = 60


def short_title(text: str) -> str:
    """``text`` on one line, shortened to :data:`TITLE_LENGTH` characters with ``...``."""
    line = " ".join(text.split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 3] + "..."


_FINISHED = frozenset(
    {
        TaskState.COMPLETED,
        TaskState.FAILED,
        TaskState.CANCELLED,
        TaskState.INTERRUPTED,
        TaskState.WAITING_BREAKPOINT,
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRequest:
    """What opened a task's turn, by which a retried request is told from a new one.

    ``fingerprint`` digests what the request asked (its message and arguments); ``key``
    is the client's ``Idempotency-Key``, if it sent one; ``start`` is the task's last
    event before the turn (its stream starts after it); ``first`` is the fingerprint of
    the request that created the task.
    """

    fingerprint: str
    key: str | None = None
    start: int = 0
    first: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"fp": self.fingerprint, "key": self.key, "start": self.start, "first": self.first}

    @classmethod
    def from_json(cls, value: Any) -> TurnRequest | None:
        """The request stored as :meth:`as_json` (``None`` for anything else)."""
        if not isinstance(value, dict) or not isinstance(value.get("fp"), str):
            return None
        key, first, start = value.get("key"), value.get("first"), value.get("start")
        return cls(
            fingerprint=value["fp"],
            key=key if isinstance(key, str) else None,
            start=start if isinstance(start, int) else 0,
            first=first if isinstance(first, str) else None,
        )


@dataclass(slots=True, kw_only=True)
class PendingBreakpoint:
    """A breakpoint tool call waiting for its result from the caller."""

    agent: str
    call: AgentToolCall
    normalized: dict[str, Any]


@dataclass(slots=True)
class MAILTask(V136TaskMethods):
    """Everything the runtime knows about one task.

    v1.3.6's methods (``get_messages``, ``queue_stash``, ``mark_complete``, ...) come from
    :class:`mail.core._task_compat.V136TaskMethods`.
    """

    task_id: str
    task_owner: str
    task_contributors: list[str]
    # the three above may be positional, as in v1.3.6
    _: KW_ONLY
    start_time: datetime = field(default_factory=lambda: datetime.now(UTC))
    updated_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    state: TaskState = TaskState.RUNNING
    title: str | None = None
    remote_swarms: set[str] = field(default_factory=set)
    log: EventLog = field(init=False)
    # messages for this task that arrived while it was not running, restored on resume
    stash: list[QueueItem] = field(default_factory=list)
    # the current turn: resolved once with the message that ended it
    turn: asyncio.Future[MAILMessage] | None = None
    # one future per caller waiting on the current turn (cancelling one leaves the rest)
    waiters: list[asyncio.Future[MAILMessage]] = field(default_factory=list)
    turn_number: int = 0
    response: MAILMessage | None = None
    pending_breakpoints: dict[str, PendingBreakpoint] = field(default_factory=dict)
    steps: int = 0
    max_steps: int | None = None
    max_steps_set: bool = False
    outstanding: dict[str, int] = field(default_factory=dict)
    #: manual mode: agent -> the messages waiting for its next manual step
    manual_buffer: dict[str, list[MAILMessage]] = field(default_factory=dict)
    agent_failures: dict[str, int] = field(default_factory=dict)
    queued: int = 0
    agents: set[str] = field(default_factory=set)
    # agents with a turn running or queued in this task
    busy: set[str] = field(default_factory=set)
    finished_at: float | None = None
    #: tokens the task's model calls reported, summed (``None`` until one reports)
    usage: dict[str, int] | None = None
    #: the task's limits and what it spent (``None``: no budget; :mod:`mail.core.budget`)
    budget: TaskBudget | None = None
    #: what opened the current turn (``None``: a request that gave none, the Python API)
    request: TurnRequest | None = None
    #: told of every change of the task and its log (the runtime's store recorder)
    listener: TaskListener | None = field(default=None, repr=False)
    #: events loaded back from a store, with their sequence numbers
    events: InitVar[list[MAILEvent] | None] = None

    def __post_init__(self, events: list[MAILEvent] | None) -> None:
        self.log = EventLog(self.task_id, events, self.listener)

    @property
    def is_running(self) -> bool:
        return self.state is TaskState.RUNNING

    @property
    def completed(self) -> bool:
        """True when the task is not running (completed, paused, failed or cancelled)."""
        return self.state in _FINISHED

    def touch(self) -> None:
        self.updated_at = datetime.now(UTC)

    def changed(self) -> None:
        """Tell the listener that the task's record changed."""
        if self.listener is not None:
            self.listener.task_changed(self)

    def open_turn(self) -> asyncio.Future[MAILMessage]:
        """Start a new turn and return its future (reusing it if the task is mid-turn)."""
        turn = self.turn
        if turn is None or turn.done():
            turn = self.turn = asyncio.get_running_loop().create_future()
            self.turn_number += 1
        self.state = TaskState.RUNNING
        self.finished_at = None
        self.touch()
        return turn

    def close_turn(self, state: TaskState, message: MAILMessage) -> None:
        """End the current turn in ``state`` with ``message`` as its answer."""
        self.state = state
        self.response = message
        self.steps = 0
        if state is not TaskState.WAITING_BREAKPOINT:
            self.outstanding.clear()
        self.finished_at = time.monotonic()
        self.touch()
        turn = self.turn
        if turn is not None and not turn.done():
            turn.set_result(message)
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(message)

    def wait_turn(self) -> asyncio.Future[MAILMessage]:
        """A future of the current turn's end, private to one caller (safe to cancel)."""
        waiter: asyncio.Future[MAILMessage] = asyncio.get_running_loop().create_future()
        turn = self.turn
        if turn is not None and turn.done():
            waiter.set_result(turn.result())
        else:
            self.waiters.append(waiter)
        return waiter


#: The states a turn may end in, as the closing event's and the answer's ``status``.
#: the stored events that end a turn
_TURN_ENDS = frozenset({EventName.TASK_COMPLETE, EventName.TASK_ERROR})

_TURN_STATUS = {
    TaskState.WAITING_BREAKPOINT: "waiting_breakpoint",
    TaskState.FAILED: "failed",
    TaskState.INTERRUPTED: "failed",
    TaskState.CANCELLED: "cancelled",
}


def turn_status(task: MAILTask) -> str:
    """How the task's last turn ended: ``completed``, ``waiting_breakpoint``, ``failed``
    or ``cancelled`` (a task already running again reads ``completed``)."""
    return _TURN_STATUS.get(task.state, "completed")


def closing_event(task: MAILTask, response: str) -> MAILEvent:
    """The stream's closing event of the task's turn: ``task_error`` for a failed or
    cancelled turn, else ``task_complete``, with ``status``, when a model reported any, the
    task's token ``usage``, and its ``budget`` when it has one."""
    status = turn_status(task)
    name = EventName.TASK_ERROR if status in ("failed", "cancelled") else EventName.TASK_COMPLETE
    return MAILEvent.stream_final(
        name,
        task.task_id,
        response,
        status=status,
        usage=task.usage,
        stored=_stored_end(task),
        budget=task.budget.view() if task.budget is not None else None,
    )


def _stored_end(task: MAILTask) -> MAILEvent | None:
    """The stored event that ended the task's last turn: each turn that ends stores a
    ``task_complete`` (an answer, a breakpoint pause) or a ``task_error`` (a failure, a
    cancel) right before it ends."""
    visible = task.log.visible_seq
    for event in reversed(task.log.all()):
        if event.event in _TURN_ENDS and (event.seq or 0) <= visible:
            return event
    return None


class TaskListener(LogListener, Protocol):
    """Told of every change of a task (the runtime's store recorder)."""

    def task_changed(self, task: MAILTask) -> None: ...


class TurnObserver(Protocol):
    """Told of agent turns and model calls as they end (the server's metrics)."""

    def agent_turn(self, task: MAILTask, agent: str, seconds: float) -> None:
        """An agent function of ``task`` returned (or raised) after ``seconds``."""

    def model_call(
        self, task: MAILTask, agent: str, model: str | None, usage: Mapping[str, object]
    ) -> None:
        """An agent function reported the tokens of one call to ``model``."""


class TurnTracer(Protocol):
    """Opens a span around each piece of a task's work (``mail.telemetry``): every block
    it returns runs the work inside it, so what the work calls (a model, an action, a
    peer) is that span's child."""

    def agent_turn(self, task: MAILTask, agent: str) -> AbstractContextManager[object]:
        """Around the runtime's handling of one agent turn (model call, tool calls)."""

    def model_call(
        self, task: MAILTask, agent: str, call: ModelCall
    ) -> AbstractContextManager[object]:
        """Around one model call; ``call`` is filled in by the time the block ends."""

    def action(self, task: MAILTask, agent: str, call: ActionRun) -> AbstractContextManager[object]:
        """Around one action call; ``call.status`` is set by the time the block ends."""

    def hop(
        self, task: MAILTask, kind: str, peer: str, operation: str
    ) -> AbstractContextManager[dict[str, str]]:
        """Around one call to another server (``kind`` ``interswarm`` or ``a2a``); the
        block gets the headers that carry the trace to it."""

    def headers(self) -> dict[str, str]:
        """The headers that carry the current span's trace (``traceparent``)."""

    def turn_failed(self, reason: str) -> None:
        """The agent turn under way failed (its agent function raised): ``reason``."""


@dataclass(slots=True)
class ModelCall:
    """What a model call told, for a tracer: filled in by the agent function."""

    model: str | None
    #: the provider as the GenAI conventions name it (``openai``, ``anthropic``...)
    system: str | None = None
    usage: Mapping[str, object] | None = None
    finish_reasons: list[str] = field(default_factory=list)
    #: the request's messages and the answer (kept only when a tracer records content)
    messages: list[dict[str, Any]] | None = None
    output: Any = None


@dataclass(slots=True)
class ActionRun:
    """One action call, for a tracer: ``status`` (``success`` or ``error``) once it ran."""

    name: str
    call_id: str
    status: str | None = None


class ListenerTee:
    """A task listener that tells ``inner`` (the store recorder, or none) first, then each
    of ``observers`` of every log that got events. An observer must be cheap (it runs on
    every append) and is not allowed to break the task: what it raises is logged."""

    def __init__(self, inner: TaskListener | None) -> None:
        self.inner = inner
        self.observers: list[Callable[[EventLog], None]] = []
        #: told of every change of a task's record (its state among them)
        self.task_observers: list[Callable[[MAILTask], None]] = []
        #: told of agent turns and model calls (see :func:`mail.core._live.live_turn`)
        self.turn_observers: list[TurnObserver] = []
        #: opens spans around agent turns, model calls, actions and hops (``None``: off)
        self.tracer: TurnTracer | None = None

    def task_changed(self, task: MAILTask) -> None:
        if self.inner is not None:
            self.inner.task_changed(task)
        for observer in self.task_observers:
            try:
                observer(task)
            except Exception:
                logger.exception("a task observer of task %s failed", task.task_id)

    def events_added(self, log: EventLog) -> None:
        if self.inner is not None:
            self.inner.events_added(log)
        for observer in self.observers:
            try:
                observer(log)
            except Exception:
                logger.exception("an event observer of task %s failed", log.task_id)


class TaskTable:
    """The tasks of one runtime, with bounded retention of finished ones.

    Running and paused tasks are always kept. Finished tasks beyond ``max_finished`` or
    older than ``max_age`` seconds leave memory (the store, when configured, keeps them),
    and ``on_evict`` is called with each. The tasks of the table report their changes to
    ``listener`` (the runtime's store recorder, if any).
    """

    def __init__(
        self,
        *,
        max_finished: int = 1000,
        max_age: float = 3600.0,
        listener: TaskListener | None = None,
        on_evict: Callable[[MAILTask], None] | None = None,
    ) -> None:
        self.max_finished = max_finished
        self.max_age = max_age
        self.listener = listener
        self.on_evict = on_evict
        self._tasks: dict[str, MAILTask] = {}
        self._finished: OrderedDict[str, float] = OrderedDict()
        #: cluster mode: followers of a task's log see only the events the store committed
        self.gated = False

    def observe(self, observer: Callable[[EventLog], None]) -> None:
        """Call ``observer(log)`` each time a task's log gets a stored event, from now on,
        after the listener is told. ``observer`` runs on every append: it must be cheap,
        and what it raises is logged, never raised."""
        self._tee().observers.append(observer)

    def observe_tasks(self, observer: Callable[[MAILTask], None]) -> None:
        """Call ``observer(task)`` each time a task's record changes (created, a turn
        opened or closed, cancelled, restored as interrupted), from now on, after the
        listener is told; cheap and never raising, as :meth:`observe`."""
        self._tee().task_observers.append(observer)

    def observe_turns(self, observer: TurnObserver) -> None:
        """Tell ``observer`` of every agent turn and reported model call of the tasks,
        from now on; cheap and never raising, as :meth:`observe`."""
        self._tee().turn_observers.append(observer)

    def trace_turns(self, tracer: TurnTracer) -> None:
        """Let ``tracer`` open spans around the tasks' agent turns, model calls, actions
        and calls to other servers, from now on (one tracer per table)."""
        self._tee().tracer = tracer

    def _tee(self) -> ListenerTee:
        tee = (
            self.listener if isinstance(self.listener, ListenerTee) else ListenerTee(self.listener)
        )
        self.listener = tee
        for task in self:
            task.listener = tee
            task.log.listener = tee
        return tee

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._tasks

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[MAILTask]:
        return iter(list(self._tasks.values()))

    def get(self, task_id: str) -> MAILTask | None:
        return self._tasks.get(task_id)

    def create(self, task_id: str, owner: str, contributors: list[str]) -> MAILTask:
        """Create and keep a running task (its listener is told)."""
        now = datetime.now(UTC)
        task = MAILTask(
            task_id=task_id,
            task_owner=owner,
            task_contributors=contributors,
            start_time=now,
            updated_at=now,
            listener=self.listener,
        )
        return self.add(task)

    def add(self, task: MAILTask, *, notify: bool = True) -> MAILTask:
        """Keep ``task``; with ``notify`` its listener is told (not for a task loaded back
        from the store)."""
        self._tasks[task.task_id] = task
        if self.gated and task.log.committed_seq is None:
            task.log.committed_seq = task.log.stored_seq
        if notify:
            task.changed()
        return task

    def mark_active(self, task_id: str) -> None:
        """The task runs again: it no longer counts as finished."""
        self._finished.pop(task_id, None)

    def mark_finished(self, task: MAILTask) -> None:
        """Record that ``task`` finished, evicting finished tasks beyond the limits."""
        if task.state is TaskState.WAITING_BREAKPOINT:
            return
        self._finished[task.task_id] = task.finished_at or time.monotonic()
        self._finished.move_to_end(task.task_id)
        for evicted in self._evict():
            if self.on_evict is not None:
                self.on_evict(evicted)

    def _evict(self) -> list[MAILTask]:
        evicted: list[MAILTask] = []
        horizon = time.monotonic() - self.max_age
        while self._finished:
            task_id, finished_at = next(iter(self._finished.items()))
            if len(self._finished) <= self.max_finished and finished_at >= horizon:
                break
            del self._finished[task_id]
            task = self._tasks.get(task_id)
            if (
                task is not None
                and task.completed
                and task.state is not TaskState.WAITING_BREAKPOINT
            ):
                del self._tasks[task_id]
                evicted.append(task)
        return evicted

    def remove(self, task_id: str) -> MAILTask | None:
        self._finished.pop(task_id, None)
        return self._tasks.pop(task_id, None)
