"""What routes do with tasks, the same on one server and across replicas: :class:`TaskService`.

A route parses its request, calls the service and maps what it raises (a
:class:`~mail.errors.MAILError`, through the app's one exception handler) to HTTP; no
route asks which mode runs. The service is chosen once, when the state is built
(:func:`mail.server._cluster_setup.task_service`):

* :class:`LocalTasks` (:mod:`mail.server._local_tasks`), one server: every task runs in
  this server's per-caller runtimes;
* :class:`~mail.server._cluster_tasks.ClusterTasks`, replicas: a task runs on the replica
  holding its lease; the others hand requests to it and follow its events through the
  store and Redis.

Both start and continue turns through :class:`Tasks` here: a repeated request is answered
as the first one was (:mod:`mail.server._repeats`), else the turn runs here (a JSON answer
once it ended and is stored, or a :class:`Stream`) unless the mode says it runs elsewhere
(:meth:`Tasks._claim`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from mail.core.tasks import MAILTask, TurnRequest, turn_status
from mail.errors import MAILError, TaskStateError
from mail.server._follow import follow_local
from mail.server._repeats import repeats
from mail.server._shutdown import shutting_down_detail, unless_closing
from mail.server._sse import sse_object

if TYPE_CHECKING:
    from mail.api import MAILSwarm
    from mail.core._remote import Direction
    from mail.core.events import MAILEvent
    from mail.core.message import MAILInterswarmMessage, MAILMessage
    from mail.core.runtime import MAILRuntime, ResumeFrom
    from mail.db.store import CallerKey
    from mail.server._state import ServerState
    from mail.server.auth import Caller

__all__ = ["Answer", "Stream", "TaskService", "Tasks", "Turn", "TurnCutShortError"]


class TurnCutShortError(MAILError):
    """The server stops while the request waits for its turn (503): the task is stored as
    it is (one server) or goes on on another replica; the message says how to go on."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """A turn to start or continue: a ``POST /message`` as the routes parsed it."""

    task_id: str
    #: the client named the task (its request may repeat an earlier one)
    named: bool
    body: str
    subject: str
    msg_type: str
    entrypoint: str | None
    resume_from: ResumeFrom | None
    kwargs: dict[str, Any]
    timeout: float
    stream: bool
    show_events: bool
    #: what the request asks, digested, with its ``Idempotency-Key``
    asked: TurnRequest

    def as_json(self) -> dict[str, Any]:
        """The turn as a replica hands it to another (:meth:`ClusterTasks.handle
        <mail.server._cluster_tasks.ClusterTasks.handle>` reads it)."""
        return {
            "body": self.body,
            "subject": self.subject,
            "msg_type": self.msg_type,
            "entrypoint": self.entrypoint,
            "task_id": self.task_id,
            "resume_from": self.resume_from,
            "kwargs": self.kwargs,
            "timeout": self.timeout,
            "request": self.asked.as_json(),
        }


@dataclass(slots=True, kw_only=True)
class Stream:
    """A turn's events for a stream. With ``task_id``, ``first`` was fetched already (a
    failure to start is an error, not a broken stream) and the stream ends with a final
    ``task_error`` when the server stops, if ``final_on_stop`` (else it just ends: the
    task goes on on another replica); without, it just follows the task."""

    events: AsyncIterator[MAILEvent]
    first: MAILEvent | None = None
    task_id: str | None = None
    final_on_stop: bool = True


#: What starting or continuing a turn gives: the JSON answer, or a stream of its events.
Answer = dict[str, Any] | Stream


class TaskService(Protocol):
    """What routes do with tasks; each method raises the :class:`~mail.errors.MAILError`
    its route answers (``TaskNotFoundError`` for an unknown task or another caller's,
    ``TaskStateError`` for one in the wrong state, ``StorageError`` while the store
    fails, :class:`TurnCutShortError` when the server stops)."""

    async def attach(self, runtime: MAILRuntime, key: CallerKey) -> int:
        """A new runtime of caller ``key``: wire it, return how many tasks it loaded."""
        ...

    async def send(self, caller: Caller, turn: Turn) -> Answer:
        """Start or continue a turn (a breakpoint's answer too), or answer its repeat."""
        ...

    async def task(self, caller: Caller, task_id: str) -> MAILTask:
        """One task of the caller; a finished one once stored (or ``commit_timeout`` passed)."""
        ...

    async def tasks(self, caller: Caller) -> list[MAILTask]:
        """Every task of the caller; what is shown finished is stored."""
        ...

    async def events(self, caller: Caller, task_id: str, after: int) -> AsyncIterator[MAILEvent]:
        """The task's events after ``after``, then live until its turn ends."""
        ...

    async def cancel(self, caller: Caller, task_id: str) -> None:
        """Cancel a running or paused task; stored before this returns."""
        ...

    async def interswarm(
        self, caller: Caller, message: MAILInterswarmMessage, direction: Direction
    ) -> dict[str, Any]:
        """A peer's ``/interswarm/forward`` or ``back``: queued where its task runs."""
        ...

    def health(self) -> dict[str, Any]:
        """What ``GET /health`` adds (a replica's id and the tasks it runs)."""
        ...

    async def stopped(self) -> None:
        """The runtimes are shut down and their tasks stored."""
        ...


class Tasks:
    """Starting and continuing turns, shared by both services; the mode decides where a
    turn runs (:meth:`_claim`), where a repeated request's task is (:meth:`_repeated`)
    and how a stream of a task that moved ends (:meth:`_stream`)."""

    #: a stream ends with a final ``task_error`` when the server stops (one server)
    final_on_stop = True

    def __init__(self, state: ServerState) -> None:
        self.state = state

    async def send(self, caller: Caller, turn: Turn) -> Answer:
        """See :meth:`TaskService.send`: refused (503) while the store fails, but for a
        repeat, which is no new work."""
        state = self.state
        if not turn.named:  # (a named task: once it is known not to repeat one)
            state.check_store()
        # held: an idle-runtime sweep cannot shut the swarm down under this request
        async with state.swarms.hold(caller) as swarm:
            if turn.named:
                found = await self._repeated(caller, swarm, turn)
                if found is not None:
                    return await self._replay(caller, swarm, found, turn)
                state.check_store()
            message = swarm._user_message(
                turn.body, turn.subject, turn.msg_type, turn.entrypoint, turn.task_id
            )
            elsewhere = await self._claim(caller, swarm, message, turn)
            if elsewhere is not None:
                return elsewhere
            swarm.runtime.expect(turn.task_id, turn.asked)
            if turn.stream:
                events = await swarm.submit_message_stream(
                    message,
                    turn.timeout,
                    turn.resume_from,
                    ping_interval=state.ping_interval,
                    **turn.kwargs,
                )
                return await self._stream(events, turn.task_id, self._moved(swarm, turn.task_id))
            return await self._answer(caller, swarm, message, turn)

    async def _answer(
        self, caller: Caller, swarm: MAILSwarm, message: MAILMessage, turn: Turn
    ) -> Answer:
        """Run the turn here and answer as JSON once it ended and is stored."""
        task_id = turn.task_id
        existing = swarm.get_task_by_id(task_id)
        start = existing.log.last_seq if existing is not None else 0
        try:
            answered, result = await unless_closing(
                swarm.submit_message(
                    message, turn.timeout, turn.show_events, turn.resume_from, **turn.kwargs
                ),
                self.state.closing,
            )
        except TaskStateError as e:
            if swarm.get_task_by_id(task_id) is not None:
                raise
            return await self._lost(caller, task_id, start, turn, e)
        if result is None or not answered:
            raise self._cut_short(task_id)
        final, log = result
        task = swarm.get_task_by_id(task_id)
        return {
            "response": final["message"]["body"],
            "events": [sse_object(e) for e in log] if log is not None else None,
            "task_id": task_id,
            "status": turn_status(task) if task is not None else "completed",
        }

    async def _replay(
        self, caller: Caller, swarm: MAILSwarm, found: tuple[MAILTask, bool], turn: Turn
    ) -> Answer:
        """The answer of the turn a repeated request repeats: a stream of the task's events
        from where that turn started (a new task's from its start), or the JSON answer
        once it ended and is stored."""
        task, here = found
        start = 0 if turn.resume_from is None or task.request is None else task.request.start
        if not here:  # another replica runs it, or nobody: from the store, then live
            return await self._elsewhere(caller, task.task_id, start, turn)
        if turn.stream:
            moved = self._moved(swarm, task.task_id)
            return Stream(events=follow_local(swarm, task, start, self.state.ping_interval, moved))
        if task.is_running:
            async with asyncio.timeout(turn.timeout):
                await task.wait_turn()
        await swarm.runtime.told(task)
        response = task.response
        return {
            "response": response["message"]["body"] if response is not None else "",
            "events": [sse_object(e) for e in task.log.all()] if turn.show_events else None,
            "task_id": task.task_id,
            "status": turn_status(task),
        }

    @staticmethod
    def _if_repeats(task: MAILTask | None, here: bool, turn: Turn) -> tuple[MAILTask, bool] | None:
        if task is None or not repeats(task, turn.resume_from, turn.asked):
            return None
        return task, here

    async def _stream(
        self, events: AsyncIterator[MAILEvent], task_id: str, moved: Callable[[], bool]
    ) -> Stream:
        """The stream of a turn run here (its first event fetched now)."""
        first = await anext(events)
        return Stream(events=events, first=first, task_id=task_id, final_on_stop=self.final_on_stop)

    # --- what the mode decides --------------------------------------------------------------

    async def _repeated(
        self, caller: Caller, swarm: MAILSwarm, turn: Turn
    ) -> tuple[MAILTask, bool] | None:
        """The task whose turn ``turn`` repeats and whether this server runs it (else it
        is the store's copy), or ``None``: a new request."""
        raise NotImplementedError

    async def _claim(
        self, caller: Caller, swarm: MAILSwarm, message: MAILMessage, turn: Turn
    ) -> Answer | None:
        """Before ``message`` is submitted here: ``None`` to run it here, else the answer
        of the server that runs it."""
        return None

    def _moved(self, swarm: MAILSwarm, task_id: str) -> Callable[[], bool]:
        """Whether this server's copy of the task no longer tells how its turn ends."""
        return lambda: False

    async def _elsewhere(self, caller: Caller, task_id: str, start: int, turn: Turn) -> Answer:
        """The answer of a turn run by another server (from ``start``)."""
        raise TaskStateError(f"task '{task_id}' runs elsewhere")

    async def _lost(
        self, caller: Caller, task_id: str, start: int, turn: Turn, error: TaskStateError
    ) -> Answer:
        """The turn stopped here because the task left this server (``error``)."""
        raise error

    def _cut_short(self, task_id: str) -> TurnCutShortError:
        """What a request whose turn the server's stop cut short is told."""
        return TurnCutShortError(shutting_down_detail(task_id))
