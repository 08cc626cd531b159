"""Group commit: many writes, in call order, share one transaction.

A write is a list of SQL statements, each with the parameter rows it runs for
(``executemany``). Writers call :meth:`GroupCommitter.submit` and await their write's
commit; one owned flusher task takes everything queued so far (up to ``max_writes``),
merges consecutive runs of the same statement into one ``executemany`` and commits it in a
single transaction. While a batch commits, new writes queue up, so under load batches grow
on their own and no write waits for a timer.

When a batch fails, each of its writes is retried in a transaction of its own, so one bad
write fails alone; every failure reaches its writer as :class:`mail.errors.StorageError`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mail.db._common import failure
from mail.errors import StorageError

__all__ = ["Statement", "Write", "GroupCommitter", "merge_writes"]

logger = logging.getLogger("mail.db")

#: ``(sql, parameter rows)``: run with ``executemany``.
Statement = tuple[str, Sequence[Sequence[Any]]]
#: The statements of one write, applied together.
Write = list[Statement]
#: Runs writes in one transaction (committing them) or raises.
Runner = Callable[[list[Statement]], Awaitable[None]]


def merge_writes(writes: Sequence[Write]) -> list[Statement]:
    """Concatenate the statements of ``writes``, merging consecutive identical SQL."""
    merged: list[tuple[str, list[Sequence[Any]]]] = []
    for write in writes:
        for sql, rows in write:
            if merged and merged[-1][0] == sql:
                merged[-1][1].extend(rows)
            else:
                merged.append((sql, list(rows)))
    return [(sql, rows) for sql, rows in merged if rows]


@dataclass(slots=True)
class _Pending:
    op: str
    write: Write
    future: asyncio.Future[None]


class GroupCommitter:
    """Orders and batches the writes of one store (see the module docstring).

    ``name`` names the store in errors; ``run`` executes statements in one transaction.
    :attr:`last_error` holds the newest failure until a later batch commits.
    """

    def __init__(self, name: str, run: Runner, *, max_writes: int = 512) -> None:
        self.name = name
        self.max_writes = max_writes
        self.last_error: str | None = None
        self._run = run
        self._queue: list[_Pending] = []
        self._wake = asyncio.Event()
        self._submitted = 0
        self._settled = 0
        self._settled_event = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the flusher task (owned by this object, ended by :meth:`close`)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._flush_loop(), name=f"store-flush:{self.name}"
            )

    async def submit(self, op: str, write: Write) -> None:
        """Queue ``write`` and wait until it is committed.

        Raises :class:`StorageError` if it failed or the committer is closed. Cancelling
        the wait does not withdraw the write.
        """
        if self._closing or self._task is None:
            raise StorageError(f"{self.name}: {op} failed: the store is not open")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(op, write, future))
        self._submitted += 1
        self._wake.set()
        await future

    async def barrier(self) -> None:
        """Wait until every write submitted before this call has committed or failed."""
        target = self._submitted
        while self._settled < target:
            await self._settled_event.wait()

    async def close(self) -> None:
        """Refuse new writes, commit the queued ones and stop the flusher."""
        self._closing = True
        task, self._task = self._task, None
        if task is None:
            return
        self._wake.set()
        await task

    async def _flush_loop(self) -> None:
        while True:
            if not self._queue:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            batch = self._queue[: self.max_writes]
            del self._queue[: self.max_writes]
            try:
                await self._commit(batch)
            finally:
                for pending in batch:
                    if not pending.future.done():
                        pending.future.set_exception(
                            StorageError(f"{self.name}: {pending.op} failed: store closed")
                        )
                self._settled += len(batch)
                event, self._settled_event = self._settled_event, asyncio.Event()
                event.set()

    async def _commit(self, batch: list[_Pending]) -> None:
        try:
            await self._run(merge_writes([pending.write for pending in batch]))
        except Exception as e:  # noqa: BLE001  # every failure goes to the writers, as StorageError
            if len(batch) == 1:
                self._fail(batch[0], e)
                return
            logger.debug(
                "%s: batch of %d writes failed, retrying one by one", self.name, len(batch)
            )
            for pending in batch:
                try:
                    await self._run(merge_writes([pending.write]))
                except Exception as one:  # noqa: BLE001  # reported to its writer
                    self._fail(pending, one)
                else:
                    self._succeed(pending)
            return
        for pending in batch:
            self._succeed(pending)

    def _succeed(self, pending: _Pending) -> None:
        self.last_error = None
        if not pending.future.done():
            pending.future.set_result(None)

    def _fail(self, pending: _Pending, exc: Exception) -> None:
        error = failure(self.name, pending.op, exc)
        error.__cause__ = exc
        self.last_error = str(error)
        if not pending.future.done():
            pending.future.set_exception(error)
