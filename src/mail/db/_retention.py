"""The background retention job: prune finished tasks from a store now and then."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import timedelta

from mail.db.store import TaskStore
from mail.errors import StorageError

__all__ = ["prune_periodically"]

logger = logging.getLogger("mail.db")


async def prune_periodically(
    store: TaskStore,
    *,
    every: float,
    older_than: timedelta | None = None,
    keep_last: int | None = None,
    on_error: Callable[[StorageError], None] | None = None,
) -> None:
    """Call ``store.prune(older_than=..., keep_last=...)`` every ``every`` seconds, forever.

    Meant to run as a task owned by the server's lifespan, which cancels it on shutdown.
    A failed prune is logged (``mail.db``, warning) and passed to ``on_error``, and the
    job carries on; cancellation propagates. Does nothing but sleep when both limits are
    ``None``.
    """
    while True:
        await asyncio.sleep(every)
        if older_than is None and keep_last is None:
            continue
        try:
            removed = await store.prune(older_than=older_than, keep_last=keep_last)
        except StorageError as e:
            logger.warning("retention: %s", e)
            if on_error is not None:
                on_error(e)
            continue
        if removed:
            logger.info("retention: pruned %d finished tasks", removed)
