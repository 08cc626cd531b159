"""The PostgreSQL store (asyncpg), used when ``DATABASE_URL`` is set.

The tables keep the names and columns of the original implementation (CONTRACT §11), so
its data stays readable; :mod:`mail.db.migrations` adds what it lacked. asyncpg is
imported when the store opens, never at import time.

**Shared with v1.3.6.** On a database that still holds the original's tables in the form
a v1.3.6 server uses (:func:`mail.db.migrations.shares_with_v1`), the store is
:attr:`~mail.db.store.TaskStore.v1_readable`: it writes each agent's history as one whole
row (the older rows of that task and agent deleted, so that v1.3.6, which concatenates
a task's rows per agent, reads it once), and it reads what v1.3.6 wrote: a task's state
from ``is_running``/``completed`` when v1.3.6 left ``state`` NULL or marked the task
completed since, and events numbered in the order they were stored (v1.3.6 leaves
``seq`` NULL). The runtime then stores events, histories and responses whole
(:class:`mail.core._recorder.StoreRecorder`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from mail._text import text_problem
from mail.db import migrations
from mail.db._sql import (
    DetailKind,
    Dialect,
    Prepared,
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
from mail.errors import ConfigurationError, StorageError

__all__ = ["PostgresStore"]

_DIALECT = Dialect(
    save_task="""INSERT INTO tasks (swarm_name, caller_role, caller_id, task_id, task_owner,
        task_contributors, remote_swarms, state, title, start_time, updated_at, is_running,
        completed, request) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, $9, $10,
        $11, $12, $13, $14::jsonb)
        ON CONFLICT (task_id, swarm_name, caller_role, caller_id) DO UPDATE SET
        task_owner = excluded.task_owner, task_contributors = excluded.task_contributors,
        remote_swarms = excluded.remote_swarms, state = excluded.state, title = excluded.title,
        start_time = excluded.start_time, updated_at = excluded.updated_at,
        is_running = excluded.is_running, completed = excluded.completed,
        request = excluded.request""",
    # event_id is the SSE id the event is sent with: its sequence number
    append_event="""INSERT INTO task_events (swarm_name, caller_role, caller_id, task_id,
        seq, event_type, event_data, event_id)
        VALUES ($1, $2, $3, $4, $5::bigint, $6, $7, $5::bigint::text)
        ON CONFLICT (swarm_name, caller_role, caller_id, task_id, seq) DO NOTHING""",
    save_history="""INSERT INTO agent_histories (swarm_name, caller_role, caller_id, task_id,
        agent_name, tool_format, history, updated_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, NOW())
        ON CONFLICT (swarm_name, caller_role, caller_id, task_id, agent_name) DO UPDATE SET
        tool_format = excluded.tool_format, history = excluded.history, updated_at = NOW()""",
    save_response="""INSERT INTO task_responses (swarm_name, caller_role, caller_id, task_id,
        response) VALUES ($1, $2, $3, $4, $5::jsonb)
        ON CONFLICT (task_id, swarm_name, caller_role, caller_id) DO UPDATE SET
        response = excluded.response""",
    delete_breakpoints="""DELETE FROM task_breakpoints
        WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4""",
    insert_breakpoint="""INSERT INTO task_breakpoints (swarm_name, caller_role, caller_id,
        task_id, position, call_id, agent_name, tool_call, normalized)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb)""",
    delete_stash="""DELETE FROM task_stash
        WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4""",
    insert_stash="""INSERT INTO task_stash (swarm_name, caller_role, caller_id, task_id,
        position, priority, seq, message) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)""",
    when=utc,
    history_time=False,
)
# Shared with v1.3.6, which orders a task's events by created_at alone: each row gets the
# time it is inserted, not the transaction's; histories have no unique index to upsert on,
# the task's older rows of the agent go.
_SHARED_DIALECT = dataclasses.replace(
    _DIALECT,
    append_event="""INSERT INTO task_events (swarm_name, caller_role, caller_id, task_id,
        seq, event_type, event_data, event_id, created_at)
        VALUES ($1, $2, $3, $4, $5::bigint, $6, $7, $5::bigint::text, clock_timestamp())
        ON CONFLICT (swarm_name, caller_role, caller_id, task_id, seq) DO NOTHING""",
    save_history="""WITH gone AS (DELETE FROM agent_histories
            WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4
              AND agent_name = $5)
        INSERT INTO agent_histories (swarm_name, caller_role, caller_id, task_id,
            agent_name, tool_format, history, updated_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, NOW())""",
)
# the state of a task v1.3.6 wrote (NULL) or completed (is_running and completed only)
_STATE = """CASE WHEN state IS NULL OR (state = 'running' AND completed)
    THEN CASE WHEN completed THEN 'completed' ELSE 'running' END ELSE state END"""
_TASK_COLUMNS = f"""task_id, task_owner, task_contributors::text, remote_swarms::text,
    {_STATE}, title, start_time, updated_at, request::text"""
_LOAD_TASKS = f"""SELECT {_TASK_COLUMNS} FROM tasks
    WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3
    ORDER BY start_time, created_at"""
_LOAD_TASK = f"""SELECT {_TASK_COLUMNS} FROM tasks
    WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4"""
_LOAD_EVENTS = """SELECT seq, event_type, event_data FROM task_events
    WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4
      AND seq > $5 ORDER BY seq LIMIT $6"""
# shared with v1.3.6: every row numbered in the order stored (created_at is the
# transaction's: one write's events are ordered by their seq)
_SHARED_ORDER = "ORDER BY created_at, seq NULLS FIRST, id"
_LOAD_SHARED_EVENTS = f"""SELECT seq, event_type, event_data FROM (
    SELECT row_number() OVER ({_SHARED_ORDER}) AS seq, COALESCE(event_type, '') AS event_type,
           COALESCE(event_data, '{{}}') AS event_data
    FROM task_events
    WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4) AS e
    WHERE seq > $5 ORDER BY seq LIMIT $6"""
# load_details: one query per table for a list of ids ($4), each row led by its task id,
# in the per-task order within a task
_WHERE_IDS = """WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3
    AND task_id = ANY($4::text[])"""
_LOAD_DETAILS: dict[DetailKind, str] = {
    "events": f"""SELECT task_id, seq, event_type, event_data FROM task_events {_WHERE_IDS}
        ORDER BY task_id, seq""",
    "histories": f"""SELECT task_id, agent_name, history::text FROM agent_histories
        {_WHERE_IDS} ORDER BY task_id, created_at""",
    "response": f"SELECT task_id, response::text FROM task_responses {_WHERE_IDS}",
    "breakpoints": f"""SELECT task_id, call_id, agent_name, tool_call::text, normalized::text
        FROM task_breakpoints {_WHERE_IDS} ORDER BY task_id, position""",
    "stash": f"""SELECT task_id, priority, seq, message::text FROM task_stash {_WHERE_IDS}
        ORDER BY task_id, position""",
}
_LOAD_SHARED_DETAILS: dict[DetailKind, str] = {
    **_LOAD_DETAILS,
    "events": f"""SELECT task_id, row_number() OVER (PARTITION BY task_id {_SHARED_ORDER}),
            COALESCE(event_type, ''), COALESCE(event_data, '{{}}')
        FROM task_events {_WHERE_IDS} ORDER BY task_id, 2""",
}
# Finished tasks of every caller, newest first, ranked; kept are the young and the top ones.
_PRUNE_CANDIDATES = """SELECT swarm_name, caller_role, caller_id, task_id FROM (
    SELECT swarm_name, caller_role, caller_id, task_id, updated_at,
           ROW_NUMBER() OVER (ORDER BY updated_at DESC, start_time DESC) AS rank
    FROM tasks WHERE {state} IN ('completed', 'failed', 'cancelled')) AS finished
    WHERE ($1::timestamptz IS NOT NULL AND updated_at < $1)
       OR ($2::bigint IS NOT NULL AND rank > $2)"""
#: the finished task a prune statement deletes the rows of
_DOOMED_TASK = """SELECT swarm_name, caller_role, caller_id, task_id FROM tasks
        WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4
          AND {state} IN ('completed', 'failed', 'cancelled')"""


# One statement per table, each run with (swarm, role, id, task_id).
_PRUNE_DELETES = prune_deletes(_DOOMED_TASK)


def _describe(dsn: str | None) -> str:
    """``host:port/database`` of a DSN, without user or password."""
    if not dsn:
        return "postgres store"
    parts = urlsplit(dsn)
    port = f":{parts.port}" if parts.port else ""
    return f"postgres store ({parts.hostname or 'localhost'}{port}{parts.path})"


def _refused(error: BaseException) -> bool:
    """True when the database refused a statement (a task's rows are at fault: a value
    it cannot hold, a constraint, a size), False when the connection or the server
    failed (nothing could be stored; a later try may succeed)."""
    import asyncpg  # type: ignore[import-untyped]  # noqa: PLC0415  # loaded by open()

    exceptions = asyncpg.exceptions
    return isinstance(error, asyncpg.PostgresError) and not isinstance(
        error,
        asyncpg.PostgresConnectionError
        | exceptions.OperatorInterventionError
        | exceptions.InsufficientResourcesError
        | exceptions.TransactionRollbackError  # a deadlock, a serialization failure
        | exceptions.LockNotAvailableError
        | exceptions.ReadOnlySQLTransactionError,  # a standby, during a fail-over
    )


# the tasks (of one caller) whose lease is still (owner, gen): their rows are written, and
# their lease rows stay locked until the transaction ends, so no replica claims them
# meanwhile (a claim skips locked rows, a take waits for them)
_HELD = """SELECT l.task_id FROM cluster_task_leases AS l
    JOIN unnest($4::text[], $5::text[], $6::bigint[]) AS h(task_id, owner, gen)
      ON l.task_id = h.task_id AND l.owner = h.owner AND l.gen = h.gen
    WHERE l.swarm_name = $1 AND l.caller_role = $2 AND l.caller_id = $3
    FOR SHARE OF l"""


async def _transaction(
    conn: Any, key: CallerKey, prepared: Sequence[Prepared], dialect: Dialect
) -> set[str]:
    """Write ``prepared`` in one transaction, but the tasks whose lease is gone: returns
    their ids (nothing of them is written)."""
    async with conn.transaction():
        fenced = [p for p in prepared if p.lease is not None]
        lost: set[str] = set()
        if fenced:
            held = await conn.fetch(
                _HELD,
                *key_params(key),
                [p.task_id for p in fenced],
                [p.lease[0] for p in fenced if p.lease is not None],
                [p.lease[1] for p in fenced if p.lease is not None],
            )
            lost = {p.task_id for p in fenced} - {r["task_id"] for r in held}
        rows = combined([p for p in prepared if p.task_id not in lost])
        for sql, params in rows.statements(dialect):
            await conn.executemany(sql, params)
    return lost


def _retrieved(task: asyncio.Task[Any]) -> None:
    """Mark a health probe's failure as seen (:meth:`PostgresStore.health` reports it)."""
    if not task.cancelled():
        task.exception()


