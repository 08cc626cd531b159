"""One server's :class:`~mail.server._tasks.TaskService`: every task runs in this server's
per-caller runtimes, which load the caller's stored tasks when they start."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from mail.errors import StorageError, TaskNotFoundError
from mail.server._follow import follow_local
from mail.server._interswarm_here import back_here, forward_here
from mail.server._task_service import Turn
from mail.server._tasks import Tasks

if TYPE_CHECKING:
    from mail.api import MAILSwarm
    from mail.core import Direction
    from mail.core.events import MAILEvent
    from mail.core.message import MAILInterswarmMessage
    from mail.core.runtime import MAILRuntime
    from mail.core.tasks import MAILTask
    from mail.db.store import CallerKey
    from mail.server.auth import Caller

__all__ = ["LocalTasks"]


class LocalTasks(Tasks):
    """The tasks of one server (see the module)."""

    async def attach(self, runtime: MAILRuntime, key: CallerKey) -> int:
        return await runtime.restore()

    async def task(self, caller: Caller, task_id: str) -> MAILTask:
        return (await self._here(caller, task_id))[1]

    async def _here(self, caller: Caller, task_id: str) -> tuple[MAILSwarm, MAILTask]:
        # Another caller's task is reported exactly like an unknown one.
        swarm = await self.state.swarms.resolve(caller)
        task = swarm.get_task_by_id(task_id) if swarm is not None else None
        if swarm is None or task is None:
            raise TaskNotFoundError(task_id)
        if not task.is_running and self.state.store is not None:
            # not while the store fails: the answer says it is not stored instead
            await swarm.runtime.settled(task_id, self.state.wait_bound())
        return swarm, task

    async def tasks(self, caller: Caller) -> list[MAILTask]:
        swarm = await self.state.swarms.resolve(caller)
        if swarm is None:
            return []
        await swarm.runtime.persisted(self.state.wait_bound())  # what is not stored says so
        return list(swarm.runtime.tasks)

    async def events(self, caller: Caller, task_id: str, after: int) -> AsyncIterator[MAILEvent]:
        swarm, task = await self._here(caller, task_id)
        return follow_local(swarm, task, after, self.state.ping_interval, lambda: False)

    async def cancel(self, caller: Caller, task_id: str) -> None:
        swarm, _ = await self._here(caller, task_id)
        task = await swarm.runtime.cancel_task(task_id)
        await swarm.runtime.told(task)  # the cancellation is stored before it is told

    async def interswarm(
        self, caller: Caller, message: MAILInterswarmMessage, direction: Direction
    ) -> dict[str, Any]:
        here = forward_here if direction == "forward" else back_here
        return await here(self.state, caller, message)

    def health(self) -> dict[str, Any]:
        return {}

    async def stopped(self) -> None:
        return None

    async def _repeated(
        self, caller: Caller, swarm: MAILSwarm, turn: Turn
    ) -> tuple[MAILTask, bool] | None:
        """A task kept only in the store (it left memory) is loaded to tell."""
        task = swarm.get_task_by_id(turn.task_id)
        if task is None and self.state.store is not None:
            await self._restore(swarm, turn.task_id)
            task = swarm.get_task_by_id(turn.task_id)
        return self._if_repeats(task, True, turn)

    async def _restore(self, swarm: MAILSwarm, task_id: str) -> None:
        """Load ``task_id`` as the store has it (nothing when it is not there); a store that
        does not answer within ``commit_timeout`` is a 503 (it cannot tell whether the id
        is taken)."""
        bound = self.state.config.database.commit_timeout
        try:
            async with asyncio.timeout(bound):
                await swarm.runtime.restore(only=[task_id])
        except TimeoutError:
            raise StorageError(
                f"the task store did not answer within {bound:g} s: cannot tell whether "
                f"task '{task_id}' exists; try again",
                retry_after=bound,
            ) from None
