"""Group commit: many writes, in call order, share one transaction.

A write is a list of SQL statements, each with the parameter rows it runs for
(``executemany``). Writers call :meth:`GroupCommitter.submit` and await their write's
commit, or :meth:`GroupCommitter.submit_many` for many writes that touch disjoint rows
(one per task) with one await; one owned flusher task takes everything queued so far (up to
``max_writes``), merges consecutive runs of the same statement into one ``executemany``
and commits it in a single transaction. The writes of one ``submit_many`` commute, so their
runs of the same statement are gathered across them (each write keeps its own order).
While a batch commits, new writes queue up, so under load batches grow on their own and no
write waits for a timer.

When a batch fails, each of its writes is retried in a transaction of its own, so one bad
write fails alone; every failure reaches its writer as :class:`mail.errors.StorageError`.
"""

from __future__ import annotations

import asyncio
import itertools
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


_Merged = list[tuple[str, list[Sequence[Any]]]]


def merge_writes(writes: Sequence[Write], *, disjoint: bool = False) -> list[Statement]:
    """Concatenate the statements of ``writes``, merging consecutive identical SQL and
    dropping statements without rows.

    ``disjoint``: the writes touch disjoint rows, so statements of different writes
    commute; the rows of a statement then join those of the same SQL from earlier writes,
    as long as every write's own statements still run in their order.
    """
    merged: _Merged = []
    if not disjoint:
        for write in writes:
            _extend(merged, write)
        return list(merged)
    segment = _Segment()
    for write in writes:
        own: _Merged = []
        _extend(own, write)
        if segment.add(own):
            continue
        _extend(merged, segment.statements())
        segment = _Segment()
        if not segment.add(own):  # the write repeats a statement: keep it as it is
            _extend(merged, own)
    _extend(merged, segment.statements())
    return list(merged)


def _extend(merged: _Merged, statements: Sequence[Statement]) -> None:
    for sql, rows in statements:
        if not rows:
            continue
        if merged and merged[-1][0] == sql:
            merged[-1][1].extend(rows)
        else:
            merged.append((sql, list(rows)))


class _Segment:
    """Statements of disjoint writes, one per SQL, in an order that keeps each write's.

    Each write adds "runs before" edges between its consecutive statements; a write whose
    edges would close a cycle does not fit (the caller starts a new segment).
    """

    __slots__ = ("after", "rows")

    def __init__(self) -> None:
        self.rows: dict[str, list[Sequence[Any]]] = {}  # in order of first appearance
        self.after: dict[str, set[str]] = {}  # SQL -> the SQL that must run after it

    def add(self, write: _Merged) -> bool:
        """Add ``write``'s rows; False (and nothing added) when its order cannot be kept."""
        sqls = [sql for sql, _ in write]
        if len(set(sqls)) < len(sqls):
            return False
        new = [(a, b) for a, b in itertools.pairwise(sqls) if b not in self.after.get(a, ())]
        if new:
            after = {sql: set(later) for sql, later in self.after.items()}
            for a, b in new:
                if _reaches(after, b, a):
                    return False
                after.setdefault(a, set()).add(b)
            self.after = after
        for sql, rows in write:
            self.rows.setdefault(sql, []).extend(rows)
        return True

    def statements(self) -> list[Statement]:
        """The statements in an order every write allows (first appearance breaks ties)."""
        waiting = dict.fromkeys(self.rows, 0)
        for later in self.after.values():
            for sql in later:
                waiting[sql] += 1
        ready = [sql for sql, count in waiting.items() if count == 0]
        rank = {sql: i for i, sql in enumerate(self.rows)}
        ordered: list[Statement] = []
        while ready:
            sql = min(ready, key=rank.__getitem__)
            ready.remove(sql)
            ordered.append((sql, self.rows[sql]))
            for nxt in self.after.get(sql, ()):
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    ready.append(nxt)
        return ordered


def _reaches(after: dict[str, set[str]], start: str, goal: str) -> bool:
    seen = {start}
    stack = [start]
    while stack:
        sql = stack.pop()
        if sql == goal:
            return True
        for nxt in after.get(sql, ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


@dataclass(slots=True)
class _Pending:
    op: str
    write: Write
    future: asyncio.Future[None]
    #: the ``submit_many`` call the write came with (its writes touch disjoint rows)
    group: object | None = None


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

    async def submit_many(self, op: str, writes: Sequence[Write]) -> list[StorageError | None]:
        """Queue ``writes``, which must touch disjoint rows (one per task, say), and wait
        until each is committed or failed.

        Returns, for each write in order, ``None`` or the :class:`StorageError` it failed
        with: a write fails alone, as with :meth:`submit`. Raises :class:`StorageError`
        when the committer is closed. Cancelling the wait does not withdraw the writes.
        """
        if self._closing or self._task is None:
            raise StorageError(f"{self.name}: {op} failed: the store is not open")
        if not writes:
            return []
        loop = asyncio.get_running_loop()
        group = object()
        futures: list[asyncio.Future[None]] = []
        for write in writes:
            future: asyncio.Future[None] = loop.create_future()
            self._queue.append(_Pending(op, write, future, group))
            futures.append(future)
        self._submitted += len(futures)
        self._wake.set()
        # gather over futures wraps none of them in a Task
        results = await asyncio.gather(*futures, return_exceptions=True)
        errors: list[StorageError | None] = []
        for result in results:
            if result is not None and not isinstance(result, StorageError):
                raise result
            errors.append(result)
        return errors

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
            await self._run(_statements(batch))
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


def _statements(batch: list[_Pending]) -> list[Statement]:
    """The statements of ``batch``, each ``submit_many`` group merged as disjoint writes."""
    if len(batch) == 1 and batch[0].group is None:
        # one write (a recorder's batch, as a rule): merged already, run as it is
        return [statement for statement in batch[0].write if statement[1]]
    merged: _Merged = []
    for group, run in itertools.groupby(batch, key=lambda pending: pending.group):
        writes = [pending.write for pending in run]
        _extend(merged, merge_writes(writes, disjoint=group is not None))
    return list(merged)
