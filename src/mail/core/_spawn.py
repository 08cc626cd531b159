"""Owned background tasks: named, tracked, logged, and drained or cancelled on shutdown."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

__all__ = ["Spawner"]

logger = logging.getLogger("mail.runtime")


class Spawner:
    """Keeps a reference to every task it starts until that task ends, and logs (to
    ``log``, by default ``mail.runtime``) the failure of one."""

    __slots__ = ("_log", "_tasks")

    def __init__(self, log: logging.Logger = logger) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._log = log

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            self._log.error("background task %s failed", task.get_name(), exc_info=error)

    async def drain(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for every task; True when all finished."""
        if not self._tasks:
            return True
        _, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
        return not pending

    async def wait_all(self) -> None:
        """Wait for every task running now (not for those they start)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks))

    async def cancel_group(self, group: str) -> None:
        """Cancel the tasks named ``{group}:{name}`` and wait for them to unwind."""
        await self._cancel({t for t in self._tasks if t.get_name().rpartition(":")[0] == group})

    async def cancel_all(self) -> None:
        """Cancel what is still running and wait for it to unwind."""
        await self._cancel(set(self._tasks))

    @staticmethod
    async def _cancel(tasks: set[asyncio.Task[Any]]) -> None:
        for task in tasks:
            task.cancel()
        # gather collects the children's cancellations as results; our own cancellation
        # still propagates.
        await asyncio.gather(*tasks, return_exceptions=True)
