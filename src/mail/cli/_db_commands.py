"""The task store commands of ``mail``: ``db-init``, ``db-migrate`` and ``db-prune``.

:mod:`mail.cli` parses the flags, configures logging and imports this module only when
one of these commands runs. Each reads ``[database]`` through
:func:`mail.config.load_config`, opens the store (applying pending migrations), does its
work and closes it. Exit statuses: 0 success, 1 a storage failure, 2 a usage or
configuration error; errors go to stderr as ``mail <command>: ...``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from mail.errors import ConfigurationError, StorageError

if TYPE_CHECKING:
    from mail.config import DatabaseConfig
    from mail.db import TaskStore

__all__ = ["run_db_migrate", "run_db_prune"]

EXIT_FAILED = 1
EXIT_USAGE = 2


class _UsageError(Exception):
    pass


def _fail(command: str, error: BaseException, status: int = EXIT_USAGE) -> int:
    for line in str(error).splitlines() or [type(error).__name__]:
        sys.stderr.write(f"mail {command}: {line}\n")
    return status


def _database(args: argparse.Namespace) -> DatabaseConfig:
    from mail.config import load_config  # noqa: PLC0415  # pydantic: only when a command runs

    database = load_config(args.config).database
    if not database.persist:
        raise _UsageError("[database] persist is false: there is no store to work on")
    return database


def _run(
    command: str, database: DatabaseConfig, work: Callable[[TaskStore], Awaitable[str]]
) -> int:
    async def run() -> str:
        from mail.db import open_store  # noqa: PLC0415  # asyncpg only with PostgreSQL

        store = await open_store(database)  # applies pending migrations
        try:
            return await work(store)
        finally:
            await store.close()

    try:
        sys.stdout.write(asyncio.run(run()) + "\n")
    except ConfigurationError as e:
        return _fail(command, e)
    except StorageError as e:
        return _fail(command, e, EXIT_FAILED)
    return 0


def run_db_migrate(args: argparse.Namespace) -> int:
    """``mail db-init`` / ``mail db-migrate``: apply pending migrations, print the version.

    On a PostgreSQL database shared with v1.3.6, only the migrations v1.3.6 can live with
    apply; ``--upgrade-from-v1`` applies the others after saying what they change and
    asking (``--yes``: without asking; without a terminal to ask on, it refuses).
    """
    try:
        database = _database(args)
    except (ConfigurationError, _UsageError) as e:
        return _fail(args.db_command, e)

    async def work(store: TaskStore) -> str:
        if args.upgrade_from_v1:
            return await _upgrade_from_v1(store, args.yes)
        version = f"{store.backend} store at schema version {await store.schema_version()}"
        if store.v1_readable:
            version += (
                " (shared with v1.3.6: kept readable and writable by it; "
                "`mail db-migrate --upgrade-from-v1` converts it for this implementation only)"
            )
        return version

    return _run(args.db_command, database, work)


async def _upgrade_from_v1(store: TaskStore, yes: bool) -> str:
    from mail.db import PostgresStore  # noqa: PLC0415
    from mail.db.migrations import UPGRADE_FROM_V1  # noqa: PLC0415

    if not isinstance(store, PostgresStore):
        raise ConfigurationError("--upgrade-from-v1 applies to a PostgreSQL store only")
    if not store.v1_readable:
        version = await store.schema_version()
        return f"postgres store at schema version {version}: nothing to upgrade from v1.3.6"
    sys.stdout.write("--upgrade-from-v1 changes the database shared with v1.3.6:\n")
    sys.stdout.write("".join(f"  - {change}\n" for change in UPGRADE_FROM_V1))
    if not yes:
        if not sys.stdin.isatty():
            raise ConfigurationError("not upgrading: confirm with --yes (no terminal to ask on)")
        answer = await asyncio.to_thread(input, "Upgrade now? [y/N] ")
        if answer.strip().lower() not in {"y", "yes"}:
            raise ConfigurationError("not upgrading: not confirmed, nothing changed")
    applied = await store.upgrade_from_v1()
    version = await store.schema_version()
    done = ", ".join(map(str, applied))
    return f"postgres store at schema version {version} (upgraded from v1.3.6: applied {done})"


def run_db_prune(args: argparse.Namespace) -> int:
    """``mail db-prune``: delete finished tasks once.

    With ``--older-than DAYS`` and/or ``--keep N``, exactly those limits; with neither, the
    configured retention (``[database] retention_days``, ``retention_max_tasks``), as the
    server's background job applies it. Nothing to prune by is a usage error.
    """
    try:
        database = _database(args)
        older, keep = _prune_limits(args, database)
    except (ConfigurationError, _UsageError) as e:
        return _fail(args.db_command, e)

    async def work(store: TaskStore) -> str:
        removed = await store.prune(older_than=older, keep_last=keep)
        return f"pruned {removed} finished tasks ({_describe(older, keep)})"

    return _run(args.db_command, database, work)


def _prune_limits(
    args: argparse.Namespace, database: DatabaseConfig
) -> tuple[timedelta | None, int | None]:
    if args.keep is not None and args.keep < 0:
        raise _UsageError("--keep must be 0 or more")
    if args.older_than is not None or args.keep is not None:
        older = None if args.older_than is None else timedelta(days=args.older_than)
        return older, args.keep
    older, keep = database.retention_older_than, database.retention_keep_last
    if older is None and keep is None:
        raise _UsageError(
            "no retention is configured ([database] retention_days and retention_max_tasks "
            "are 0): give --older-than DAYS and/or --keep N"
        )
    return older, keep


def _describe(older: timedelta | None, keep: int | None) -> str:
    parts = []
    if older is not None:
        parts.append(f"older than {older.total_seconds() / 86400:g} days")
    if keep is not None:
        parts.append(f"beyond the newest {keep}")
    return " or ".join(parts)