class PostgresStore(TaskStore):
    """A :class:`~mail.db.store.TaskStore` in PostgreSQL through an asyncpg pool.

    Give either ``dsn`` (the store creates its pool on :meth:`open`, with ``min_size`` /
    ``max_size`` connections, ``command_timeout`` seconds per statement, ``connect_timeout``
    per connection attempt and ``application_name=mail-server``, and closes it on
    :meth:`close`) or an existing asyncpg ``pool`` (used, never closed). Writes run one at
    a time, in call order; a read waits for the writes called before it. Every method
    raises :class:`mail.errors.StorageError` naming the server and the operation (never the
    password). Giving both or neither of ``dsn`` and ``pool`` raises
    :class:`mail.errors.ConfigurationError`.
    """

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
    ) -> None:
        if (dsn is None) == (pool is None):
            raise ConfigurationError("postgres store: give exactly one of dsn and pool")
        super().__init__()
        self.name = _describe(dsn)
        self._dsn = dsn
        self._given_pool: Any | None = pool
        self._pool: Any | None = None
        self._pool_options = {
            "min_size": min_size,
            "max_size": max_size,
            "command_timeout": command_timeout,
            "timeout": connect_timeout,
            "server_settings": {"application_name": "mail-server"},
        }
        self._writes = asyncio.Lock()  # fair: writes apply in call order
        self._probe: asyncio.Task[Any] | None = None  # health's query, while it runs
        self._dialect = _DIALECT
        self._load_events = _LOAD_EVENTS
        self._load_details = _LOAD_DETAILS
        self._prune_candidates = _PRUNE_CANDIDATES.format(state="state")
        self._prune_deletes = tuple(sql.format(state="state") for sql in _PRUNE_DELETES)

    def _share_with_v1(self, shared: bool) -> None:
        """Use the statements of a database shared with v1.3.6 (or not)."""
        self.v1_readable = shared
        self._dialect = _SHARED_DIALECT if shared else _DIALECT
        self._load_events = _LOAD_SHARED_EVENTS if shared else _LOAD_EVENTS
        self._load_details = _LOAD_SHARED_DETAILS if shared else _LOAD_DETAILS
        state = _STATE if shared else "state"
        self._prune_candidates = _PRUNE_CANDIDATES.format(state=state)
        self._prune_deletes = tuple(sql.format(state=state) for sql in _PRUNE_DELETES)

    def __repr__(self) -> str:
        return f"PostgresStore({self.name!r})"

    # -- lifecycle ------------------------------------------------------------------------

    async def open(self) -> None:
        """Create the pool (unless one was given) and apply pending migrations."""
        if self._pool is not None:
            return
        with self.reported("open"):
            try:
                import asyncpg  # noqa: PLC0415  # imported on open (STYLE §4)
            except ImportError as e:
                raise self.failure("open", "asyncpg is not installed") from e
            pool = self._given_pool
            if pool is None:
                pool = await asyncpg.create_pool(self._dsn, **self._pool_options)
            try:
                async with pool.acquire() as conn:
                    await migrations.apply_postgres(conn)
                    self._share_with_v1(await migrations.shares_with_v1(conn))
            except BaseException:
                if self._given_pool is None:
                    await pool.close()
                raise
        self._pool = pool

    async def upgrade_from_v1(self) -> list[int]:
        """Apply the migrations a database shared with v1.3.6 was spared
        (:data:`mail.db.migrations.UPGRADE_FROM_V1` says what they change); return the
        versions applied (none when the database was not shared). Afterwards a v1.3.6
        server can no longer write to it. Raises :class:`mail.errors.StorageError`."""
        pool = self._pool_for("upgrade_from_v1")
        async with self._writes:
            with self.reported("upgrade_from_v1"):
                async with pool.acquire() as conn:
                    applied = await migrations.apply_postgres(conn, upgrade_from_v1=True)
                    self._share_with_v1(await migrations.shares_with_v1(conn))
        return applied

    async def close(self) -> None:
        """Let the writes under way finish, then close the pool if the store created it."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        probe, self._probe = self._probe, None
        if probe is not None:
            probe.cancel()
        async with self._writes:
            if self._given_pool is None:
                await pool.close()

    # -- plumbing -------------------------------------------------------------------------

    def _pool_for(self, op: str) -> Any:
        if self._pool is None:
            raise self.failure(op, "the store is not open")
        return self._pool

    def pool(self, op: str) -> Any:
        """The open asyncpg pool (for the tables other packages keep in this database:
        MAP Mail's conversation records). Raises :class:`mail.errors.StorageError` naming
        ``op`` when the store is not open."""
        return self._pool_for(op)

    async def _fetch(self, op: str, sql: str, *args: Any) -> list[Any]:
        pool = self._pool_for(op)
        async with self._writes:  # after the writes called before this read
            pass
        with self.reported(op):
            rows: list[Any] = await pool.fetch(sql, *args)
            return rows

    async def _save(
        self, op: str, key: CallerKey, changes: Sequence[TaskChanges]
    ) -> dict[str, StorageError]:
        pool = self._pool_for(op)
        prepared, failures = prepare(self, op, key, changes, self._dialect, leases=True)
        if not prepared:  # (encoded before any await)
            return failures
        async with self._writes:
            with self.reported(op):
                failed, lost = await self._apply(pool, key, prepared)
        failures.update({task_id: self.refusal(op, e) for task_id, e in failed.items()})
        for task in prepared:
            if task.task_id in lost and task.lease is not None:
                failures[task.task_id] = self.lease_lost(op, task.task_id, task.lease[0])
        return failures

    async def _apply(
        self, pool: Any, key: CallerKey, prepared: list[Prepared]
    ) -> tuple[dict[str, Exception], set[str]]:
        """Every task's rows in one transaction; if the database refused some, each task
        in one of its own. Returns what it refused, by task id, and the tasks whose
        lease was lost (:data:`_HELD`). Raises when the database failed."""
        async with pool.acquire() as conn:
            try:
                return {}, await _transaction(conn, key, prepared, self._dialect)
            except Exception as e:
                if not _refused(e):
                    raise
                if len(prepared) == 1:
                    return {prepared[0].task_id: e}, set()
            failed: dict[str, Exception] = {}
            lost: set[str] = set()
            for task in prepared:
                try:
                    lost |= await _transaction(conn, key, [task], self._dialect)
                except Exception as e:
                    if not _refused(e):
                        raise
                    failed[task.task_id] = e
            return failed, lost

    # -- reads ----------------------------------------------------------------------------

    async def load_tasks(self, key: CallerKey) -> list[TaskRow]:
        rows = await self._fetch("load_tasks", _LOAD_TASKS, *key_params(key))
        with self.reported("load_tasks"):
            return [task_from_row(r, utc) for r in rows]

    async def load_task(self, key: CallerKey, task_id: str) -> TaskRow | None:
        if text_problem(task_id) is not None:  # no such id is stored (PostgreSQL refuses it)
            return None
        rows = await self._fetch("load_task", _LOAD_TASK, *key_params(key), task_id)
        with self.reported("load_task"):
            return task_from_row(rows[0], utc) if rows else None

    async def load_events(
        self, key: CallerKey, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[EventRow]:
        if text_problem(task_id) is not None:  # no such id is stored
            return []
        rows = await self._fetch(
            "load_events", self._load_events, *key_params(key), task_id, after, limit
        )
        with self.reported("load_events"):
            return [event_from_row(task_id, *row) for row in rows]

    async def load_details(self, key: CallerKey, task_ids: Sequence[str]) -> dict[str, TaskDetails]:
        ids = [t for t in dict.fromkeys(task_ids) if text_problem(t) is None]  # (the stored)
        results = await asyncio.gather(
            *(
                self._fetch("load_details", sql, *key_params(key), ids)
                for sql in self._load_details.values()
            )
        )
        with self.reported("load_details"):
            return details_from_rows(ids, dict(zip(self._load_details, results, strict=True)))

    # -- maintenance ----------------------------------------------------------------------

    async def prune(
        self, *, older_than: timedelta | None = None, keep_last: int | None = None
    ) -> int:
        pool = self._pool_for("prune")
        cutoff = prune_cutoff(older_than, keep_last)
        if cutoff is None and keep_last is None:
            return 0
        async with self._writes:
            with self.reported("prune"):
                async with pool.acquire() as conn, conn.transaction():
                    doomed = await conn.fetch(self._prune_candidates, cutoff, keep_last)
                    params = [tuple(row) for row in doomed]
                    for sql in self._prune_deletes if params else ():
                        await conn.executemany(sql, params)
        return len(doomed)

    async def health(self) -> str:
        """``"ok"``, or what is wrong (closed, the :attr:`outage` of writes, no answer
        within :data:`~mail.db.store.HEALTH_TIMEOUT` seconds)."""
        pool = self._pool
        if pool is None:
            return "closed"
        if self.outage is not None:
            return self.outage
        # The probe runs in a task of its own and is not cancelled when it takes too long:
        # a query cancelled on a connection that gets no answer (a network partition) is
        # released only once asyncpg's cancel request is answered too, up to
        # command_timeout later. The next call waits on the same probe, so they never pile up.
        probe = self._probe
        if probe is None or probe.done():
            probe = asyncio.get_running_loop().create_task(
                pool.fetchval("SELECT 1"), name="mail-postgres-health"
            )
            probe.add_done_callback(_retrieved)
            self._probe = probe
        await asyncio.wait({probe}, timeout=HEALTH_TIMEOUT)
        if not probe.done():
            return f"{self.name}: the database did not answer within {HEALTH_TIMEOUT:g} s"
        error = None if probe.cancelled() else probe.exception()
        if error is not None:
            return f"{self.name}: health check failed: {str(error) or type(error).__name__}"
        return "ok"

    async def schema_version(self) -> int:
        rows = await self._fetch("schema_version", "SELECT MAX(version) FROM schema_migrations")
        return int(rows[0][0] or 0)
