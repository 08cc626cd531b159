"""PostgreSQL writes by binary COPY: the cheapest way in, for the server and for PostgreSQL.

A batch's rows reach PostgreSQL three ways:

- **events** go straight into ``task_events`` by ``COPY ... FROM STDIN (FORMAT binary)``
  (asyncpg's ``copy_records_to_table``). Against one ``INSERT ... SELECT FROM unnest(...)``
  over arrays, this halves what asyncpg spends encoding them (no per-element array checks)
  and takes about a third off the backend's CPU per row;
- **upserts** (tasks, agent histories, final responses) need ``ON CONFLICT DO UPDATE``,
  which COPY lacks: their rows are copied into one temporary staging table
  (``ON COMMIT DELETE ROWS``: PostgreSQL empties it at every commit) and merged by one
  prepared statement whose three ``INSERT ... SELECT ... ON CONFLICT`` run as data-modifying
  CTEs. Three tables cost two round trips instead of three;
- everything else (deletes, breakpoints, stashes, prune) runs as before (see ``_pg_bulk``),
  after the upserts staged so far are merged, so the statements keep their order.

COPY has no ``ON CONFLICT DO NOTHING``: a batch whose events are stored already (a write
retried after its commit went through) fails with a unique violation; so does a batch
whose connection lost the staging table. :func:`copy_failed` tells those apart, and the
store runs the batch again the usual way, which skips stored events.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from mail.db._pg_bulk import bulk_forms, bulk_statement

__all__ = ["CopyWriter", "PgApplier", "copy_failed"]

#: Runs one statement for its rows the usual way (arrays or ``executemany``).
RowRunner = Callable[[Any, str, Sequence[Sequence[Any]]], Awaitable[None]]

_EVENT_COLUMNS = (
    "swarm_name",
    "caller_role",
    "caller_id",
    "task_id",
    "seq",
    "event_type",
    "event_data",
    "event_id",
)
_STAGE = "mail_stage"
# One row per upserted row, ``kind`` saying which table it is for; the columns a kind
# does not use stay NULL (4 bytes each in binary COPY).
_STAGE_COLUMNS = (
    "kind",
    "swarm_name",
    "caller_role",
    "caller_id",
    "task_id",
    "t1",
    "t2",
    "t3",
    "j1",
    "j2",
    "ts1",
    "ts2",
    "b1",
    "b2",
)
_CREATE_STAGE = f"""CREATE TEMP TABLE IF NOT EXISTS {_STAGE} (
    kind smallint NOT NULL, swarm_name text NOT NULL, caller_role text NOT NULL,
    caller_id text NOT NULL, task_id text NOT NULL, t1 text, t2 text, t3 text,
    j1 jsonb, j2 jsonb, ts1 timestamptz, ts2 timestamptz, b1 boolean, b2 boolean)
    ON COMMIT DELETE ROWS"""
_TASK, _HISTORY, _RESPONSE = 1, 2, 3
# Each CTE ends with the ON CONFLICT clause of the store's per-row statement (see
# _merge_statement), so both ways of writing a row resolve a conflict alike.
_MERGE = f"""WITH
tasks_in AS (
    INSERT INTO tasks (swarm_name, caller_role, caller_id, task_id, task_owner,
        task_contributors, remote_swarms, state, title, start_time, updated_at, is_running,
        completed)
    SELECT swarm_name, caller_role, caller_id, task_id, t1, j1, j2, t2, t3, ts1, ts2, b1, b2
    FROM {_STAGE} WHERE kind = {_TASK}
    {{tasks}}),
histories_in AS (
    INSERT INTO agent_histories (swarm_name, caller_role, caller_id, task_id, agent_name,
        tool_format, history, updated_at)
    SELECT swarm_name, caller_role, caller_id, task_id, t1, t2, j1, NOW()
    FROM {_STAGE} WHERE kind = {_HISTORY}
    {{histories}}),
responses_in AS (
    INSERT INTO task_responses (swarm_name, caller_role, caller_id, task_id, response)
    SELECT swarm_name, caller_role, caller_id, task_id, j1
    FROM {_STAGE} WHERE kind = {_RESPONSE}
    {{responses}})
