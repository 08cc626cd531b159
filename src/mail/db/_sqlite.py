"""The SQLite store: the embedded default, one file next to the server's data.

All SQLite work runs on one thread of the store's own, with one connection (the standard
``sqlite3`` module), so calls apply in the order they were made and never block the event
loop. The file is in WAL mode with ``synchronous = NORMAL``: a committed transaction
survives the server process being killed (it is in the WAL, which the next open reads);
a power cut may lose the last transactions, which ``pragmas={"synchronous": "FULL"}``
prevents at the price of a disk sync per commit.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from mail.db import migrations
from mail.db._sql import (
    DetailKind,
    Dialect,
    Prepared,
    Rows,
    combined,
    details_from_rows,
    event_from_row,
    key_params,
    prepare,
    prune_deletes,
    task_from_row,
)
from mail.db.store import (
    HEALTH_TIMEOUT,
    CallerKey,
    EventRow,
    TaskChanges,
    TaskDetails,
    TaskRow,
    TaskStore,
    prune_cutoff,
    utc,
)
from mail.errors import StorageError

__all__ = ["SQLiteStore"]

T = TypeVar("T")


def iso(value: datetime) -> str:
    """Fixed-width ISO-8601 UTC text, so that text order is time order."""
    return utc(value).isoformat(timespec="microseconds")


def from_iso(value: str) -> datetime:
    return utc(datetime.fromisoformat(value))


_DIALECT = Dialect(
    save_task="""INSERT INTO tasks (swarm_name, caller_role, caller_id, task_id, task_owner,
        task_contributors, remote_swarms, state, title, start_time, updated_at, is_running,
        completed, request) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (swarm_name, caller_role, caller_id, task_id) DO UPDATE SET
        task_owner = excluded.task_owner, task_contributors = excluded.task_contributors,
        remote_swarms = excluded.remote_swarms, state = excluded.state, title = excluded.title,
        start_time = excluded.start_time, updated_at = excluded.updated_at,
        is_running = excluded.is_running, completed = excluded.completed,
        request = excluded.request""",
    append_event="""INSERT OR IGNORE INTO task_events (swarm_name, caller_role, caller_id,
        task_id, seq, event_type, event_data) VALUES (?, ?, ?, ?, ?, ?, ?)""",
    save_history="""INSERT INTO agent_histories (swarm_name, caller_role, caller_id, task_id,
        agent_name, tool_format, history) VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (swarm_name, caller_role, caller_id, task_id, agent_name) DO UPDATE SET
        tool_format = excluded.tool_format, history = excluded.history""",
    save_response="""INSERT INTO task_responses (swarm_name, caller_role, caller_id, task_id,
        response) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (swarm_name, caller_role, caller_id, task_id) DO UPDATE SET
        response = excluded.response""",
    delete_breakpoints="""DELETE FROM task_breakpoints
        WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id = ?""",
    insert_breakpoint="""INSERT INTO task_breakpoints (swarm_name, caller_role, caller_id,
        task_id, position, call_id, agent_name, tool_call, normalized)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
    delete_stash="""DELETE FROM task_stash
        WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id = ?""",
    insert_stash="""INSERT INTO task_stash (swarm_name, caller_role, caller_id, task_id,
        position, priority, seq, message) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
    when=iso,
    history_time=False,
)
_TASK_COLUMNS = """task_id, task_owner, task_contributors, remote_swarms, state, title,
    start_time, updated_at, request"""
_LOAD_TASKS = f"""SELECT {_TASK_COLUMNS} FROM tasks
    WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? ORDER BY start_time, rowid"""
_LOAD_TASK = f"""SELECT {_TASK_COLUMNS} FROM tasks
    WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id = ?"""
_LOAD_EVENTS = """SELECT seq, event_type, event_data FROM task_events
    WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id = ? AND seq > ?
    ORDER BY seq LIMIT ?"""
# load_details: one query per table for a chunk of ids (IDS: one ? per id), each row led
# by its task id, in the per-task order within a task
_DETAILS_CHUNK = 500  # ids per query: with the key, well below SQLite's 999 parameters
_WHERE_IDS = "WHERE swarm_name = ? AND caller_role = ? AND caller_id = ? AND task_id IN (IDS)"
_LOAD_DETAILS: dict[DetailKind, str] = {
    "events": f"""SELECT task_id, seq, event_type, event_data FROM task_events {_WHERE_IDS}
        ORDER BY task_id, seq""",
    "histories": f"""SELECT task_id, agent_name, history FROM agent_histories {_WHERE_IDS}
        ORDER BY task_id, rowid""",
    "response": f"SELECT task_id, response FROM task_responses {_WHERE_IDS}",
    "breakpoints": f"""SELECT task_id, call_id, agent_name, tool_call, normalized
        FROM task_breakpoints {_WHERE_IDS} ORDER BY task_id, position""",
    "stash": f"""SELECT task_id, priority, seq, message FROM task_stash {_WHERE_IDS}
        ORDER BY task_id, position""",
}
# Finished tasks of every caller, newest first, ranked; kept are the young and the top ones.
_PRUNE_CANDIDATES = """SELECT swarm_name, caller_role, caller_id, task_id FROM (
    SELECT swarm_name, caller_role, caller_id, task_id, updated_at,
           ROW_NUMBER() OVER (ORDER BY updated_at DESC, start_time DESC) AS rank
    FROM tasks WHERE state IN ('completed', 'failed', 'cancelled'))
    WHERE (? IS NOT NULL AND updated_at < ?) OR (? IS NOT NULL AND rank > ?)"""
#: the finished task a prune statement deletes the rows of
_DOOMED_TASK = """SELECT swarm_name, caller_role, caller_id, task_id FROM tasks
        WHERE swarm_name = ?1 AND caller_role = ?2 AND caller_id = ?3 AND task_id = ?4
          AND state IN ('completed', 'failed', 'cancelled')"""


# One statement per table, each run with (swarm, role, id, task_id).
_PRUNE_DELETES = prune_deletes(_DOOMED_TASK)
#: page size of a new database (an existing one keeps its own): fewer pages per task's rows
PAGE_SIZE = 8192


def configure(conn: sqlite3.Connection, pragmas: Mapping[str, int | str]) -> None:
    """The settings of the store's connection: WAL, a busy timeout, then ``pragmas``."""
    conn.execute("PRAGMA busy_timeout = 10000")  # another process (`mail db prune`) may write
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # before WAL mode writes the first page
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise sqlite3.OperationalError(f"cannot use WAL mode (journal_mode is {mode})")
    conn.execute("PRAGMA synchronous = NORMAL")
    for name, value in pragmas.items():
        # PRAGMA takes no parameters: accept identifiers and integers only
        if not (name.isidentifier() and (isinstance(value, int) or value.isidentifier())):
            raise sqlite3.OperationalError(f"bad pragma {name!r} = {value!r}")
        conn.execute(f"PRAGMA {name} = {value}")


