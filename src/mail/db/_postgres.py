"""The PostgreSQL store (asyncpg), used when ``DATABASE_URL`` is set.

The tables keep the names and columns of the original implementation (CONTRACT §11), so
its data stays readable; :mod:`mail.db.migrations` adds what it lacked. asyncpg is
imported when the store opens, never at import time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mail.db import _pg_child, migrations
from mail.db._batch import GroupCommitter, Statement
from mail.db._common import (
    DetailKind,
    breakpoint_from_row,
    details_from_rows,
    dumps,
    event_from_row,
    key_params,
    loads,
    prune_cutoff,
    reported,
    response_from_text,
    stash_from_row,
    task_from_row,
    utc,
)
from mail.db._pg_copy import PgApplier
from mail.db._raw import expand
from mail.db._statements import Dialect, SQLWrites
from mail.db._writer_process import WriterProcess
from mail.db.store import (
    BreakpointRow,
    CallerKey,
    EventRow,
    StashRow,
    TaskDetails,
    TaskRow,
)
from mail.errors import ConfigurationError, StorageError

__all__ = ["PostgresStore"]

_SAVE_TASK = """INSERT INTO tasks (swarm_name, caller_role, caller_id, task_id, task_owner,
    task_contributors, remote_swarms, state, title, start_time, updated_at, is_running,
    completed) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, $9, $10, $11, $12, $13)
    ON CONFLICT (task_id, swarm_name, caller_role, caller_id) DO UPDATE SET
    task_owner = excluded.task_owner, task_contributors = excluded.task_contributors,
    remote_swarms = excluded.remote_swarms, state = excluded.state, title = excluded.title,
    start_time = excluded.start_time, updated_at = excluded.updated_at,
    is_running = excluded.is_running, completed = excluded.completed"""
# event_id is the SSE id the event is sent with: its sequence number
_APPEND_EVENT = """INSERT INTO task_events (swarm_name, caller_role, caller_id, task_id,
    seq, event_type, event_data, event_id)
    VALUES ($1, $2, $3, $4, $5::bigint, $6, $7, $5::bigint::text)
    ON CONFLICT (swarm_name, caller_role, caller_id, task_id, seq) DO NOTHING"""
_SAVE_HISTORY = """INSERT INTO agent_histories (swarm_name, caller_role, caller_id, task_id,
    agent_name, tool_format, history, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, NOW())
    ON CONFLICT (swarm_name, caller_role, caller_id, task_id, agent_name) DO UPDATE SET
    tool_format = excluded.tool_format, history = excluded.history, updated_at = NOW()"""
_SAVE_RESPONSE = """INSERT INTO task_responses (swarm_name, caller_role, caller_id, task_id,
    response) VALUES ($1, $2, $3, $4, $5::jsonb)
    ON CONFLICT (task_id, swarm_name, caller_role, caller_id) DO UPDATE SET
    response = excluded.response"""
_DELETE_BREAKPOINTS = """DELETE FROM task_breakpoints
    WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4"""
_INSERT_BREAKPOINT = """INSERT INTO task_breakpoints (swarm_name, caller_role, caller_id,
    task_id, position, call_id, agent_name, tool_call, normalized)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb)"""
_DELETE_STASH = """DELETE FROM task_stash
    WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4"""
_INSERT_STASH = """INSERT INTO task_stash (swarm_name, caller_role, caller_id, task_id,
    position, priority, seq, message) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)"""
_DIALECT = Dialect(
    save_task=_SAVE_TASK,
    append_event=_APPEND_EVENT,
    save_history=_SAVE_HISTORY,
    save_response=_SAVE_RESPONSE,
    delete_breakpoints=_DELETE_BREAKPOINTS,
    insert_breakpoint=_INSERT_BREAKPOINT,
    delete_stash=_DELETE_STASH,
    insert_stash=_INSERT_STASH,
    when=utc,
    stamp_histories=False,
    json_bytes=False,
)
# the statements the writer applies by COPY or over arrays (see _pg_copy and _pg_bulk)
_WRITES = {
    "save_task": _SAVE_TASK,
    "append_event": _APPEND_EVENT,
    "save_history": _SAVE_HISTORY,
    "save_response": _SAVE_RESPONSE,
    "delete_breakpoints": _DELETE_BREAKPOINTS,
    "delete_stash": _DELETE_STASH,
}
_LOAD_TASKS = """SELECT task_id, task_owner, task_contributors::text, remote_swarms::text,
    state, title, start_time, updated_at FROM tasks
    WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3
    ORDER BY start_time, created_at"""
_LOAD_TASK = """SELECT task_id, task_owner, task_contributors::text, remote_swarms::text,
    state, title, start_time, updated_at FROM tasks
    WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4"""
_LOAD_EVENTS = """SELECT seq, event_type, event_data FROM task_events
    WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4
      AND seq > $5 ORDER BY seq LIMIT $6"""
_LOAD_HISTORIES = """SELECT agent_name, history::text FROM agent_histories
    WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4
    ORDER BY created_at"""
_LOAD_RESPONSE = """SELECT response::text FROM task_responses
    WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4"""
_LOAD_BREAKPOINTS = """SELECT call_id, agent_name, tool_call::text, normalized::text
    FROM task_breakpoints
    WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4
    ORDER BY position"""
_LOAD_STASH = """SELECT priority, seq, message::text FROM task_stash
    WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4
    ORDER BY position"""
# load_details: the per-task queries for a list of ids ($4), each row led by its task id,
# in the per-task order within a task.
_LOAD_DETAILS: dict[DetailKind, str] = {
    "events": """SELECT task_id, seq, event_type, event_data FROM task_events
        WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3
          AND task_id = ANY($4::text[]) ORDER BY task_id, seq""",
    "histories": """SELECT task_id, agent_name, history::text FROM agent_histories
        WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3
          AND task_id = ANY($4::text[]) ORDER BY task_id, created_at""",
    "response": """SELECT task_id, response::text FROM task_responses
        WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3
          AND task_id = ANY($4::text[])""",
    "breakpoints": """SELECT task_id, call_id, agent_name, tool_call::text, normalized::text
        FROM task_breakpoints
        WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3
          AND task_id = ANY($4::text[]) ORDER BY task_id, position""",
    "stash": """SELECT task_id, priority, seq, message::text FROM task_stash
        WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3
          AND task_id = ANY($4::text[]) ORDER BY task_id, position""",
}
# Finished tasks of every caller, newest first, ranked; kept are the young and the top ones.
_PRUNE_CANDIDATES = """SELECT swarm_name, caller_role, caller_id, task_id FROM (
    SELECT swarm_name, caller_role, caller_id, task_id, updated_at,
           ROW_NUMBER() OVER (ORDER BY updated_at DESC, start_time DESC) AS rank
    FROM tasks WHERE state IN ('completed', 'failed', 'cancelled')) AS finished
    WHERE ($1::timestamptz IS NOT NULL AND updated_at < $1)
       OR ($2::bigint IS NOT NULL AND rank > $2)"""
# One statement per table, each run with (swarm, role, id, task_id); a task resumed since
# it was picked no longer matches the state guard and keeps all its rows.
_PRUNE_DELETES = tuple(
    """DELETE FROM TABLE WHERE (swarm_name, caller_role, caller_id, task_id) IN (
        SELECT swarm_name, caller_role, caller_id, task_id FROM tasks
        WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4
          AND state IN ('completed', 'failed', 'cancelled'))""".replace("TABLE", table)
    for table in (
        "task_events",
        "agent_histories",
        "task_responses",
        "task_breakpoints",
        "task_stash",
        "tasks",
    )
)


def _usable(conn: Any) -> bool:
    """False for a closed connection, or one the pool took back after it broke."""
    try:
        return not conn.is_closed()
    except Exception:  # noqa: BLE001  # asyncpg raises InterfaceError for a detached proxy
        return False


def _describe(dsn: str | None) -> str:
    """``host:port/database`` of a DSN, without user or password."""
    if not dsn:
        return "postgres store"
    parts = urlsplit(dsn)
    port = f":{parts.port}" if parts.port else ""
    return f"postgres store ({parts.hostname or 'localhost'}{port}{parts.path})"


class PostgresStore(SQLWrites):
    """A :class:`~mail.db.store.TaskStore` in PostgreSQL through an asyncpg pool.

    Give either ``dsn`` (the store creates its pool on :meth:`open`, with ``min_size`` /
    ``max_size`` connections, ``command_timeout`` seconds per statement, ``connect_timeout``
    per connection attempt and ``application_name=mail-server``, and closes it on
    :meth:`close`) or an existing asyncpg ``pool`` (used, never closed). Writes are group
    committed, so they apply in call order: with a DSN by a writer process of the store's
    own (:mod:`mail.db._pg_child`, its own connection), with a pool on one connection the
    store keeps; reads use the pool. Every method
    raises :class:`mail.errors.StorageError` naming the server and the operation (never the
    password). Giving both or neither of ``dsn`` and ``pool`` raises
    :class:`mail.errors.ConfigurationError`.
    """

    dialect = _DIALECT

    backend = "postgres"

    def __init__(
        self,
        dsn: str | None = None,
        *,
        pool: Any | None = None,
        min_size: int = 1,
        max_size: int = 10,
        command_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        max_batch: int = 512,
    ) -> None:
        if (dsn is None) == (pool is None):
            raise ConfigurationError("postgres store: give exactly one of dsn and pool")
        self.name = _describe(dsn)
        self._dsn = dsn
        self._pool: Any | None = pool
        self._owns_pool = pool is None
        self._pool_options = {
            "min_size": min_size,
            "max_size": max_size,
            "command_timeout": command_timeout,
            "timeout": connect_timeout,
            "server_settings": {"application_name": "mail-server"},
        }
        self._max_batch = max_batch
        self._writer: GroupCommitter | None = None
        self._write_conn: Any | None = None
        self._command_timeout = command_timeout
        self._connect_timeout = connect_timeout
        self._process: WriterProcess | None = None  # with a dsn: the writer process
        self._applier = PgApplier(_WRITES)  # with a pool given: writes in this process

    def __repr__(self) -> str:
        return f"PostgresStore({self.name!r})"

    @property
    def writer_pid(self) -> int | None:
        """The process id of the store's writer process while it runs (a store given a
        DSN starts it on open; the next write starts it again if it died)."""
        return self._process.pid if self._process is not None else None

    async def __aenter__(self) -> PostgresStore:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- lifecycle ------------------------------------------------------------------------

    async def open(self) -> None:
        """Create the pool (unless one was given) and apply pending migrations."""
        if self._writer is not None:
            return
        with reported(self.name, "open"):
            if self._owns_pool:
                try:
                    import asyncpg  # type: ignore[import-untyped]  # noqa: PLC0415  # no stubs; imported on open (STYLE §4)
                except ImportError as e:
                    raise StorageError(f"{self.name}: open failed: asyncpg is not installed") from e
                self._pool = await asyncpg.create_pool(self._dsn, **self._pool_options)
            pool: Any = self._pool
            try:
                async with pool.acquire() as conn:
                    await migrations.apply_postgres(conn)
                if self._dsn is not None:
                    self._process = self._writer_process(self._dsn)
                    await self._process.start()
            except BaseException:
                await self._release_process()
                await self._release_pool()
                raise
        self._writer = GroupCommitter(self.name, self._run_writes, max_writes=self._max_batch)
        self._writer.start()

    async def close(self) -> None:
        """Commit queued writes, then close the pool if the store created it."""
        writer, self._writer = self._writer, None
        if writer is None:
            return
        try:
            await writer.close()
        finally:
            await self._release_process()
            await self._release_write_conn()
            await self._release_pool()

    def _writer_process(self, dsn: str) -> WriterProcess:
        """The process that applies the store's writes (see :mod:`mail.db._pg_child`)."""
        options = {
            "connect_timeout": self._connect_timeout,
            "command_timeout": self._command_timeout,
        }
        root = str(Path(_pg_child.__file__).parents[2])  # the directory holding ``mail``
        path = os.environ.get("PYTHONPATH")
        env = {
            **os.environ,
            _pg_child.DSN_VARIABLE: dsn,
            "PYTHONPATH": root if not path else f"{root}{os.pathsep}{path}",
        }
        argv = [sys.executable, "-c", _pg_child.START, json.dumps(options)]
        return WriterProcess(f"PostgreSQL writer process of the {self.name}", argv, _WRITES, env)

    async def _release_process(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            await process.close()

    async def _release_write_conn(self) -> None:
        conn, self._write_conn = self._write_conn, None
        if conn is not None and self._pool is not None:
            await self._pool.release(conn)

    async def _release_pool(self) -> None:
        if self._owns_pool and self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    # -- plumbing -------------------------------------------------------------------------

    def _writer_for(self, op: str) -> GroupCommitter:
        writer = self._writer
        if writer is None or self._pool is None:
            raise StorageError(f"{self.name}: {op} failed: the store is not open")
        return writer

    async def _fetch(self, op: str, sql: str, *args: Any) -> list[Any]:
        await self._writer_for(op).barrier()
        pool = self._pool
        if pool is None:
            raise StorageError(f"{self.name}: {op} failed: the store is not open")
        with reported(self.name, op):
            rows: list[Any] = await pool.fetch(sql, *args)
            return rows

    async def _run_writes(self, statements: list[Statement]) -> None:
        process = self._process
        if process is not None:
            await process.run(statements)
            return
        # A pool was given (no DSN for a process of our own): the writes run here. The
        # flusher is the only writer: it keeps one connection instead of paying the pool's
        # acquire and reset for every batch, and replaces it once it is broken.
        pool = self._pool
        if pool is None:
            raise StorageError(f"{self.name}: write failed: the store is closed")
        conn = self._write_conn
        if conn is not None and not _usable(conn):
            self._write_conn = None
            with contextlib.suppress(Exception):  # broken already: give back what can be
                await pool.release(conn)
            conn = None
        if conn is None:
            conn = self._write_conn = await pool.acquire()
        await self._applier.apply(conn, list(expand(statements, dumps)))

    # -- reads ----------------------------------------------------------------------------

    async def load_tasks(self, key: CallerKey) -> list[TaskRow]:
        """Return the caller's tasks, oldest first."""
        rows = await self._fetch("load_tasks", _LOAD_TASKS, *key_params(key))
        with reported(self.name, "load_tasks"):
            return [task_from_row(r, utc) for r in rows]

    async def load_task(self, key: CallerKey, task_id: str) -> TaskRow | None:
        """Return one task record, or ``None``."""
        rows = await self._fetch("load_task", _LOAD_TASK, *key_params(key), task_id)
        with reported(self.name, "load_task"):
            return task_from_row(rows[0], utc) if rows else None

    async def load_events(
        self, key: CallerKey, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[EventRow]:
        """Return the events after ``after`` in order, at most ``limit``."""
        rows = await self._fetch(
            "load_events", _LOAD_EVENTS, *key_params(key), task_id, after, limit
        )
        with reported(self.name, "load_events"):
            return [event_from_row(task_id, *row) for row in rows]

    async def load_histories(self, key: CallerKey, task_id: str) -> dict[str, list[dict[str, Any]]]:
        """Return each agent's current history in a task."""
        rows = await self._fetch("load_histories", _LOAD_HISTORIES, *key_params(key), task_id)
        with reported(self.name, "load_histories"):
            return {agent: loads(history) for agent, history in rows}

    async def load_response(self, key: CallerKey, task_id: str) -> dict[str, Any] | None:
        """Return a task's final response, or ``None``."""
        rows = await self._fetch("load_response", _LOAD_RESPONSE, *key_params(key), task_id)
        with reported(self.name, "load_response"):
            return response_from_text(rows[0][0]) if rows else None

    async def load_breakpoints(self, key: CallerKey, task_id: str) -> list[BreakpointRow]:
        """Return a task's pending breakpoint calls."""
        rows = await self._fetch("load_breakpoints", _LOAD_BREAKPOINTS, *key_params(key), task_id)
        with reported(self.name, "load_breakpoints"):
            return [breakpoint_from_row(*row) for row in rows]

    async def load_stash(self, key: CallerKey, task_id: str) -> list[StashRow]:
        """Return a task's stashed messages."""
        rows = await self._fetch("load_stash", _LOAD_STASH, *key_params(key), task_id)
        with reported(self.name, "load_stash"):
            return [stash_from_row(*row) for row in rows]

    async def load_details(self, key: CallerKey, task_ids: Sequence[str]) -> dict[str, TaskDetails]:
        """Return many tasks' events, histories, responses, breakpoints and stashes: one
        query per table for all ids (see :meth:`mail.db.store.TaskStore.load_details`)."""
        ids = list(dict.fromkeys(task_ids))
        results = await asyncio.gather(
            *(
                self._fetch("load_details", sql, *key_params(key), ids)
                for sql in _LOAD_DETAILS.values()
            )
        )
        with reported(self.name, "load_details"):
            return details_from_rows(ids, dict(zip(_LOAD_DETAILS, results, strict=True)))

    # -- maintenance ----------------------------------------------------------------------

    async def prune(
        self, *, older_than: timedelta | None = None, keep_last: int | None = None
    ) -> int:
        """Delete finished tasks older than ``older_than`` or beyond ``keep_last``."""
        self._writer_for("prune")
        cutoff = prune_cutoff(older_than, keep_last)
        if cutoff is None and keep_last is None:
            return 0
        doomed = await self._fetch("prune", _PRUNE_CANDIDATES, cutoff, keep_last)
        if doomed:
            params = [tuple(row) for row in doomed]
            await self._write("prune", [(sql, params) for sql in _PRUNE_DELETES])
        return len(doomed)

    async def health(self) -> str:
        """``"ok"``, or what is wrong (closed, the last failed write, no answer in 5 s)."""
        writer = self._writer
        if writer is None or self._pool is None:
            return "closed"
        if writer.last_error is not None:
            return writer.last_error
        try:
            await self._pool.fetchval("SELECT 1", timeout=5.0)
        except Exception as e:  # noqa: BLE001  # health reports any failure, it never raises
            return f"{self.name}: health check failed: {str(e) or type(e).__name__}"
        return "ok"

    async def schema_version(self) -> int:
        """The newest applied migration."""
        rows = await self._fetch("schema_version", "SELECT MAX(version) FROM schema_migrations")
        return int(rows[0][0] or 0)
