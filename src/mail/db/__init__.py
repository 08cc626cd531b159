"""Persistence: one task store interface, three implementations.

* :class:`MemoryStore`: dictionaries; tests and ``--no-persist``.
* :class:`SQLiteStore`: the embedded default, one WAL-mode file, all SQLite work on a
  thread of the store's own.
* :class:`PostgresStore`: asyncpg, when ``DATABASE_URL`` is set; the tables of the
  original implementation (CONTRACT §11) plus what it lacked.

:func:`create_store` picks one from :class:`mail.config.DatabaseConfig`;
:func:`open_store` also opens it (applying migrations). The interface and its row types
live in :mod:`mail.db.store`, the schema in :mod:`mail.db.migrations`.
:class:`RetentionJob` prunes finished tasks in the background (the server runs one as
``[database] prune_interval`` says). Importing this package does not import asyncpg.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mail.db._memory import MemoryStore
from mail.db._postgres import PostgresStore
from mail.db._retention import RetentionJob, prune_periodically
from mail.db._sqlite import SQLiteStore
from mail.db.migrations import latest_version
from mail.db.store import (
    FINISHED_STATES,
    BreakpointRow,
    CallerKey,
    EventRow,
    StashRow,
    TaskChanges,
    TaskDetails,
    TaskRow,
    TaskStore,
)
from mail.errors import ConfigurationError

if TYPE_CHECKING:
    from mail.config import DatabaseConfig

__all__ = [
    "TaskStore",
    "CallerKey",
    "TaskRow",
    "EventRow",
    "BreakpointRow",
    "StashRow",
    "TaskChanges",
    "TaskDetails",
    "FINISHED_STATES",
    "MemoryStore",
    "SQLiteStore",
    "PostgresStore",
    "create_store",
    "open_store",
    "latest_version",
    "RetentionJob",
    "prune_periodically",
]


def create_store(config: DatabaseConfig, *, pool: Any | None = None) -> TaskStore:
    """The store ``config.backend`` names, not yet opened.

    ``"postgres"`` uses ``config.url`` (or ``pool``, an asyncpg pool the caller owns),
    ``"sqlite"`` the file ``config.sqlite_path``, ``"memory"`` nothing. Raises
    :class:`mail.errors.ConfigurationError` for an unknown backend.
    """
    backend = config.backend
    if backend == "postgres":
        if pool is not None:
            return PostgresStore(pool=pool)
        return PostgresStore(config.url)
    if backend == "sqlite":
        return SQLiteStore(config.sqlite_path)
    if backend == "memory":
        return MemoryStore()
    raise ConfigurationError(f"unknown database backend {backend!r}")


async def open_store(config: DatabaseConfig, *, pool: Any | None = None) -> TaskStore:
    """:func:`create_store`, then open it (connecting and applying migrations).

    Raises :class:`mail.errors.StorageError` when the store cannot be opened.
    """
    store = create_store(config, pool=pool)
    await store.open()
    return store
