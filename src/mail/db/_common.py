"""Helpers shared by the stores: JSON, UTC datetimes, error mapping, retention arguments."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import orjson

from mail.errors import ConfigurationError, StorageError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from mail.db.store import BreakpointRow, CallerKey, EventRow, StashRow, TaskChanges, TaskRow

_ENCODER = json.JSONEncoder(separators=(",", ":"))


def dumps(value: Any) -> str:
    """Compact JSON; raises ``TypeError`` for what JSON cannot hold.

    orjson (about ten times faster than the standard encoder: every stored event, history
    and message goes through here, on the event loop) writes NaN and the infinities as
    ``null``, as JSON has no such numbers. What it refuses (an integer beyond 64 bits, a
    key that is not a string) goes to the standard encoder, which takes it or says why.
    """
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return _ENCODER.encode(value)


loads = json.loads


def event_json(row: EventRow) -> str:
    """The JSON text stored for an event: the caller's own when given."""
    return row.data_json if row.data_json is not None else dumps(row.data)


def utc(value: datetime) -> datetime:
    """``value`` in UTC (a naive datetime is taken as UTC)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def iso(value: datetime) -> str:
    """Fixed-width ISO-8601 UTC text, so that text order is time order."""
    return utc(value).isoformat(timespec="microseconds")


def iso_now() -> str:
    return iso(datetime.now(UTC))


def from_iso(value: str) -> datetime:
    return utc(datetime.fromisoformat(value))


def prune_cutoff(older_than: timedelta | None, keep_last: int | None) -> datetime | None:
    """Check the retention arguments and return the time before which tasks go."""
    if keep_last is not None and keep_last < 0:
        raise ConfigurationError(f"keep_last must be >= 0, got {keep_last}")
    if older_than is None:
        return None
    return datetime.now(UTC) - older_than


def failure(store: str, op: str, exc: BaseException) -> StorageError:
    """The :class:`StorageError` reporting that ``op`` failed in ``store``."""
    detail = str(exc) or type(exc).__name__
    return StorageError(f"{store}: {op} failed: {detail}")


@contextmanager
def reported(store: str, op: str) -> Iterator[None]:
    """Turn any failure inside the block into a :class:`StorageError` (``from`` it)."""
    try:
        yield
    except (StorageError, ConfigurationError):
        raise
    except Exception as e:
        raise failure(store, op, e) from e


# --- the SQL stores' parameters (the same rows in SQLite and PostgreSQL) --------------------


def key_params(key: CallerKey) -> tuple[str, str, str]:
    """``(swarm_name, caller_role, caller_id)``: the columns every row starts with."""
    return (key.swarm, key.role, key.id)


def task_params(key: CallerKey, task: TaskRow, when: Callable[[datetime], Any]) -> tuple[Any, ...]:
    """The ``tasks`` row; ``when`` encodes datetimes for the backend. ``is_running`` and
    ``completed`` (the original's columns) follow ``state``."""
    running = task.state == "running"
    return (
        *key_params(key),
        task.task_id,
        task.task_owner,
        dumps(list(task.task_contributors)),
        dumps(list(task.remote_swarms)),
        task.state,
        task.title,
        when(task.start_time),
        when(task.updated_at),
        running,
        not running,
    )


def event_params(key: CallerKey, rows: Sequence[EventRow]) -> list[tuple[Any, ...]]:
    k = key_params(key)
    return [(*k, r.task_id, int(r.seq), r.event, event_json(r)) for r in rows]


def breakpoint_params(
    key: CallerKey, task_id: str, rows: Sequence[BreakpointRow]
) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """The task's key columns (for the delete) and its breakpoint rows (for the insert)."""
    k = (*key_params(key), task_id)
    return k, [
        (*k, i, r.call_id, r.agent, dumps(r.call), dumps(r.normalized)) for i, r in enumerate(rows)
    ]


def stash_params(
    key: CallerKey, task_id: str, rows: Sequence[StashRow]
) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """The task's key columns (for the delete) and its stash rows (for the insert)."""
    k = (*key_params(key), task_id)
    return k, [(*k, i, int(r.priority), int(r.seq), dumps(r.message)) for i, r in enumerate(rows)]


def check_changes(changes: TaskChanges) -> None:
    """Raise ``ValueError`` when the record or an event of ``changes`` is another task's
    (the stores apply each task's changes on their own)."""
    task_id = changes.task_id
    if changes.task is not None and changes.task.task_id != task_id:
        raise ValueError(
            f"the record of task {changes.task.task_id!r} in the changes of {task_id!r}"
        )
    for row in changes.events:
        if row.task_id != task_id:
            raise ValueError(f"an event of task {row.task_id!r} in the changes of {task_id!r}")


def task_from_row(row: Sequence[Any], when: Callable[[Any], datetime]) -> TaskRow:
    """A :class:`TaskRow` from the columns the stores' task queries select."""
    from mail.db.store import TaskRow  # noqa: PLC0415  # store imports this module

    return TaskRow(
        task_id=row[0],
        task_owner=row[1],
        task_contributors=loads(row[2]),
        remote_swarms=loads(row[3]),
        state=row[4],
        title=row[5],
        start_time=when(row[6]),
        updated_at=when(row[7]),
    )
