"""Helpers shared by the stores: JSON, UTC datetimes, error mapping, retention arguments,
and the SQL stores' parameters and row decoders."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import orjson

from mail.db.store import BreakpointRow, EventRow, StashRow, TaskChanges, TaskDetails, TaskRow
from mail.errors import ConfigurationError, StorageError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from mail.core._persist import TaskSnapshot, WriteBatch
    from mail.db.store import CallerKey

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


def json_bytes(value: Any) -> str | bytes:
    """:func:`dumps`, as orjson's UTF-8 bytes when it can (no decoding into a ``str``:
    for statements that take either)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return _ENCODER.encode(value)


def loads(text: str) -> Any:
    """Parse stored JSON: orjson, or the standard parser for what orjson refuses (integers
    beyond 64 bits, written by the fallback of :func:`dumps`)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def event_json(row: EventRow) -> str:
    """The JSON text stored for an event: the caller's own when given."""
    return row.data_json if row.data_json is not None else dumps(row.data)


#: event names already made plain by :func:`plain_name`
PLAIN_NAMES: dict[str, str] = {}


def plain_name(name: str) -> str:
    """``name`` as an exact ``str`` (the runtime's event names are ``StrEnum`` members),
    as the SQLite writer process's ``marshal`` takes it."""
    plain = PLAIN_NAMES.get(name)
    if plain is None:
        plain = PLAIN_NAMES[name] = str.__str__(name)
    return plain


def utc(value: datetime) -> datetime:
    """``value`` in UTC (a naive datetime is taken as UTC)."""
    tz = value.tzinfo
    if tz is UTC:  # the runtime's own datetimes: nothing to convert
        return value
    if tz is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def iso(value: datetime) -> str:
    """Fixed-width ISO-8601 UTC text, so that text order is time order."""
    value = utc(value)
    if value.microsecond:
        # orjson writes an aware UTC datetime exactly as isoformat() does, in a sixth of
        # the time (isoformat formats through printf); it leaves out zero microseconds
        return orjson.dumps(value)[1:-1].decode()
    return value.isoformat(timespec="microseconds")


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


def task_params(
    key: CallerKey, task: TaskRow | TaskSnapshot, when: Callable[[datetime], Any]
) -> tuple[Any, ...]:
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


def event_from_row(task_id: str, seq: int, name: str, data: str) -> EventRow:
    """An :class:`EventRow` from ``seq, event_type, event_data``."""
    return EventRow(task_id=task_id, seq=seq, event=name, data=loads(data), data_json=data)


def breakpoint_from_row(call_id: str, agent: str, call: str, normalized: str) -> BreakpointRow:
    """A :class:`BreakpointRow` from ``call_id, agent_name, tool_call, normalized``."""
    return BreakpointRow(
        call_id=call_id, agent=agent, call=loads(call), normalized=loads(normalized)
    )


def stash_from_row(priority: int, seq: int, message: str) -> StashRow:
    """A :class:`StashRow` from ``priority, seq, message``."""
    return StashRow(priority=priority, seq=seq, message=loads(message))


def response_from_text(text: str) -> dict[str, Any]:
    return dict(loads(text))


#: The five tables :meth:`~mail.db.store.TaskStore.load_details` reads, by the name of the
#: :class:`TaskDetails` field each fills.
DetailKind = Literal["events", "histories", "response", "breakpoints", "stash"]


def details_from_rows(
    task_ids: Iterable[str], rows: Mapping[DetailKind, Iterable[Sequence[Any]]]
) -> dict[str, TaskDetails]:
    """The SQL stores' :meth:`~mail.db.store.TaskStore.load_details` result from the rows
    of their five detail queries, each row the per-task query's columns after ``task_id``
    and each kind in the per-task order within a task."""
    found: dict[str, TaskDetails] = {}

    def of(task_id: str) -> TaskDetails:
        details = found.get(task_id)
        if details is None:
            details = found[task_id] = TaskDetails()
        return details

    for task_id, *event in rows["events"]:
        of(task_id).events.append(event_from_row(task_id, *event))
    for task_id, agent, history in rows["histories"]:
        of(task_id).histories[agent] = loads(history)
    for task_id, response in rows["response"]:
        of(task_id).response = response_from_text(response)
    for task_id, *call in rows["breakpoints"]:
        of(task_id).breakpoints.append(breakpoint_from_row(*call))
    for task_id, *stashed in rows["stash"]:
        of(task_id).stash.append(stash_from_row(*stashed))
    return {task_id: found[task_id] for task_id in dict.fromkeys(task_ids) if task_id in found}


def changes_from_batch(batch: WriteBatch) -> dict[str, TaskChanges]:
    """A runtime's :class:`~mail.core._persist.WriteBatch` as one :class:`TaskChanges` per
    task (the form :meth:`~mail.db.store.TaskStore.save_changes` takes), by task id."""
    changes: dict[str, TaskChanges] = {}

    def of(task_id: str) -> TaskChanges:
        found = changes.get(task_id)
        if found is None:
            found = changes[task_id] = TaskChanges(task_id=task_id)
        return found

    for t in batch.tasks:
        of(t.task_id).task = TaskRow(
            task_id=t.task_id,
            task_owner=t.task_owner,
            task_contributors=t.task_contributors,
            remote_swarms=t.remote_swarms,
            state=t.state,
            title=t.title,
            start_time=t.start_time,
            updated_at=t.updated_at,
        )
    for task_id, events in batch.events.items():
        of(task_id).events = [
            EventRow(task_id=task_id, seq=e.seq or 0, event=e.event, data=e.data()) for e in events
        ]
    for task_id, agent, history, tool_format in batch.histories:
        of(task_id).histories.append((agent, history, tool_format))
    for task_id, message in batch.responses:
        of(task_id).response = message
    for task_id, calls in batch.breakpoints.items():
        of(task_id).breakpoints = [
            BreakpointRow(call_id=c, agent=a, call=call, normalized=n) for c, a, call, n in calls
        ]
    for task_id, stash in batch.stashes.items():
        of(task_id).stash = [StashRow(priority=p, seq=s, message=m) for p, s, m in stash]
    return changes
