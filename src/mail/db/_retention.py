"""The background retention job: prune finished tasks from a store now and then."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import timedelta

from mail.db.store import TaskStore
from mail.errors import StorageError

__all__ = ["RetentionJob", "prune_periodically"]

logger = logging.getLogger("mail.db")

#: Seconds after start before the first prune (unless the interval is shorter): the
#: server answers its first requests before a large prune competes with them.
FIRST_RUN_AFTER = 10.0


class RetentionJob:
    """Prunes finished tasks from ``store`` every ``every`` seconds.

    ``older_than`` and ``keep_last`` are passed to :meth:`TaskStore.prune`; with both
    ``None`` nothing is ever pruned. The first prune runs after ``first_after`` seconds
    (default ``min(every, FIRST_RUN_AFTER)``). :meth:`run` is meant to be a task owned by
    the server's lifespan, which cancels it on shutdown. A failed prune is logged (logger
    ``mail.db``), kept in :attr:`last_error` until a prune succeeds, passed to
    ``on_error`` when it is a :class:`StorageError`, and the job carries on.
    """

    def __init__(
        self,
        store: TaskStore,
        *,
        every: float,
        older_than: timedelta | None = None,
        keep_last: int | None = None,
        first_after: float | None = None,
        on_error: Callable[[StorageError], None] | None = None,
    ) -> None:
        self.store = store
        self.every = every
        self.older_than = older_than
        self.keep_last = keep_last
        self.first_after = min(every, FIRST_RUN_AFTER) if first_after is None else first_after
        self.on_error = on_error
        #: prunes attempted, and finished tasks deleted, since the job started
        self.runs = 0
        self.pruned = 0
        #: the last prune's failure, ``None`` once a prune succeeds, and its
        #: ``time.monotonic()`` (the server's health shows it only until a write works)
        self.last_error: str | None = None
        self.failed_at = 0.0
        self._ran = asyncio.Event()

    async def run(self) -> None:
        """Prune now and then until cancelled (cancellation propagates)."""
        delay = self.first_after
        while True:
            await asyncio.sleep(delay)
            delay = self.every
            await self.run_once()

    async def run_once(self) -> int:
        """One prune; returns how many tasks it deleted (0 when it failed). Never raises
        but for cancellation."""
        try:
            if self.older_than is None and self.keep_last is None:
                removed = 0
            else:
                removed = await self.store.prune(
                    older_than=self.older_than, keep_last=self.keep_last
                )
        except StorageError as e:
            self._failed(e)
            logger.warning("retention: %s", e)
            if self.on_error is not None:
                self.on_error(e)
            return 0
        except Exception as e:  # a bug must not end the job: logged with its traceback
            self._failed(e)
            logger.exception("retention: prune failed")
            return 0
        self.last_error = None
        self.pruned += removed
        self._done()
        if removed:
            logger.info("retention: pruned %d finished tasks", removed)
        return removed

    async def wait_runs(self, count: int) -> None:
        """Wait until at least ``count`` prunes have been attempted."""
        while self.runs < count:
            await self._ran.wait()

    def _failed(self, error: Exception) -> None:
        self.last_error = str(error) or type(error).__name__
        self.failed_at = time.monotonic()
        self._done()

    def _done(self) -> None:
        self.runs += 1
        ran, self._ran = self._ran, asyncio.Event()
        ran.set()


async def prune_periodically(
    store: TaskStore,
    *,
    every: float,
    older_than: timedelta | None = None,
    keep_last: int | None = None,
    on_error: Callable[[StorageError], None] | None = None,
) -> None:
    """Call ``store.prune(older_than=..., keep_last=...)`` every ``every`` seconds, forever.

    The first prune runs after ``every`` seconds. A :class:`RetentionJob` without its
    status: a failed prune is logged (``mail.db``, warning) and passed to ``on_error``,
    and the job carries on; cancellation propagates. Does nothing but sleep when both
    limits are ``None``.
    """
    job = RetentionJob(
        store,
        every=every,
        older_than=older_than,
        keep_last=keep_last,
        first_after=every,
        on_error=on_error,
    )
    await job.run()
