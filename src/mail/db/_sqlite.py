"""The SQLite store: the embedded default, one file next to the server's data."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from mail.db import _sqlite_child, migrations
from mail.db._batch import GroupCommitter, Statement
from mail.db._common import (
    DetailKind,
    breakpoint_from_row,
    details_from_rows,
    event_from_row,
    from_iso,
    iso,
    key_params,
    loads,
    prune_cutoff,
    reported,
    response_from_text,
    stash_from_row,
    task_from_row,
)
from mail.db._sqlite_bulk import MultiRow
from mail.db._sqlite_child import CHECKPOINT_ROWS, configure
from mail.db._statements import Dialect, SQLWrites
from mail.db._writer_process import WriterProcess, package_dir
from mail.db.store import (
    BreakpointRow,
    CallerKey,
    EventRow,
    StashRow,
    TaskDetails,
    TaskRow,
)
from mail.errors import StorageError

__all__ = ["SQLiteStore"]

T = TypeVar("T")

_SAVE_TASK = """INSERT INTO tasks (swarm_name, caller_role, caller_id, task_id, task_owner,
    task_contributors, remote_swarms, state, title, start_time, updated_at, is_running,
    completed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (swarm_name, caller_role, caller_id, task_id) DO UPDATE SET
    task_owner = excluded.task_owner, task_contributors = excluded.task_contributors,
    remote_swarms = excluded.remote_swarms, state = excluded.state, title = excluded.title,
    start_time = excluded.start_time, updated_at = excluded.updated_at,
    is_running = excluded.is_running, completed = excluded.completed"""
_APPEND_EVENT = """INSERT OR IGNORE INTO task_events (swarm_name, caller_role, caller_id,
    task_id, seq, event_type, event_data) VALUES (?, ?, ?, ?, ?, ?, CAST(? AS TEXT))"""
_SAVE_HISTORY = """INSERT INTO agent_histories (swarm_name, caller_role, caller_id, task_id,
    agent_name, tool_format, history, updated_at) VALUES (?, ?, ?, ?, ?, ?, CAST(? AS TEXT), ?)
    ON CONFLICT (swarm_name, caller_role, caller_id, task_id, agent_name) DO UPDATE SET
    tool_format = excluded.tool_format, history = excluded.history,
    updated_at = excluded.updated_at"""
_SAVE_RESPONSE = """INSERT INTO task_responses (swarm_name, caller_role, caller_id, task_id,
    response) VALUES (?, ?, ?, ?, CAST(? AS TEXT))
    ON CONFLICT (swarm_name, caller_role, caller_id, task_id) DO UPDATE SET
    response = excluded.response"""
_DELETE_BREAKPOINTS = """DELETE FROM task_breakpoints
    WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id = ?"""
_INSERT_BREAKPOINT = """INSERT INTO task_breakpoints (swarm_name, caller_role, caller_id,
    task_id, position, call_id, agent_name, tool_call, normalized)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"""
_DELETE_STASH = """DELETE FROM task_stash
    WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id = ?"""
_INSERT_STASH = """INSERT INTO task_stash (swarm_name, caller_role, caller_id, task_id,
    position, priority, seq, message) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"""
_DIALECT = Dialect(
    save_task=_SAVE_TASK,
    append_event=_APPEND_EVENT,
    save_history=_SAVE_HISTORY,
    save_response=_SAVE_RESPONSE,
    delete_breakpoints=_DELETE_BREAKPOINTS,
    insert_breakpoint=_INSERT_BREAKPOINT,
    delete_stash=_DELETE_STASH,
    insert_stash=_INSERT_STASH,
    when=iso,
    stamp_histories=True,
    json_bytes=True,
)
# a batch's rows of these statements go in a few multi-row statements (see _sqlite_bulk)
_MULTI = MultiRow()
for _insert in (
    _SAVE_TASK,
    _APPEND_EVENT,
    _SAVE_HISTORY,
    _SAVE_RESPONSE,
    _INSERT_BREAKPOINT,
    _INSERT_STASH,
):
    _MULTI.add(_insert)
_MULTI.add(
    _DELETE_BREAKPOINTS,
    key_delete="""DELETE FROM task_breakpoints
    WHERE (swarm_name, caller_role, caller_id, task_id) IN (VALUES ROWS)""",
)
_MULTI.add(
    _DELETE_STASH,
    key_delete="""DELETE FROM task_stash
    WHERE (swarm_name, caller_role, caller_id, task_id) IN (VALUES ROWS)""",
)
_LOAD_TASKS = """SELECT task_id, task_owner, task_contributors, remote_swarms, state, title,
    start_time, updated_at FROM tasks
    WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? ORDER BY start_time, rowid"""
_LOAD_TASK = """SELECT task_id, task_owner, task_contributors, remote_swarms, state, title,
    start_time, updated_at FROM tasks
    WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id = ?"""
_LOAD_EVENTS = """SELECT seq, event_type, event_data FROM task_events
    WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id = ? AND seq > ?
    ORDER BY seq LIMIT ?"""
_LOAD_HISTORIES = """SELECT agent_name, history FROM agent_histories
    WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id = ? ORDER BY rowid"""
_LOAD_RESPONSE = """SELECT response FROM task_responses
    WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id = ?"""
_LOAD_BREAKPOINTS = """SELECT call_id, agent_name, tool_call, normalized FROM task_breakpoints
    WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id = ?
    ORDER BY position"""
_LOAD_STASH = """SELECT priority, seq, message FROM task_stash
    WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id = ?
    ORDER BY position"""
# load_details: the per-task queries for many tasks (IDS: one ? per id of a chunk),
# each row led by its task id, in the per-task order within a task.
_DETAILS_CHUNK = 500  # ids per query: with the key, well below SQLite's 999 parameters
_LOAD_DETAILS: dict[DetailKind, str] = {
    "events": """SELECT task_id, seq, event_type, event_data FROM task_events
        WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id IN (IDS)
        ORDER BY task_id, seq""",
    "histories": """SELECT task_id, agent_name, history FROM agent_histories
        WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id IN (IDS)
        ORDER BY task_id, rowid""",
    "response": """SELECT task_id, response FROM task_responses
        WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id IN (IDS)""",
    "breakpoints": """SELECT task_id, call_id, agent_name, tool_call, normalized
        FROM task_breakpoints
        WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id IN (IDS)
        ORDER BY task_id, position""",
    "stash": """SELECT task_id, priority, seq, message FROM task_stash
        WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id IN (IDS)
        ORDER BY task_id, position""",
}
# Finished tasks of every caller, newest first, ranked; kept are the young and the top ones.
_PRUNE_CANDIDATES = """SELECT swarm_name, caller_role, caller_id, task_id FROM (
    SELECT swarm_name, caller_role, caller_id, task_id, updated_at,
           ROW_NUMBER() OVER (ORDER BY updated_at DESC, start_time DESC) AS rank
    FROM tasks WHERE state IN ('completed', 'failed', 'cancelled'))
    WHERE (? IS NOT NULL AND updated_at < ?) OR (? IS NOT NULL AND rank > ?)"""
# One statement per table, each run with (swarm, role, id, task_id); a task resumed since
# it was picked no longer matches the state guard and keeps all its rows.
_PRUNE_DELETES = tuple(
    """DELETE FROM TABLE WHERE (swarm_name, caller_role, caller_id, task_id) IN (
        SELECT swarm_name, caller_role, caller_id, task_id FROM tasks
        WHERE swarm_name = ?1 AND caller_role = ?2 AND caller_id = ?3 AND task_id = ?4
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


def _detail_rows(
    conn: sqlite3.Connection, key: CallerKey, ids: Sequence[str]
) -> dict[DetailKind, list[Any]]:
    rows: dict[DetailKind, list[Any]] = {kind: [] for kind in _LOAD_DETAILS}
    for start in range(0, len(ids), _DETAILS_CHUNK):
        chunk = ids[start : start + _DETAILS_CHUNK]
        marks = ", ".join("?" * len(chunk))
        for kind, sql in _LOAD_DETAILS.items():
            rows[kind] += conn.execute(sql.replace("IDS", marks), (*key_params(key), *chunk))
    return rows


class SQLiteStore(SQLWrites):
    """A :class:`~mail.db.store.TaskStore` in one SQLite file (WAL mode).

    Reads (and the migrations on open) run on one dedicated thread, writes in a writer
    process of the store's own (:mod:`mail.db._writer_process`): both off the event loop, and
    the writes off its GIL too. Writes are group committed (see :mod:`mail.db._batch`):
    each awaits the transaction that carries it.
    ``pragmas`` are extra ``PRAGMA name = value`` settings applied on open (for example
    ``{"cache_size": -65536}``); the writer process checkpoints the WAL in the background
    every ``checkpoint_rows`` rows written (its ``wal_autocheckpoint`` is off). Missing
    parent directories are created. Every method
    raises :class:`mail.errors.StorageError` naming the file and the operation.
    """

    dialect = _DIALECT

    backend = "sqlite"

    def __init__(
        self,
        path: str | Path,
        *,
        pragmas: Mapping[str, int | str] | None = None,
        max_batch: int = 512,
        checkpoint_rows: int = CHECKPOINT_ROWS,
    ) -> None:
        self.path = Path(path)
        self.name = f"sqlite store ({self.path})"
        self._pragmas = dict(pragmas or {})
        self._max_batch = max_batch
        self._checkpoint_rows = checkpoint_rows
        self._conn: sqlite3.Connection | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._writer: GroupCommitter | None = None
        self._process: WriterProcess | None = None

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    @property
    def writer_pid(self) -> int | None:
        """The process id of the store's writer process while it runs (started on open,
        started again by the next write if it died)."""
        return self._process.pid if self._process is not None else None

    async def __aenter__(self) -> SQLiteStore:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- lifecycle ------------------------------------------------------------------------

    async def open(self) -> None:
        """Open (creating) the file, set WAL mode and apply pending migrations."""
        if self._writer is not None:
            return
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mail-sqlite")
        argv = [
            sys.executable,
            "-I",  # none of the environment's Python settings
            "-S",  # nor site-packages: the child needs the standard library only
            _sqlite_child.__file__,
            str(self.path),
            json.dumps(self._pragmas),
            str(self._checkpoint_rows),
            package_dir("orjson"),  # where the child finds the server's JSON encoder
        ]
        label = f"SQLite writer process for {self.path}"
        process = WriterProcess(label, argv, _MULTI.forms())
        try:
            with reported(self.name, "open"):
                await asyncio.get_running_loop().run_in_executor(executor, self._connect)
                await process.start()
        except BaseException:
            await process.close()
            await asyncio.get_running_loop().run_in_executor(executor, self._disconnect)
            executor.shutdown(wait=False)
            raise
        self._executor = executor
        self._process = process
        self._writer = GroupCommitter(self.name, self._run_writes, max_writes=self._max_batch)
        self._writer.start()

    def _connect(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=True)
        try:
            configure(conn, self._pragmas)
            migrations.apply_sqlite(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    async def close(self) -> None:
        """Commit queued writes, close the file and stop the thread."""
        writer, self._writer = self._writer, None
        if writer is None:
            return
        try:
            await writer.close()
        finally:
            process, self._process = self._process, None
            if process is not None:
                await process.close()
            executor, self._executor = self._executor, None
            if executor is not None:
                await asyncio.get_running_loop().run_in_executor(executor, self._disconnect)
                executor.shutdown(wait=True)

    def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    # -- plumbing -------------------------------------------------------------------------

    def _writer_for(self, op: str) -> GroupCommitter:
        writer = self._writer
        if writer is None:
            raise StorageError(f"{self.name}: {op} failed: the store is not open")
        return writer

    async def _read(self, op: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        writer = self._writer_for(op)
        await writer.barrier()
        executor = self._executor
        if executor is None:
            raise StorageError(f"{self.name}: {op} failed: the store is not open")
        with reported(self.name, op):
            return await asyncio.get_running_loop().run_in_executor(executor, self._call, fn)

    def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._conn is None:
            raise sqlite3.ProgrammingError("the store is closed")
        return fn(self._conn)

    async def _run_writes(self, statements: list[Statement]) -> None:
        process = self._process
        if process is None:
            raise sqlite3.ProgrammingError("the store is closed")
        await process.run(statements)

    # -- reads ----------------------------------------------------------------------------

    async def _rows(self, op: str, sql: str, args: Sequence[Any]) -> list[Any]:
        return await self._read(op, lambda c: c.execute(sql, args).fetchall())

    async def load_tasks(self, key: CallerKey) -> list[TaskRow]:
        """Return the caller's tasks, oldest first."""
        rows = await self._rows("load_tasks", _LOAD_TASKS, key_params(key))
        with reported(self.name, "load_tasks"):
            return [task_from_row(r, from_iso) for r in rows]

    async def load_task(self, key: CallerKey, task_id: str) -> TaskRow | None:
        """Return one task record, or ``None``."""
        rows = await self._rows("load_task", _LOAD_TASK, (*key_params(key), task_id))
        with reported(self.name, "load_task"):
            return task_from_row(rows[0], from_iso) if rows else None

    async def load_events(
        self, key: CallerKey, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[EventRow]:
        """Return the events after ``after`` in order, at most ``limit``."""
        args = (*key_params(key), task_id, after, -1 if limit is None else limit)
        rows = await self._rows("load_events", _LOAD_EVENTS, args)
        with reported(self.name, "load_events"):
            return [event_from_row(task_id, *row) for row in rows]

    async def load_histories(self, key: CallerKey, task_id: str) -> dict[str, list[dict[str, Any]]]:
        """Return each agent's current history in a task."""
        rows = await self._rows("load_histories", _LOAD_HISTORIES, (*key_params(key), task_id))
        with reported(self.name, "load_histories"):
            return {agent: loads(history) for agent, history in rows}

    async def load_response(self, key: CallerKey, task_id: str) -> dict[str, Any] | None:
        """Return a task's final response, or ``None``."""
        rows = await self._rows("load_response", _LOAD_RESPONSE, (*key_params(key), task_id))
        with reported(self.name, "load_response"):
            return response_from_text(rows[0][0]) if rows else None

    async def load_breakpoints(self, key: CallerKey, task_id: str) -> list[BreakpointRow]:
        """Return a task's pending breakpoint calls."""
        rows = await self._rows("load_breakpoints", _LOAD_BREAKPOINTS, (*key_params(key), task_id))
        with reported(self.name, "load_breakpoints"):
            return [breakpoint_from_row(*row) for row in rows]

    async def load_stash(self, key: CallerKey, task_id: str) -> list[StashRow]:
        """Return a task's stashed messages."""
        rows = await self._rows("load_stash", _LOAD_STASH, (*key_params(key), task_id))
        with reported(self.name, "load_stash"):
            return [stash_from_row(*row) for row in rows]

    async def load_details(self, key: CallerKey, task_ids: Sequence[str]) -> dict[str, TaskDetails]:
        """Return many tasks' events, histories, responses, breakpoints and stashes: one
        query per table for each 500 ids (see :meth:`mail.db.store.TaskStore.load_details`)."""
        ids = list(dict.fromkeys(task_ids))
        rows = await self._read("load_details", lambda c: _detail_rows(c, key, ids))
        with reported(self.name, "load_details"):
            return details_from_rows(ids, rows)

    # -- maintenance ----------------------------------------------------------------------

    async def prune(
        self, *, older_than: timedelta | None = None, keep_last: int | None = None
    ) -> int:
        """Delete finished tasks older than ``older_than`` or beyond ``keep_last``."""
        self._writer_for("prune")
        cutoff = prune_cutoff(older_than, keep_last)
        if cutoff is None and keep_last is None:
            return 0
        bound = None if cutoff is None else iso(cutoff)
        args = (bound, bound, keep_last, keep_last)
        doomed = await self._rows("prune", _PRUNE_CANDIDATES, args)
        if doomed:
            await self._write("prune", [(sql, doomed) for sql in _PRUNE_DELETES])
        return len(doomed)

    async def health(self) -> str:
        """``"ok"``, or what is wrong (closed, the last failed write, an unreadable file)."""
        writer = self._writer
        if writer is None:
            return "closed"
        if writer.last_error is not None:
            return writer.last_error
        try:
            await self._read("health", lambda c: c.execute("SELECT 1").fetchone())
        except Exception as e:  # noqa: BLE001  # health reports any failure, it never raises
            return str(e) or type(e).__name__
        return "ok"

    async def schema_version(self) -> int:
        """The newest applied migration."""
        rows = await self._rows("schema_version", "SELECT MAX(version) FROM schema_migrations", ())
        return int(rows[0][0] or 0)
