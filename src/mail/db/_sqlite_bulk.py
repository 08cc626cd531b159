"""SQLite writes of many rows in few statements (multi-row ``VALUES``).

``executemany`` steps the statement once per row, and the SQLite thread gives the GIL up
around every step: each row then waits to get it back from the busy event loop (up to
the 5 ms switch interval) and interrupts the loop when it does. A statement with many
``VALUES`` rows binds them all at once and runs in one step. SQLite applies the rows of
one statement in order, so the result is that of a row-by-row run: the first of two rows
with the same key wins with ``OR IGNORE``, the last with ``ON CONFLICT DO UPDATE``.

Row counts are split into powers of two (at most :data:`MAX_ROWS`), so each statement has
a few shapes that SQLite's statement cache keeps prepared.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["MAX_ROWS", "MultiRow"]

#: the most rows in one statement (13 columns x 64 rows stays below SQLite's old limit of
#: 999 parameters)
MAX_ROWS = 64

_VALUES = re.compile(r"VALUES\s*(\((?:\?|,|\s)+\))", re.IGNORECASE)


class MultiRow:
    """Multi-row forms of per-row statements, by their SQL.

    ``add(sql)`` takes an ``INSERT ... VALUES (?, ...)`` (the ``VALUES`` group is repeated);
    ``add(sql, key_delete=...)`` takes a per-row ``DELETE`` and the text of the same delete
    for many rows, with ``ROWS`` standing for the rows' ``(?, ...), (?, ...)``.
    """

    def __init__(self) -> None:
        self._forms: dict[str, tuple[str, str, str]] = {}
        self._texts: dict[tuple[str, int], str] = {}

    def add(self, sql: str, *, key_delete: str | None = None) -> None:
        if key_delete is not None:
            head, _, tail = key_delete.partition("ROWS")
            group = "(" + ", ".join("?" * sql.count("?")) + ")"
            self._forms[sql] = (head, group, tail)
            return
        match = _VALUES.search(sql)
        if match is None:
            raise ValueError(f"no VALUES group in {sql!r}")
        self._forms[sql] = (sql[: match.start(1)], match.group(1), sql[match.end(1) :])

    def _text(self, sql: str, rows: int) -> str:
        text = self._texts.get((sql, rows))
        if text is None:
            head, group, tail = self._forms[sql]
            text = self._texts[(sql, rows)] = head + ", ".join([group] * rows) + tail
        return text

    def split(self, sql: str, rows: Sequence[Sequence[Any]]) -> list[tuple[str, Any]] | None:
        """``(sql, parameters)`` running ``rows`` of ``sql`` in order, at most
        :data:`MAX_ROWS` at a time; ``None`` when ``sql`` has no multi-row form."""
        if sql not in self._forms:
            return None
        out: list[tuple[str, Any]] = []
        start = 0
        while start < len(rows):
            size = min(MAX_ROWS, 1 << ((len(rows) - start).bit_length() - 1))
            chunk = rows[start : start + size]
            start += size
            if size == 1:
                out.append((sql, chunk[0]))
            else:
                out.append((self._text(sql, size), [value for row in chunk for value in row]))
        return out
