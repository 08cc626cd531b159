"""The MAIL runtime: delivers messages between the agents of one swarm for one caller.

Message flow::

    submit(message) ──▶ priority queue ──▶ scheduler loop ──▶ route ──▶ agent turn
                             ▲                                               │
                             └──── messages made from the agent's tool calls ┘

* **Priorities** (lower runs first): admin 0, system 1, user 2, agent interrupt and
  broadcast_complete 3, agent broadcast 4, agent request/response 5; ties run in
  submission order. Priority orders *dispatch*: an agent's turns in a task run in an
  asyncio task of their own (``agent:{task_id}:{agent}``), so a slow agent never blocks
  the others.
* **One turn at a time per agent and task**: a message for an agent that is mid-turn in
  the same task waits for that turn to end (in order of priority, so an interrupt goes
  first), so the agent's history stays consistent.
* **Turns of a task**: each submission opens a turn that ends exactly once (an answer, a
  breakpoint pause, a failure), awaited (``submit_and_wait``) or streamed (``submit_and_stream``).
* **Events** of each task go to its append-only :class:`~mail.core.events.EventLog`.
* **Other swarms**: a recipient ``agent@other-swarm`` is handed to the router
  (:class:`RemoteRouter`, e.g. ``mail.net.InterswarmRouter``), whose failures come back as
  ``::agent_error::`` messages to the sender; messages from other swarms enter through
  :meth:`MAILRuntime.receive_interswarm` (checks, task ownership, deduplication and
  completion notices live in :mod:`mail.core._remote`).

The facade keeps the public methods; the work lives in collaborators that receive what
they use (the task table, the queue, callbacks for the few runtime actions they need):
:mod:`mail.core._scheduler` (queue, loop, routing, delivery), :mod:`mail.core._dispatch`
(agent turns and one handler per MAIL tool), :mod:`mail.core._remote` (messages from
other swarms), :mod:`mail.core._breakpoints` (resuming paused tasks),
:mod:`mail.core._recorder` (the store) and :mod:`mail.core._system_messages` (what the
runtime itself says).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
from collections.abc import AsyncIterator, Callable, Collection, Iterable
from dataclasses import replace
from typing import Any, Literal, Protocol

from mail._text import find_bad_text, text_problem
from mail.core._breakpoints import resume_breakpoints
from mail.core._budget_keeper import BudgetKeeper
from mail.core._dispatch import SwarmDirectory, TurnRunner
from mail.core._manual import ManualSteps
from mail.core._recorder import COMMITTED, Settled, StoreRecorder, restore
from mail.core._remote import Direction, RemoteLedger
from mail.core._runtime_compat import AGENT_HISTORY_KEY, V136RuntimeMethods
from mail.core._scheduler import Scheduler
from mail.core._system_messages import CANCELLED_BODY, SystemMessages
from mail.core.actions import ActionCore, ActionOverrideFunction
from mail.core.agents import AgentCore
from mail.core.events import EventLog, EventName, MAILEvent
from mail.core.message import MAILInterswarmMessage, MAILMessage, format_task_contributor
from mail.core.tasks import (
    MAILTask,
    TaskState,
    TaskTable,
    TurnRequest,
    closing_event,
    short_title,
)
from mail.db.store import CallerKey, TaskStore
from mail.errors import (
    InvalidMessageError,
    TaskNotFoundError,
    TaskNotStoredError,
    TaskStateError,
)

__all__ = ["AGENT_HISTORY_KEY", "MAILRuntime", "RemoteRouter", "ResumeFrom"]

logger = logging.getLogger("mail.runtime")

ResumeFrom = Literal["user_response", "breakpoint_tool_call"]
_CANCELLABLE = frozenset({TaskState.RUNNING, TaskState.WAITING_BREAKPOINT})


def _check_step_limit(kwargs: dict[str, Any]) -> None:
    value = kwargs.get("max_steps")
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise InvalidMessageError("must be a positive integer or null", field="kwargs.max_steps")


def _check_text(message: MAILMessage, kwargs: dict[str, Any]) -> None:
    """Refuse a message or arguments holding text no store keeps (lone surrogates, NUL)."""
    payload = message["message"]
    for name in ("subject", "body"):
        value = payload.get(name)
        problem = text_problem(value) if isinstance(value, str) else None
        if problem is not None:
            raise InvalidMessageError(problem, field=name)
    found = find_bad_text(kwargs, "kwargs")
    if found is not None:
        raise InvalidMessageError(found[1], field=found[0])


class RemoteRouter(Protocol):
    """What the runtime needs from an interswarm router (``mail.net.InterswarmRouter``)."""

    def send(
        self, runtime: MAILRuntime, task: MAILTask, message: MAILMessage, targets: list[str]
    ) -> None:
        """Deliver ``message`` to the remote ``targets`` (``agent@swarm``) in the background.

        Failures must come back to the runtime (``runtime.remote.delivery_failed``).
        """

    def notify_completion(
        self,
        runtime: MAILRuntime,
        task: MAILTask,
        agent: str,
        body: str,
        swarms: Collection[str],
    ) -> None:
        """Tell ``swarms`` (remote swarms of the task) that it completed here, in the background."""

    def sending(self, task_id: str) -> bool:
        """Whether deliveries of ``task_id`` are under way in the background."""

    async def sent(self, task_id: str) -> None:
        """Wait until the deliveries of ``task_id`` under way have ended."""

    def known_swarms(self) -> list[str]:
        """Names of the active remote swarms messages can be sent to."""

    async def discover_swarms(self, discovery_urls: list[str]) -> list[str]:
        """Register the swarms listed by each URL's ``GET /swarms``; returns the names added."""


