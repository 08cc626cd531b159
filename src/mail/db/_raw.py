"""Rows whose JSON the SQLite writer process encodes.

Standard library only: the writer process loads this file by path, as it loads
``_sqlite_bulk``, without importing ``mail``.

Encoding a batch's events, histories and responses to JSON on the event loop cost about
25 µs a task under 20 clients (nine events of some 500 bytes, two histories, a response),
the largest part of what storing a task cost the server. A batch now carries those rows
as they are, in one ``marshal`` blob (about 10 µs a task), and the writer process, on the
other core, turns the blob into the rows its statements take (:func:`cook`), with the
same encoder as the server's (orjson, falling back to the standard encoder), so the
stored text is the same either way. Where ``marshal`` refuses a value (a ``str``
subclass, a datetime, any object), the server cooks the parts itself.

A part is ``(sql, column, rows)``. ``column`` is the index of the value each row holds
raw, to be replaced by its JSON; or :data:`EVENT` for event rows ``(swarm, role, caller,
task_id, seq, name, stamp, description, extra_data)``, which become ``(swarm, role,
caller, task_id, seq, name, data)`` with ``data`` the event's wire object ``{timestamp,
description, task_id, extra_data}`` (``mail.core.events.MAILEvent.data``). ``stamp`` is
the event's formatted timestamp, or its POSIX time to format with :func:`format_stamp`;
``None`` when ``extra_data`` is the whole wire object (an event with a payload).
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

__all__ = ["EVENT", "RAW", "Part", "cook", "expand", "format_stamp"]

#: the SQL of the statement whose rows are blobs of marshalled parts (never run as SQL)
RAW = "-- rows with JSON to encode: mail.db._raw"
#: the ``column`` of a part of event rows
EVENT = -1

#: ``(sql, column, rows)``: see the module docstring
Part = tuple[str, int, Sequence[Sequence[Any]]]

_second = [-1, ""]


def format_stamp(now: float) -> str:
    """``now`` as ``mail.core.message.format_utc`` formats it (ISO-8601 UTC, microseconds
    truncated, ``+00:00``): what the event's timestamp would have read."""
    second = int(now)
    cache = _second
    if second != cache[0]:
        cache[1] = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        cache[0] = second
    return "%s.%06d+00:00" % (cache[1], (now - second) * 1_000_000)  # noqa: UP031


def cook(parts: Sequence[Part], encode: Callable[[Any], Any]) -> list[tuple[str, list[Any]]]:
    """The statements of ``parts``, each raw value replaced by ``encode(value)``.

    Raises what ``encode`` raises for a value JSON cannot hold (``TypeError``).
    """
    statements: list[tuple[str, list[Any]]] = []
    for sql, column, rows in parts:
        if column == EVENT:
            cooked: list[Any] = []
            add = cooked.append
            for swarm, role, caller, task_id, seq, name, stamp, description, extra in rows:
                if stamp is None:
                    data = extra
                else:
                    data = {
                        "timestamp": stamp if stamp.__class__ is str else format_stamp(stamp),
                        "description": description,
                        "task_id": task_id,
                        "extra_data": extra,
                    }
                add((swarm, role, caller, task_id, seq, name, encode(data)))
        else:
            cooked = [(*row[:column], encode(row[column]), *row[column + 1 :]) for row in rows]
        statements.append((sql, cooked))
    return statements


def expand(
    statements: Sequence[tuple[str, Any]], encode: Callable[[Any], Any]
) -> Iterator[tuple[str, Any]]:
    """``statements`` with each :data:`RAW` statement's blobs cooked (:func:`cook`)."""
    for sql, rows in statements:
        if sql == RAW:
            for blob in rows:
                yield from cook(marshal.loads(blob), encode)  # noqa: S302  # the store's own
        else:
            yield sql, rows
