"""v1.3.6's methods and attributes of ``MAILRuntime``, as a base class of
:class:`mail.core.runtime.MAILRuntime`.

Thin views over our task table: ``mail_tasks``, ``events`` and ``response_messages`` are
fresh dicts built from it on each read (not live containers v1.3.6 code could mutate);
the interswarm start/stop methods drive the router the runtime was given, if it has them.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mail.core.events import MAILEvent
    from mail.core.message import MAILMessage
    from mail.core.tasks import MAILTask, TaskTable

__all__ = ["AGENT_HISTORY_KEY", "V136RuntimeMethods"]

#: How v1.3.6 keys an agent's history in ``agent_histories``: ``"{task_id}::{agent}"``.
AGENT_HISTORY_KEY = "{task_id}::{agent_name}"


class V136RuntimeMethods:
    """The names v1.3.6 users reach on a runtime beyond the seeds' core methods."""

    #: made when ``response_queue`` is first read (until then no turn is watched)
    _response_queue: asyncio.Queue[MAILMessage] | None = None

    if TYPE_CHECKING:
        tasks: TaskTable
        router: Any

        async def restore(self) -> int: ...

    @property
    def mail_tasks(self) -> dict[str, MAILTask]:
        """Task id -> task, for the tasks held in memory (a snapshot)."""
        return {task.task_id: task for task in self.tasks}

    @property
    def events(self) -> dict[str, list[MAILEvent]]:
        """Task id -> the task's stored events (a snapshot)."""
        return {task.task_id: task.log.all() for task in self.tasks}

    @property
    def response_messages(self) -> dict[str, MAILMessage]:
        """Task id -> the message that ended the task's last turn (finished turns only)."""
        return {t.task_id: t.response for t in self.tasks if t.response is not None}

    @property
    def response_queue(self) -> asyncio.Queue[MAILMessage]:
        """A queue that receives the message ending each turn, from the first read on.

        Differs from v1.3.6, where the runtime waited on this queue itself: ours only
        feeds it, so a reader may drain it freely.
        """
        if self._response_queue is None:
            self._response_queue = asyncio.Queue()
        return self._response_queue

    def _watch_turn(self, task: MAILTask) -> None:
        """Feed :attr:`response_queue` with the message ending the task's current turn."""
        turn = task.turn
        if turn is None or self._response_queue is None:
            return
        queue = self._response_queue

        def ended(future: asyncio.Future[MAILMessage]) -> None:
            if not future.cancelled() and future.exception() is None:
                queue.put_nowait(future.result())

        turn.add_done_callback(ended)

    def get_events_by_task_id(self, task_id: str) -> list[MAILEvent]:
        """The task's stored events, ``[]`` for an unknown task (v1.3.6 behaviour)."""
        task = self.tasks.get(task_id)
        return task.log.all() if task is not None else []

    @property
    def pending_requests(self) -> dict[str, asyncio.Future[MAILMessage]]:
        """Task id -> the future of its running turn."""
        return {t.task_id: t.turn for t in self.tasks if t.is_running and t.turn is not None}

    def get_response_message(self, task_id: str) -> MAILMessage | None:
        """The message that ended the task's last turn (``None``: unknown task or none yet)."""
        task = self.tasks.get(task_id)
        return task.response if task is not None else None

    def get_task_by_id(self, task_id: str) -> MAILTask | None:
        """The task ``task_id``, or ``None``."""
        return self.tasks.get(task_id)

    async def start_interswarm(self) -> None:
        """Start the router's background work, when the runtime has a router that has any."""
        await _call(self.router, "start")

    async def stop_interswarm(self) -> None:
        """Stop the router (it finishes deliveries in flight); no-op without a router."""
        await _call(self.router, "stop")

    async def is_interswarm_running(self) -> bool:
        """True when the runtime has a router and it is running."""
        if self.router is None:
            return False
        running = getattr(self.router, "is_running", None)
        if running is None:
            return True
        result = running()
        return bool(await result) if inspect.isawaitable(result) else bool(result)

    async def load_tasks_from_db(self) -> None:
        """Load the stored tasks (our :meth:`restore`; histories come with them)."""
        await self.restore()

    async def load_agent_histories_from_db(self) -> None:
        """No-op: :meth:`load_tasks_from_db` already loads the agents' histories."""


async def _call(target: object, name: str) -> None:
    method = getattr(target, name, None)
    if method is not None:
        result = method()
        if inspect.isawaitable(result):
            await result