class MAILRuntime(V136RuntimeMethods):
    """Runs one swarm's agents for one caller.

    Args:
        agents: agent name -> :class:`AgentCore`.
        actions: action name -> :class:`ActionCore`.
        user_id, user_role: the caller this runtime serves (``role`` admin, user or swarm).
        swarm_name: the local swarm's name.
        entrypoint: the agent that receives user messages by default.
        breakpoint_tools: tool names that pause the task for the caller to answer.
        exclude_tools: MAIL tools no agent of this swarm may use.
        router: the interswarm router (``None``: remote addresses are refused).
        max_finished_tasks, finished_task_ttl: in-memory retention of finished tasks.
        store: where tasks are kept beyond the process (``None``: memory only), under the
            key of this swarm and caller; see :mod:`mail.core._recorder`. Writes are
            batched in the background and every answer waits for its task to be stored;
            call :meth:`restore` to load the stored tasks and :meth:`shutdown` to write
            the rest.
    """

    def __init__(  # noqa: PLR0917  # the seeds' positional signature
        self,
        agents: dict[str, AgentCore],
        actions: dict[str, ActionCore],
        user_id: str,
        user_role: str = "user",
        swarm_name: str = "example",
        entrypoint: str = "supervisor",
        swarm_registry: object | None = None,
        enable_interswarm: bool = False,
        breakpoint_tools: Iterable[str] | None = None,
        exclude_tools: Iterable[str] | None = None,
        enable_db_agent_histories: bool = False,
        print_llm_streams: bool = True,
        *,
        router: RemoteRouter | None = None,
        max_finished_tasks: int = 1000,
        finished_task_ttl: float = 3600.0,
        store: TaskStore | None = None,
    ) -> None:
        self.agents = agents
        self.actions = actions
        self.user_id = user_id
        self.user_role = user_role
        self.swarm_name = swarm_name
        self.entrypoint = entrypoint
        self.swarm_registry = swarm_registry
        self.enable_interswarm = enable_interswarm
        self.breakpoint_tools = frozenset(breakpoint_tools or ())
        self.exclude_tools = frozenset(exclude_tools or ())
        self.enable_db_agent_histories = enable_db_agent_histories
        self.print_llm_streams = print_llm_streams
        self.router = router
        self.this_owner = format_task_contributor(user_role, user_id, swarm_name)
        self.system = SystemMessages(swarm_name)
        self.agent_histories: dict[str, list[dict[str, Any]]] = {}
        self.store = store
        self.store_key = CallerKey(swarm=swarm_name, role=user_role, id=user_id)
        self.recorder: StoreRecorder | None = None
        if store is not None:
            self.recorder = StoreRecorder(
                store,
                self.store_key,
                histories=self.agent_histories,
                tool_formats={n: getattr(a, "tool_format", "responses") for n, a in agents.items()},
                store_histories=enable_db_agent_histories,
            )
            self.recorder.on_refused = self._set_aside
        self.tasks = TaskTable(
            max_finished=max_finished_tasks,
            max_age=finished_task_ttl,
            listener=self.recorder,
            on_evict=self.forget,
        )
        self.runtime_log = EventLog("*")
        self.stopping = False
        #: cluster mode: shutdown leaves running tasks running, for another replica to take
        self.hand_over = False
        self.scheduler = Scheduler(
            tasks=self.tasks,
            agents=agents,
            swarm_name=swarm_name,
            user_id=user_id,
            entrypoint=entrypoint,
            system=self.system,
            log=self.runtime_log,
            run_turn=self._run_turn,
            send_remote=self.send_remote,
        )
        #: the budgets of the tasks: ``budgets.ceiling`` (the swarm's), ``budgets.pricer``
        self.budgets = BudgetKeeper(tasks=self.tasks, scheduler=self.scheduler, system=self.system)
        self.turns = TurnRunner(
            budgets=self.budgets,
            agents=agents,
            actions=actions,
            histories=self.agent_histories,
            swarm_name=swarm_name,
            system=self.system,
            scheduler=self.scheduler,
            breakpoint_tools=self.breakpoint_tools,
            exclude_tools=self.exclude_tools,
            interswarm=self._directory,
            notify_completion=self.notify_remote_completion,
        )
        #: work with other swarms: the router and the interswarm routes report to it
        #: (``delivery_failed``, ``spoke_to``, ``await_reply``, ``swarm_lost``, ``end_task``)
        self.remote = RemoteLedger(
            swarm_name=swarm_name,
            agents=agents,
            user_id=user_id,
            owner=self.this_owner,
            entrypoint=entrypoint,
            tasks=self.tasks,
            scheduler=self.scheduler,
            system=self.system,
            open_task=self._open_task,
            notify_completion=self.notify_remote_completion,
            carried_budget=self.budgets.carried,
        )
        self.manual = ManualSteps(self.tasks, agents, self.scheduler, self.system)
        self._loop_task: asyncio.Task[None] | None = None
        #: seconds an answer waits for its task to be committed (``[database]
        #: commit_timeout``) before it is held back (:class:`TaskNotStoredError`)
        self.commit_timeout = 5.0
        # the requests about to open a turn of a task (:meth:`expect`), by task id
        self._expected: dict[str, TurnRequest] = {}

    def observe_events(self, observer: Callable[[EventLog], None]) -> None:
        """Call ``observer(log)`` each time a task's log gets a stored event, from now on
        (:meth:`TaskTable.observe`; MAP Mail's interception)."""
        self.tasks.observe(observer)

    async def restore(self, only: Collection[str] | None = None) -> int:
        """Load the stored tasks (none without a store); returns how many were loaded.

        Tasks that were running when the process stopped come back ``interrupted``;
        with ``only``, just those tasks load, running ones as they were (fail-over).
        """
        if self.store is None:
            return 0
        loaded = await restore(
            self.store,
            self.store_key,
            tasks=self.tasks,
            histories=self.agent_histories,
            system=self.system,
            next_seq=self.scheduler.next_seq,
            only=only,
        )
        self.budgets.adopt(self.tasks)  # tasks loaded back count on against their budgets
        return loaded

    async def persisted(self, within: float | None = None) -> bool:
        """Wait until everything that happened so far is in the store (at once without
        one), at most ``within`` seconds; whether it is. Answers wait for this: what a
        caller is told is durable."""
        if self.recorder is None:
            return True
        try:
            async with asyncio.timeout(within):
                await self.recorder.persisted()
        except TimeoutError:
            return False
        return self.recorder.backlog == 0

    async def settled(self, task_id: str, within: float) -> Settled:
        """Wait, at most ``within`` seconds, until ``task_id`` as it is now is committed
        (:meth:`StoreRecorder.settled`); committed at once without a store."""
        if self.recorder is None:
            return COMMITTED
        return await self.recorder.settled(task_id, within)

    def _set_aside(self, task_id: str, reason: str) -> None:
        """The store refused the task's rows: it ends ``failed`` (its agents stopped, a
        ``task_error`` event saying why), kept in memory as it is; only its record is
        written."""
        task = self.tasks.get(task_id)
        if task is None:
            return
        text = f"this task could not be stored, so it was stopped: {reason}"
        message = self.system.task_error(task_id, text)
        task.log.emit(EventName.TASK_ERROR, text)
        if task.is_running:
            spawner = self.scheduler.spawner
            spawner.spawn(spawner.cancel_group(f"agent:{task_id}"), f"set-aside:{task_id}")
            self.scheduler.finish(task, TaskState.FAILED, message)
            return
        task.pending_breakpoints.clear()
        task.stash.clear()
        task.close_turn(TaskState.FAILED, message)
        task.changed()
        self.tasks.mark_finished(task)

    @property
    def storage_error(self) -> str | None:
        """Why the last write to the store failed, ``None`` when it works."""
        return self.recorder.error if self.recorder is not None else None

    @property
    def unsaved_tasks(self) -> int:
        """How many tasks have changes the store has not got yet (0 without a store)."""
        return self.recorder.backlog if self.recorder is not None else 0

    @property
    def queued_messages(self) -> int:
        """How many messages wait in the queue to be routed."""
        return len(self.scheduler)

    # --- submission ----------------------------------------------------------------------

    async def submit(
        self, message: MAILMessage, resume_from: ResumeFrom | None = None, **kwargs: Any
    ) -> MAILTask:
        """Queue ``message`` (opening or resuming its task) without waiting.

        Raises :class:`TaskNotFoundError`, :class:`TaskStateError` or
        :class:`InvalidMessageError` when the request cannot apply to the task.
        """
        return self._begin(message, resume_from, kwargs)

    async def submit_and_wait(
        self,
        message: MAILMessage,
        timeout: float | None = 3600.0,
        resume_from: ResumeFrom | None = None,
        **kwargs: Any,
    ) -> MAILMessage:
        """Submit ``message`` and return the message that ends this turn of its task, once
        the task is committed to the store (when there is one).

        On timeout the task fails and a ``::task_timeout::`` message is returned. Raises
        like :meth:`submit` before anything is queued; afterwards
        :class:`TaskNotStoredError` when the store could not commit the task within
        :attr:`commit_timeout` (the task is stored later, when the store works again).
        A task whose rows the store refused has ended ``failed``: its error is returned.
        """
        task = self._begin(message, resume_from, kwargs)
        try:
            async with asyncio.timeout(timeout):
                final = await task.wait_turn()  # a private future: the turn is untouched
        except TimeoutError:
            task.log.emit(EventName.TASK_ERROR, f"timeout for task '{task.task_id}'")
            self.scheduler.finish(task, TaskState.FAILED, self.system.task_timeout(task.task_id))
            final = task.wait_turn().result()
        await self.told(task)
        if self.recorder is not None and self.recorder.refused(task.task_id) is not None:
            return task.response or final  # it ended failed
        return final

    async def told(self, task: MAILTask) -> None:
        """Wait until ``task`` as it is now may be told to a caller: committed, or set
        aside by the store (it is ``failed`` then). Raises like :meth:`submit_and_wait`."""
        self._check_settled(task, await self.settled(task.task_id, self.commit_timeout))

    def _check_settled(self, task: MAILTask, settled: Settled) -> None:
        """Raise unless ``task`` may be told: :class:`TaskNotStoredError` (pending) or
        :class:`TaskStateError` (cluster mode: another replica runs it now)."""
        if settled.state == "pending":
            retry = max(1.0, float(math.ceil(self.commit_timeout)))
            raise TaskNotStoredError(task.task_id, settled.reason or "", retry_after=retry)
        if settled.state == "moved":
            raise TaskStateError(f"task '{task.task_id}' moved to another replica; follow it there")

    async def submit_and_stream(
        self,
        message: MAILMessage,
        timeout: float | None = None,
        resume_from: ResumeFrom | None = None,
        *,
        ping_interval: float = 15.0,
        **kwargs: Any,
    ) -> AsyncIterator[MAILEvent]:
        """Submit ``message`` and return an iterator over this turn's events.

        The iterator yields the task's stored events as they happen (a ``ping`` after
        ``ping_interval`` seconds of silence), then a final ``task_complete`` (or
        ``task_error`` when the task failed) whose ``response`` is the answer. Raises
        like :meth:`submit` before anything is queued, so errors are not a broken stream.
        """
        existing = self.tasks.get(message["message"]["task_id"])
        start = existing.log.last_seq if existing is not None else 0
        task = self._begin(message, resume_from, kwargs)
        assert task.turn is not None  # noqa: S101  # _begin always opens a turn
        return self._stream(task, task.turn, start, ping_interval)

    async def _stream(
        self, task: MAILTask, turn: asyncio.Future[MAILMessage], cursor: int, ping_interval: float
    ) -> AsyncIterator[MAILEvent]:
        follow = task.log.follow(
            cursor, heartbeat=ping_interval, until=turn.done, stored_ends=False
        )
        async for event in follow:
            cursor = event.seq or cursor
            yield event
        async for event in self.turn_end(task, cursor, turn.result()):
            yield event

    async def turn_end(
        self, task: MAILTask, cursor: int, final: MAILMessage | None = None
    ) -> AsyncIterator[MAILEvent]:
        """How a stream that followed ``task`` up to ``cursor`` ends, once its turn ended:
        the events logged since (``storage_error``, the ``task_error`` of a task the
        store refused), then the closing ``task_complete``/``task_error`` once the task
        is committed; if it is not within :attr:`commit_timeout`, a ``storage_error``
        event without a sequence number says so instead of the closing event (the client
        asks again later: ``GET /task``, the events with ``Last-Event-ID``). Nothing
        more in cluster mode when another replica runs the task now."""
        settled = await self.settled(task.task_id, self.commit_timeout)
        for event in task.log.since(cursor)[: max(task.log.visible_seq - cursor, 0)]:
            if event.event != EventName.TASK_COMPLETE:  # the closing event ends the turn
                yield event
        if settled.state == "moved":
            return
        if settled.state == "pending":
            retry = max(1, math.ceil(self.commit_timeout))
            reason = settled.reason or "the store has not committed it yet"
            yield MAILEvent(
                EventName.STORAGE_ERROR,
                task.task_id,
                f"the task's turn ended but it is not stored yet ({reason}); its answer is "
                "held back until it is: ask again in a moment",
                {"error": reason, "stored": False, "retry_after": retry},
            )
            return
        answer = task.response if settled.state == "refused" or final is None else final
        yield closing_event(task, answer["message"]["body"] if answer is not None else "")

    def expect(self, task_id: str, request: TurnRequest) -> None:
        """The next submission of ``task_id`` opens its turn for ``request`` (the server's
        account of an HTTP request, kept on the task: :attr:`MAILTask.request`). Call it
        right before submitting."""
        self._expected[task_id] = request

    def _begin(
        self, message: MAILMessage, resume_from: ResumeFrom | None, kwargs: dict[str, Any]
    ) -> MAILTask:
        task_id = message["message"]["task_id"]
        request = self._expected.pop(task_id, None)
        existing = self.tasks.get(task_id)
        start = existing.log.last_seq if existing is not None else 0
        first = existing.request.first if existing and existing.request else None
        task = self._open_turn(message, resume_from, kwargs)
        if request is None:
            task.request = None
        else:
            first = (first or request.fingerprint) if existing else request.fingerprint
            task.request = replace(request, start=start, first=first)
        return task

    def _open_turn(
        self, message: MAILMessage, resume_from: ResumeFrom | None, kwargs: dict[str, Any]
    ) -> MAILTask:
        """Open or resume the message's task and queue the message; checks everything
        before it changes anything."""
        if self.stopping:
            raise TaskStateError("the runtime is shutting down")
        task_id = message["message"]["task_id"]
        task = self.tasks.get(task_id)
        _check_step_limit(kwargs)
        _check_text(message, kwargs)
        asked = self.budgets.check(kwargs.get("budget"))
        refused = self.recorder.refused(task_id) if self.recorder is not None else None
        if refused is not None:
            raise TaskStateError(
                f"task '{task_id}' could not be stored ({refused}), so it cannot go on: "
                "start a new task"
            )
        if resume_from is None:
            if task is not None:
                raise TaskStateError(
                    f"task '{task_id}' already exists; to continue it, send resume_from='user_response'"
                )
            task = self._open_task(task_id, self.this_owner, [self.this_owner])
            task.title = short_title(message["message"]["body"]) or None
        elif resume_from not in ("user_response", "breakpoint_tool_call"):
            raise InvalidMessageError(
                f"must be 'user_response', 'breakpoint_tool_call' or null, got {resume_from!r}",
                field="resume_from",
            )
        elif task is None:
            raise TaskNotFoundError(task_id)
        elif resume_from == "user_response" and task.state is TaskState.WAITING_BREAKPOINT:
            raise TaskStateError(
                f"task '{task_id}' is paused on breakpoint tool calls; "
                "resume it with resume_from='breakpoint_tool_call'"
            )
        if "max_steps" in kwargs:
            task.max_steps, task.max_steps_set = kwargs["max_steps"], True
        self.budgets.open(task, asked)
        if resume_from == "breakpoint_tool_call":
            resume_breakpoints(
                task,
                kwargs,
                scheduler=self.scheduler,
                histories=self.agent_histories,
                system=self.system,
            )
        else:
            if resume_from == "user_response":
                self.scheduler.reopen(task)
            self.scheduler.put(message)
            self.scheduler.route_queued()  # at once: the entrypoint's turn starts next
        self._watch_turn(task)
        return task

    def _open_task(self, task_id: str, owner: str, contributors: list[str]) -> MAILTask:
        """Create a task and open its first turn; refused while shutting down."""
        if self.stopping:
            raise TaskStateError("the runtime is shutting down")
        if task_id in self.tasks:
            raise TaskStateError(f"task '{task_id}' already exists")
        task = self.tasks.create(task_id, owner, contributors)
        task.open_turn()
        return task

    async def wait_for_task(self, task_id: str, timeout: float | None = None) -> MAILMessage:
        """Wait for the current turn of ``task_id`` to end and return its final message.

        Returns at once with the last answer when the task is not running. Raises
        :class:`TaskNotFoundError`, or ``TimeoutError`` after ``timeout`` seconds.
        """
        task = self.tasks.get(task_id)
        if task is None:
            raise TaskNotFoundError(task_id)
        if not task.is_running and task.response is not None:
            return task.response
        async with asyncio.timeout(timeout):
            return await task.wait_turn()

    async def cancel_task(self, task_id: str) -> MAILTask:
        """Cancel a running task, or one paused on breakpoints, and return it.

        The agents' turns in the task are cancelled, its pending breakpoints and waiting
        messages are dropped, its turn ends ``cancelled`` (streams get a final
        ``task_error``) and the remote swarms that took part are sent the
        ``::task_complete::`` notice with :data:`CANCELLED_BODY`, which closes their copy.
        The task can be resumed with ``user_response``, as a failed one. Raises
        :class:`TaskNotFoundError` and :class:`TaskStateError` (already finished).
        """
        task = self.tasks.get(task_id)
        if task is None:
            raise TaskNotFoundError(task_id)
        if task.state not in _CANCELLABLE:
            raise TaskStateError(f"task '{task_id}' is already {task.state}")
        await self.scheduler.spawner.cancel_group(f"agent:{task_id}")
        message = self.system.cancelled(task_id)
        task.log.emit(EventName.TASK_ERROR, f"task '{task_id}' was cancelled by its owner")
        if not self.scheduler.cancel(task, message):
            raise TaskStateError(f"task '{task_id}' is already {task.state}")
        self.notify_remote_completion(task, self.entrypoint, CANCELLED_BODY)
        return task

    # --- running -------------------------------------------------------------------------

    async def run_continuous(
        self,
        max_steps: int | None = None,
        action_override: ActionOverrideFunction | None = None,
        mode: Literal["continuous", "manual"] = "continuous",
    ) -> None:
        """Process messages until :meth:`shutdown`; ``mode="manual"``: :mod:`mail.core._manual`."""
        self.scheduler.max_steps = max_steps
        self.turns.action_override = action_override
        self.scheduler.mode = mode
        try:
            await self.scheduler.run()
        except asyncio.CancelledError:
            self.runtime_log.emit(EventName.RUN_LOOP_CANCELLED, "continuous run loop cancelled")
            raise
        self.runtime_log.emit(EventName.SHUTDOWN_REQUESTED, "shutdown requested")

    def start(
        self, max_steps: int | None = None, action_override: ActionOverrideFunction | None = None
    ) -> asyncio.Task[None]:
        """Run :meth:`run_continuous` (in the current mode) in a task owned by this runtime."""
        if self._loop_task is None or self._loop_task.done():
            # the loop outlives whatever started it (an HTTP request): it runs in a context
            # of its own, not with that request's context variables (its trace's span)
            self._loop_task = asyncio.get_running_loop().create_task(
                self.run_continuous(max_steps, action_override, self.scheduler.mode),
                name=f"mail-runtime:{self.this_owner}",
                context=contextvars.Context(),
            )
        return self._loop_task

    @property
    def is_running(self) -> bool:
        return self.scheduler.running or not (self._loop_task is None or self._loop_task.done())

    async def run_task(
        self,
        task_id: str | None = None,
        action_override: ActionOverrideFunction | None = None,
        resume_from: ResumeFrom | None = None,
        max_steps: int | None = None,
        **kwargs: Any,
    ) -> MAILMessage:
        """Run the loop until the turn of ``task_id`` (or of any running task) ends.

        Messages must have been submitted with :meth:`submit` first. Raises
        :class:`TaskNotFoundError` when there is no such running task.
        """
        task = (
            self.tasks.get(task_id)
            if task_id
            else next((t for t in self.tasks if t.is_running), None)
        )
        if task is None or task.turn is None:
            raise TaskNotFoundError(task_id or "<any running task>")
        owned = not self.is_running
        if owned:
            self.start(max_steps, action_override)
        try:
            return await task.wait_turn()
        finally:
            if owned:
                await self._stop_loop()

    async def shutdown(self, timeout: float = 30.0) -> None:
        """Stop taking work, let running agent turns finish (up to ``timeout`` s), then stop.

        Tasks still running afterwards end as cancelled (unless :attr:`hand_over`).
        """
        if self.stopping:
            return
        self.stopping = True
        self.scheduler.stop()
        if not await self.scheduler.spawner.drain(timeout):
            logger.warning("shutdown: cancelling agent turns still running after %.1fs", timeout)
            await self.scheduler.spawner.cancel_all()
        for task in self.tasks:
            if task.is_running and not self.hand_over:
                task.log.emit(
                    EventName.TASK_ERROR, "the runtime shut down before the task finished"
                )
                self.scheduler.finish(task, TaskState.CANCELLED, self.system.shutdown(task.task_id))
        await self._stop_loop()
        if self.recorder is not None:
            await self.recorder.close()

    async def _stop_loop(self) -> None:
        loop_task, self._loop_task = self._loop_task, None
        if loop_task is None or loop_task.done():
            return
        self.scheduler.stop()
        try:
            await asyncio.wait_for(asyncio.shield(loop_task), 5.0)
        except TimeoutError:
            loop_task.cancel()

    async def _run_turn(
        self, task: MAILTask, agent: str, message: MAILMessage, xml: dict[str, str]
    ) -> None:
        await self.turns.run(task, agent, message, xml)
        if self.recorder is not None:
            self.recorder.turn_ended(task, agent)  # the agent's history changed

    # --- interswarm seams ------------------------------------------------------------------

    def send_remote(
        self, task: MAILTask, message: MAILMessage, targets: list[str], from_local_agent: bool
    ) -> None:
        """Hand a message with remote recipients to the router (or report why not)."""
        sender = message["message"]["sender"]["address"]
        if self.router is None or not self.enable_interswarm:
            reason = f"interswarm messaging is not enabled in swarm {self.swarm_name}; cannot reach {', '.join(targets)}"
            self.remote.delivery_failed(task, sender if from_local_agent else None, reason)
            return
        self.router.send(self, task, message, targets)

    def _directory(self) -> SwarmDirectory | None:
        """The router while interswarm messaging is enabled (for the interswarm tools)."""
        return self.router if self.enable_interswarm else None

    def notify_remote_completion(
        self, task: MAILTask, agent: str, body: str, swarms: Collection[str] | None = None
    ) -> None:
        """Send a ``::task_complete::`` notice to ``swarms``, by default to every remote
        swarm that took part in the task (one we reached, or one that messaged us)."""
        if self.router is None or not self.enable_interswarm:
            return  # checked first: nothing to notify, and no need to look the swarms up
        targets = self.remote.involved(task.task_id) if swarms is None else swarms
        if targets:
            self.router.notify_completion(self, task, agent, body, sorted(targets))

    def receive_interswarm(self, message: MAILInterswarmMessage, direction: Direction) -> MAILTask:
        """Queue a message from another swarm (already checked by ``validate_interswarm_message``).

        ``forward`` may start a task: it then belongs to the message's ``task_owner``, with
        its ``task_contributors`` plus this runtime as contributors. ``back`` (and a
        forward for a task that exists here) continues a task with the same owner,
        from a swarm that took part in it. Only recipients of this swarm
        (``agent@<this swarm>`` or ``all@<this swarm>``) receive the payload; the sender
        becomes the agent ``name@<source swarm>``. A message id seen before is not queued
        again (a retried delivery). A ``::task_complete::`` notice from the swarm that
        forwarded the task here closes this copy of it. A reply addressed to this
        runtime's caller ends the task's turn with that reply.

        Returns the task. Raises :class:`InvalidMessageError` (interswarm not enabled,
        wrong target swarm, no or unknown local recipient), :class:`TaskNotFoundError` (no such task, or not one
        the source swarm took part in) and :class:`TaskStateError` (another owner, or
        shutting down).
        """
        if not self.enable_interswarm:
            raise InvalidMessageError(
                f"swarm {self.swarm_name!r} does not take interswarm messages", field="target_swarm"
            )
        return self.remote.receive(message, direction)

    def open_remote_task(self, task_id: str, swarm: str) -> MAILTask:
        """Open a task in which this runtime's caller messages ``swarm`` directly.

        A reply addressed to the caller ends its turn. Raises :class:`TaskStateError`
        when the task id is taken or the runtime is shutting down.
        """
        task = self._open_task(task_id, self.this_owner, [self.this_owner])
        task.remote_swarms.add(swarm)
        return task

    # --- state -----------------------------------------------------------------------------

    def forget(self, task: MAILTask) -> None:
        """Drop a finished task's histories from memory (it left the task table)."""
        for agent in task.agents:
            self.agent_histories.pop(f"{task.task_id}::{agent}", None)
        self.remote.forget(task.task_id)

    def get_task(self, task_id: str) -> MAILTask | None:
        return self.tasks.get(task_id)

    def get_events(self, task_id: str) -> list[MAILEvent]:
        """All stored events of a task. Raises :class:`TaskNotFoundError`."""
        task = self.tasks.get(task_id)
        if task is None:
            raise TaskNotFoundError(task_id)
        return task.log.all()