def _transaction(conn: sqlite3.Connection, rows: Rows) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql, params in rows.statements(_DIALECT):
            conn.executemany(sql, params)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


#: What a task's own rows cause (a value SQLite refuses, a constraint, text it cannot
#: encode): writing them again cannot succeed. Anything else (a full disk, a locked or
#: broken file) is the store's failure, which a later write may get past.
_REFUSED = (
    sqlite3.IntegrityError,
    sqlite3.DataError,
    sqlite3.InterfaceError,
    sqlite3.ProgrammingError,
    ValueError,  # UnicodeEncodeError among them
    TypeError,
    OverflowError,
)

#: ``task_id -> (error, refused)``: what :func:`_apply` could not store
Failed = dict[str, tuple[Exception, bool]]


def _apply(conn: sqlite3.Connection, prepared: list[Prepared]) -> Failed:
    """Every task's rows in one transaction; if that fails, each task in one of its own,
    so that only the tasks at fault fail. Returns what failed, by task id, and whether
    the store refused the task's rows (else it failed itself)."""
    try:
        _transaction(conn, combined(prepared))
    except Exception as e:  # noqa: BLE001  # told apart below, task by task
        if len(prepared) == 1:
            return {prepared[0].task_id: (e, isinstance(e, _REFUSED))}
    else:
        return {}
    failed: Failed = {}
    for task in prepared:
        try:
            _transaction(conn, task.rows)
        except Exception as e:  # noqa: BLE001  # reported per task
            failed[task.task_id] = (e, isinstance(e, _REFUSED))
    return failed


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


def _prune(conn: sqlite3.Connection, args: tuple[Any, ...]) -> int:
    doomed = conn.execute(_PRUNE_CANDIDATES, args).fetchall()
    if doomed:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sql in _PRUNE_DELETES:
                conn.executemany(sql, doomed)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return len(doomed)


