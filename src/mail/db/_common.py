"""Helpers shared by the stores: JSON, UTC datetimes, error mapping, retention arguments."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from mail.errors import ConfigurationError, StorageError

if TYPE_CHECKING:
    from mail.db.store import EventRow

_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> str:
    """Compact JSON; raises ``TypeError``/``ValueError`` for what JSON cannot hold."""
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
