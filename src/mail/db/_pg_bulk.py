"""PostgreSQL writes of many rows as one statement over arrays (``unnest``).

Batches go in by COPY first (:mod:`mail.db._pg_copy`); these statements carry the deletes,
breakpoints and stashes, and a whole batch when COPY cannot (events stored already).

``executemany`` runs a statement once per row: the server pays its executor start-up,
locks and plan for each of a batch's hundred rows. The statements here take one array per
column instead and run once per batch, so the server's cost per row is the insert itself
(about a third of the CPU per task in the HTTP benchmark). The results are those of
running the per-row statement row by row:

- ``ON CONFLICT DO NOTHING`` (events): the first row of a key wins, as in a row-by-row run;
  repeated keys within one batch are dropped here first, so no ordering of ``unnest`` is
  relied upon;
- ``ON CONFLICT DO UPDATE`` (upserts): PostgreSQL refuses to update a row twice in one
  statement, so a batch that repeats a key keeps the per-row statement (rare: the runtime
  sends each task once per batch);
- deletes by key: repeating a key changes nothing.

When every row is of the same caller (the usual batch: one runtime's), the three caller
columns go as three values instead of three arrays, which asyncpg encodes for less.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["BulkForm", "bulk_forms", "bulk_statement"]

#: the caller columns every row starts with, then the task id
_KEY = ("swarm_name", "caller_role", "caller_id", "task_id")


def _insert(
    table: str, columns: dict[str, str], select: str, conflict: str, *, extra: str = ""
) -> tuple[str, str]:
    """An ``INSERT ... SELECT FROM unnest(...)`` over ``columns`` (name: type, in parameter
    order) and the ``extra`` columns, as ``(every parameter an array, the caller columns
    given as values)``. ``select`` lists the inserted values, ``{p1}`` ... ``{pN}``
    standing for the parameters.
    """
    names = list(columns)
    types = list(columns.values())

    def text(scalars: int) -> str:
        arrays = [f"${k + 1}::{types[k]}[]" for k in range(scalars, len(names))]
        aliases = [f"p{k + 1}" for k in range(scalars, len(names))]
        values = {f"p{k + 1}": f"${k + 1}::{types[k]}" for k in range(scalars)}
        values |= {alias: f"u.{alias}" for alias in aliases}
        into = f"{table} ({', '.join(names)}{extra})"
        rows = f"unnest({', '.join(arrays)}) AS u({', '.join(aliases)})"
        # names and types are this module's constants
        return f"INSERT INTO {into} SELECT {select.format(**values)} FROM {rows} {conflict}"  # noqa: S608

    return text(0), text(3)


def _delete(table: str) -> tuple[str, str]:
    def text(scalars: int) -> str:
        arrays = [f"${k + 1}::text[]" for k in range(scalars, 4)]
        aliases = [f"p{k + 1}" for k in range(scalars, 4)]
        match = [f"d.{_KEY[k]} = ${k + 1}" for k in range(scalars)]
        match += [f"d.{_KEY[k]} = u.p{k + 1}" for k in range(scalars, 4)]
        rows = f"unnest({', '.join(arrays)}) AS u({', '.join(aliases)})"
        return f"DELETE FROM {table} AS d USING {rows} WHERE {' AND '.join(match)}"  # noqa: S608

    return text(0), text(3)


_TEXT_KEY = dict.fromkeys(_KEY, "text")
_KEY_VALUES = "{p1}, {p2}, {p3}, {p4}"

_APPEND_EVENTS = _insert(
    "task_events",
    _TEXT_KEY | {"seq": "bigint", "event_type": "text", "event_data": "text"},
    f"{_KEY_VALUES}, {{p5}}, {{p6}}, {{p7}}, {{p5}}::text",
    "ON CONFLICT (swarm_name, caller_role, caller_id, task_id, seq) DO NOTHING",
    extra=", event_id",  # the SSE id: the sequence number
)
_SAVE_TASKS = _insert(
    "tasks",
    _TEXT_KEY
    | {
        "task_owner": "text",
        "task_contributors": "text",
        "remote_swarms": "text",
        "state": "text",
        "title": "text",
        "start_time": "timestamptz",
        "updated_at": "timestamptz",
        "is_running": "bool",
        "completed": "bool",
    },
    f"{_KEY_VALUES}, {{p5}}, {{p6}}::jsonb, {{p7}}::jsonb, {{p8}}, {{p9}}, {{p10}}, "
    "{p11}, {p12}, {p13}",
    """ON CONFLICT (task_id, swarm_name, caller_role, caller_id) DO UPDATE SET
    task_owner = excluded.task_owner, task_contributors = excluded.task_contributors,
    remote_swarms = excluded.remote_swarms, state = excluded.state, title = excluded.title,
    start_time = excluded.start_time, updated_at = excluded.updated_at,
    is_running = excluded.is_running, completed = excluded.completed""",
)
_SAVE_HISTORIES = _insert(
    "agent_histories",
    _TEXT_KEY | {"agent_name": "text", "tool_format": "text", "history": "text"},
    f"{_KEY_VALUES}, {{p5}}, {{p6}}, {{p7}}::jsonb, NOW()",
    """ON CONFLICT (swarm_name, caller_role, caller_id, task_id, agent_name) DO UPDATE SET
    tool_format = excluded.tool_format, history = excluded.history, updated_at = NOW()""",
    extra=", updated_at",
)
_SAVE_RESPONSES = _insert(
    "task_responses",
    _TEXT_KEY | {"response": "text"},
    f"{_KEY_VALUES}, {{p5}}::jsonb",
    """ON CONFLICT (task_id, swarm_name, caller_role, caller_id) DO UPDATE SET
    response = excluded.response""",
)


@dataclass(frozen=True, slots=True)
class BulkForm:
    """The array statements standing for a per-row one: ``sql`` takes every column as an
    array, ``one_caller`` the three caller columns as values.

    ``key``: how many leading parameters are the row's conflict key. ``upsert``: a key's
    rows all apply (``DO UPDATE``), so a batch that repeats a key keeps the per-row
    statement; ``dedupe``: only the first row of a key applies (``DO NOTHING``); neither:
    repeating a key changes nothing (deletes).
    """

    sql: str
    one_caller: str
    key: int
    upsert: bool = False
    dedupe: bool = False


def bulk_forms(
    *,
    save_task: str,
    append_event: str,
    save_history: str,
    save_response: str,
    delete_breakpoints: str,
    delete_stash: str,
) -> dict[str, BulkForm]:
    """The array forms of the PostgreSQL store's per-row statements, by their SQL."""
    return {
        append_event: BulkForm(*_APPEND_EVENTS, key=5, dedupe=True),
        save_task: BulkForm(*_SAVE_TASKS, key=4, upsert=True),
        save_history: BulkForm(*_SAVE_HISTORIES, key=5, upsert=True),
        save_response: BulkForm(*_SAVE_RESPONSES, key=4, upsert=True),
        delete_breakpoints: BulkForm(*_delete("task_breakpoints"), key=4),
        delete_stash: BulkForm(*_delete("task_stash"), key=4),
    }


def bulk_statement(
    forms: dict[str, BulkForm], sql: str, rows: Sequence[Sequence[Any]]
) -> tuple[str, list[Any]] | None:
    """``(array sql, its parameters)`` running ``rows`` of ``sql`` at once, or ``None``
    when it has no array form or (an upsert) repeats a key."""
    form = forms.get(sql)
    if form is None or not rows:
        return None
    if form.upsert or form.dedupe:
        firsts: dict[tuple[Any, ...], Sequence[Any]] = {}
        for row in rows:
            firsts.setdefault(tuple(row[: form.key]), row)
        if len(firsts) < len(rows):
            if form.upsert:
                return None
            rows = list(firsts.values())
    columns: list[Any] = list(zip(*rows, strict=True))
    caller = rows[0][:3]
    if all(c.count(v) == len(rows) for c, v in zip(columns[:3], caller, strict=True)):
        return form.one_caller, [*caller, *columns[3:]]
    return form.sql, columns