class SQLiteStore(TaskStore):
    """A :class:`~mail.db.store.TaskStore` in one SQLite file (WAL mode).

    Every call runs on the store's own thread, in call order. ``pragmas`` are extra
    ``PRAGMA name = value`` settings applied on open (for example ``{"cache_size":
    -65536}``). Missing parent directories are created. Every method raises
    :class:`mail.errors.StorageError` naming the file and the operation.
    """

    backend = "sqlite"

    def __init__(self, path: str | Path, *, pragmas: Mapping[str, int | str] | None = None):
        super().__init__()
        self.path = Path(path)
        self.name = f"sqlite store ({self.path})"
        self._pragmas = dict(pragmas or {})
        self._conn: sqlite3.Connection | None = None
        self._executor: ThreadPoolExecutor | None = None

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    # -- lifecycle ------------------------------------------------------------------------

    async def open(self) -> None:
        """Open (creating) the file, set WAL mode and apply pending migrations."""
        if self._executor is not None:
            return
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mail-sqlite")
        try:
            with self.reported("open"):
                await asyncio.get_running_loop().run_in_executor(executor, self._connect)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        self._executor = executor

    def _connect(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            configure(conn, self._pragmas)
            migrations.apply_sqlite(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    async def close(self) -> None:
        """Let the calls under way finish, then close the file and stop the thread."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        await asyncio.get_running_loop().run_in_executor(executor, self._disconnect)
        executor.shutdown(wait=True)

    def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    # -- plumbing -------------------------------------------------------------------------

    async def _run(self, op: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)`` on the store's thread (queued behind the calls made before)."""
        executor = self._executor
        if executor is None:
            raise self.failure(op, "the store is not open")
        with self.reported(op):
            return await asyncio.get_running_loop().run_in_executor(executor, self._call, fn)

    async def run(self, op: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)`` on the store's thread, after the calls made before (for the
        tables other packages keep in this file: MAP Mail's conversation records). Raises
        :class:`mail.errors.StorageError` naming ``op``."""
        return await self._run(op, fn)

    def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._conn is None:
            raise sqlite3.ProgrammingError("the store is closed")
        return fn(self._conn)

    async def _save(
        self, op: str, key: CallerKey, changes: Sequence[TaskChanges]
    ) -> dict[str, StorageError]:
        if self._executor is None:
            raise self.failure(op, "the store is not open")
        prepared, failures = prepare(self, op, key, changes, _DIALECT)  # before any await
        if prepared:
            failed = await self._run(op, lambda conn: _apply(conn, prepared))
            for task_id, (e, refused) in failed.items():
                failures[task_id] = self.refusal(op, e) if refused else self.failure(op, e)
        return failures

    async def _rows(self, op: str, sql: str, args: Sequence[Any]) -> list[Any]:
        return await self._run(op, lambda c: c.execute(sql, args).fetchall())

    # -- reads ----------------------------------------------------------------------------

    async def load_tasks(self, key: CallerKey) -> list[TaskRow]:
        rows = await self._rows("load_tasks", _LOAD_TASKS, key_params(key))
        with self.reported("load_tasks"):
            return [task_from_row(r, from_iso) for r in rows]

    async def load_task(self, key: CallerKey, task_id: str) -> TaskRow | None:
        rows = await self._rows("load_task", _LOAD_TASK, (*key_params(key), task_id))
        with self.reported("load_task"):
            return task_from_row(rows[0], from_iso) if rows else None

    async def load_events(
        self, key: CallerKey, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[EventRow]:
        args = (*key_params(key), task_id, after, -1 if limit is None else limit)
        rows = await self._rows("load_events", _LOAD_EVENTS, args)
        with self.reported("load_events"):
            return [event_from_row(task_id, *row) for row in rows]

    async def load_details(self, key: CallerKey, task_ids: Sequence[str]) -> dict[str, TaskDetails]:
        ids = list(dict.fromkeys(task_ids))
        rows = await self._run("load_details", lambda c: _detail_rows(c, key, ids))
        with self.reported("load_details"):
            return details_from_rows(ids, rows)

    # -- maintenance ----------------------------------------------------------------------

    async def prune(
        self, *, older_than: timedelta | None = None, keep_last: int | None = None
    ) -> int:
        if self._executor is None:
            raise self.failure("prune", "the store is not open")
        cutoff = prune_cutoff(older_than, keep_last)
        if cutoff is None and keep_last is None:
            return 0
        bound = None if cutoff is None else iso(cutoff)
        args = (bound, bound, keep_last, keep_last)
        return await self._run("prune", lambda c: _prune(c, args))

    async def health(self) -> str:
        """``"ok"``, or what is wrong (closed, the :attr:`outage` of writes, an unreadable
        file)."""
        if self._executor is None:
            return "closed"
        if self.outage is not None:
            return self.outage
        try:
            async with asyncio.timeout(HEALTH_TIMEOUT):
                await self._rows("health", "SELECT 1", ())
        except StorageError as e:
            return str(e)
        except TimeoutError:
            return f"{self.name}: the file did not answer within {HEALTH_TIMEOUT:g} s"
        return "ok"

    async def schema_version(self) -> int:
        rows = await self._rows("schema_version", "SELECT MAX(version) FROM schema_migrations", ())
        return int(rows[0][0] or 0)