SELECT 1"""  # noqa: S608  # constants of this module and of the store


def _merge_statement(save_task: str, save_history: str, save_response: str) -> str:
    """:data:`_MERGE` with the ON CONFLICT clauses of the per-row statements."""

    def conflict(sql: str) -> str:
        return sql[sql.index("ON CONFLICT") :]

    return _MERGE.format(
        tasks=conflict(save_task),
        histories=conflict(save_history),
        responses=conflict(save_response),
    )


_UNIQUE_VIOLATION = "23505"
_UNDEFINED_TABLE = "42P01"


def _task_row(r: Sequence[Any]) -> tuple[Any, ...]:
    # (swarm, role, caller, task, owner, contributors, remote, state, title, start,
    #  updated, running, completed), as _postgres' save_task takes them
    return (_TASK, r[0], r[1], r[2], r[3], r[4], r[7], r[8], r[5], r[6], r[9], r[10], r[11], r[12])


def _history_row(r: Sequence[Any]) -> tuple[Any, ...]:
    # (swarm, role, caller, task, agent, tool_format, history)
    return (_HISTORY, r[0], r[1], r[2], r[3], r[4], r[5], None, r[6], None, None, None, None, None)


def _response_row(r: Sequence[Any]) -> tuple[Any, ...]:
    # (swarm, role, caller, task, response)
    return (_RESPONSE, r[0], r[1], r[2], r[3], None, None, None, r[4], None, None, None, None, None)


def copy_failed(error: BaseException) -> bool:
    """True when ``error`` is one a write by :class:`CopyWriter` may meet where the usual
    statements would not: events stored already, or no staging table on the connection."""
    return getattr(error, "sqlstate", None) in (_UNIQUE_VIOLATION, _UNDEFINED_TABLE)


class CopyWriter:
    """Applies a write's statements by COPY where it can (see the module docstring).

    ``append_event``, ``save_task``, ``save_history`` and ``save_response`` are the store's
    per-row statements (their parameters in the order the store's dialect gives them);
    ``run`` runs any statement the usual way. One writer serves one writing connection at
    a time: it creates the staging table when it meets a new one.
    """

    def __init__(
        self,
        *,
        append_event: str,
        save_task: str,
        save_history: str,
        save_response: str,
        run: RowRunner,
    ) -> None:
        self._event_sql = append_event
        self._key_width = {save_task: 4, save_history: 5, save_response: 4}
        self._stagers: dict[str, Callable[[Sequence[Any]], tuple[Any, ...]]] = {
            save_task: _task_row,
            save_history: _history_row,
            save_response: _response_row,
        }
        self._run = run
        self._merge_sql = _merge_statement(save_task, save_history, save_response)
        self._staged_on: Any = None

    def forget(self) -> None:
        """Create the staging table again before the next write (the connection may have
        lost it)."""
        self._staged_on = None

    async def apply(self, conn: Any, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Run ``statements`` on ``conn`` in one transaction, in their order."""
        if self._staged_on is not conn:
            await conn.execute(_CREATE_STAGE)
            self._staged_on = conn
        async with conn.transaction():
            staged: dict[str, list[Sequence[Any]]] = {}
            for sql, rows in statements:
                if sql == self._event_sql:
                    await self._copy_events(conn, rows)
                elif sql in self._stagers:
                    staged.setdefault(sql, []).extend(rows)
                else:
                    await self._merge(conn, staged)
                    staged = {}
                    await self._run(conn, sql, rows)
            await self._merge(conn, staged)

    async def _copy_events(self, conn: Any, rows: Sequence[Sequence[Any]]) -> None:
        # event_id is the SSE id the event is sent with: its sequence number
        records = [(*row, str(row[4])) for row in rows]
        await conn.copy_records_to_table("task_events", records=records, columns=_EVENT_COLUMNS)

    async def _merge(self, conn: Any, staged: dict[str, list[Sequence[Any]]]) -> None:
        """Copy the staged upserts in and merge them; a statement whose rows repeat a key
        (``ON CONFLICT DO UPDATE`` cannot touch a row twice in one statement) runs row by
        row instead, in order."""
        records: list[tuple[Any, ...]] = []
        for sql, rows in staged.items():
            width = self._key_width[sql]
            if len({tuple(row[:width]) for row in rows}) < len(rows):
                await self._run(conn, sql, rows)
                continue
            stage = self._stagers[sql]
            records += [stage(row) for row in rows]
        if records:
            await conn.copy_records_to_table(_STAGE, records=records, columns=_STAGE_COLUMNS)
            await conn.fetch(self._merge_sql)


class PgApplier:
    """Applies the writes of a PostgreSQL store on one connection at a time: by COPY
    (:class:`CopyWriter`), or, when COPY cannot (:func:`copy_failed`), by the usual
    statements (over arrays where :mod:`mail.db._pg_bulk` has a form). ``sql`` names the
    store's statements: ``save_task``, ``append_event``, ``save_history``,
    ``save_response``, ``delete_breakpoints``, ``delete_stash``."""

    def __init__(self, sql: Mapping[str, str]) -> None:
        self._bulk = bulk_forms(**sql)
        self._copier = CopyWriter(
            append_event=sql["append_event"],
            save_task=sql["save_task"],
            save_history=sql["save_history"],
            save_response=sql["save_response"],
            run=self._run,
        )

    async def apply(self, conn: Any, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Run ``statements`` on ``conn`` in one transaction, in their order."""
        try:
            await self._copier.apply(conn, statements)
        except Exception as e:
            if not copy_failed(e):
                raise
            # events stored already, or the staging table gone: the usual statements
            self._copier.forget()
            await self._apply(conn, statements)

    async def _run(self, conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``sql`` for ``rows``: once over arrays when it has an array form."""
        bulk = bulk_statement(self._bulk, sql, rows)
        if bulk is None:
            await conn.executemany(sql, rows)
        else:
            await conn.execute(bulk[0], *bulk[1])

    async def _apply(self, conn: Any, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Run ``statements`` on ``conn`` atomically, without COPY."""
        if len(statements) == 1:  # one statement is atomic already
            await self._run(conn, *statements[0])
            return
        async with conn.transaction():
            for sql, rows in statements:
                await self._run(conn, sql, rows)
