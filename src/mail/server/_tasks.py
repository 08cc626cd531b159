"""What routes do with tasks, the same on one server and across replicas: the
:class:`~mail.server._task_service.TaskService`, and :class:`Tasks`, the part its two
implementations share.

A route parses its request, calls the service and maps what it raises (a
:class:`~mail.errors.MAILError`, through the app's one exception handler) to HTTP; no
route asks which mode runs. The service is chosen once, when the state is built
(:func:`mail.server._cluster_setup.task_service`):

* :class:`~mail.server._local_tasks.LocalTasks`, one server: every task runs in
  this server's per-caller runtimes;
* :class:`~mail.server._cluster_tasks.ClusterTasks`, replicas: a task runs on the replica
  holding its lease; the others hand requests to it and follow its events through the
  store and Redis.

Both start and continue turns through :class:`Tasks` here: a repeated request is answered
as the first one was (:mod:`mail.server._repeats`), else the turn runs here (a JSON answer
once it ended and is stored, or a ``Stream``) unless the mode says it runs elsewhere
(:meth:`Tasks._claim`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from mail.core.tasks import MAILTask, turn_status
from mail.errors import TaskStateError
from mail.server._follow import follow_local
from mail.server._repeats import repeats
from mail.server._shutdown import shutting_down_detail, unless_closing
from mail.server._sse import sse_object
from mail.server._task_service import Answer, Stream, Turn, TurnCutShortError

if TYPE_CHECKING:
    from mail.api import MAILSwarm
    from mail.core.events import MAILEvent
    from mail.core.message import MAILMessage
    from mail.server._state import ServerState
    from mail.server.auth import Caller

__all__ = ["Tasks"]


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
        events = [sse_object(e) for e in log] if log is not None else None
        return _answer_json(task_id, final["message"]["body"], events, task)

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
        body = response["message"]["body"] if response is not None else ""
        events = [sse_object(e) for e in task.log.all()] if turn.show_events else None
        return _answer_json(task.task_id, body, events, task)

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


def _answer_json(
    task_id: str, response: str, events: list[dict[str, Any]] | None, task: MAILTask | None
) -> dict[str, Any]:
    """A turn's JSON answer, with the task's token ``usage`` when models reported any (as
    the closing event of its stream)."""
    answer: dict[str, Any] = {
        "response": response,
        "events": events,
        "task_id": task_id,
        "status": turn_status(task) if task is not None else "completed",
    }
    if task is not None and task.usage is not None:
        answer["usage"] = dict(task.usage)
    if task is not None and task.budget is not None:
        answer["budget"] = task.budget.view()
    return answer
