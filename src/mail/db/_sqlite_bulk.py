"""SQLite writes of many rows in few statements (multi-row ``VALUES``).

``executemany`` steps the statement once per row, and the SQLite thread gives the GIL up
around every step: each row then waits to get it back from the busy event loop (for as
long as a loop iteration, up to the 5 ms switch interval) and interrupts the loop when it
does. Under load that wait, not SQLite, bounded how fast tasks were stored. A statement
with many ``VALUES`` rows binds them all at once and runs in one step, so a batch of
hundreds of tasks costs a handful of such waits. SQLite applies the rows of one statement
in order, so the result is that of a row-by-row run: the first of two rows with the same
key wins with ``OR IGNORE``, the last with ``ON CONFLICT DO UPDATE``.

Row counts are split into powers of two (at most :data:`MAX_ROWS`, and as many as the
connection's limit on parameters allows), so each statement has a few shapes that the
statement cache keeps prepared.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import chain
from typing import Any

__all__ = ["MAX_ROWS", "MultiRow"]

#: the most rows in one statement (also bounded by the connection's parameter limit:
#: :attr:`MultiRow.max_params`)
MAX_ROWS = 4096

# a group of ? (some as CAST(? AS TEXT)), commas and spaces
_VALUES = re.compile(r"VALUES\s*(\((?:\?|,|\s|CAST\(\? AS TEXT\))+\))", re.IGNORECASE)


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

    def forms(self) -> dict[str, tuple[str, str, str]]:
        """Every multi-row form, to hand to another :class:`MultiRow` (:meth:`load`)."""
        return dict(self._forms)

    def load(self, forms: dict[str, tuple[str, str, str]]) -> None:
        """Take the forms another :class:`MultiRow` gave (:meth:`forms`)."""
        self._forms.update(forms)

    def _text(self, sql: str, rows: int) -> str:
        text = self._texts.get((sql, rows))
        if text is None:
            head, group, tail = self._forms[sql]
            text = self._texts[(sql, rows)] = head + ", ".join([group] * rows) + tail
        return text

    def split(
        self, sql: str, rows: Sequence[Sequence[Any]], max_params: int = 999
    ) -> list[tuple[str, Any]] | None:
        """``(sql, parameters)`` running ``rows`` of ``sql`` in order, at most
        :data:`MAX_ROWS` and ``max_params`` parameters at a time (SQLite's limit: 999
        before 3.32; a connection tells its own); ``None`` when ``sql`` has no multi-row
        form."""
        form = self._forms.get(sql)
        if form is None:
            return None
        per_row = max(form[1].count("?"), 1)
        most = max(1, min(MAX_ROWS, max_params // per_row))
        out: list[tuple[str, Any]] = []
        start = 0
        while start < len(rows):
            size = 1 << (min(most, len(rows) - start).bit_length() - 1)
            chunk = rows[start : start + size]
            start += size
            if size == 1:
                out.append((sql, chunk[0]))
            else:
                out.append((self._text(sql, size), list(chain.from_iterable(chunk))))
        return out
