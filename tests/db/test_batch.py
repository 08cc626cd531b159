"""The group committer: how writes are merged into statements, and ``submit_many``."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

import pytest

from mail.db._batch import GroupCommitter, Statement, Write, merge_writes
from mail.errors import StorageError

#: The statements of the SQL stores' task writes, in the order their builders emit them.
CANONICAL = ("task", "events", "history", "response", "del bp", "ins bp", "del stash", "ins st")


def _flat(statements: Sequence[Statement]) -> list[tuple[str, Any]]:
    return [(sql, row) for sql, rows in statements for row in rows]


def _check_order_kept(writes: list[Write], merged: list[Statement]) -> None:
    """Every row runs once, each write's statements in its order, each SQL's rows in the
    order of the writes."""
    flat = _flat(merged)
    assert sorted(map(repr, flat)) == sorted(map(repr, _flat([s for w in writes for s in w])))
    at = {row: i for i, (_, row) in enumerate(flat)}
    for write in writes:
        positions = [at[row] for _, rows in write for row in rows]
        assert positions == sorted(positions)
    by_sql: dict[str, list[Any]] = {}
    for sql, row in flat:
        by_sql.setdefault(sql, []).append(row)
    for rows in by_sql.values():
        assert rows == sorted(rows)  # rows are (write, statement, n): write order first


def _write(w: int, sqls: Sequence[str]) -> Write:
    return [(sql, [(w, i, n) for n in range(1 + (w + i) % 2)]) for i, sql in enumerate(sqls)]


def test_disjoint_writes_of_one_order_merge_into_one_statement_per_sql() -> None:
    rng = random.Random(3)
    writes = [
        _write(w, [sql for sql in CANONICAL if rng.random() < 0.6] or ["events"])
        for w in range(200)
    ]
    merged = merge_writes(writes, disjoint=True)
    _check_order_kept(writes, merged)
    assert len(merged) == len({sql for write in writes for sql, _ in write})


@pytest.mark.parametrize("seed", range(20))
def test_disjoint_writes_in_any_order_keep_each_writes_order(seed: int) -> None:
    rng = random.Random(seed)
    names = ["a", "b", "c", "d"]
    writes = [_write(w, rng.sample(names, rng.randint(1, 4))) for w in range(30)]
    writes[10] = _write(10, ["a", "b", "a"])  # repeats a statement: kept as it is
    _check_order_kept(writes, merge_writes(writes, disjoint=True))


def test_writes_that_may_overlap_only_merge_consecutive_runs() -> None:
    writes = [_write(0, ["del", "ins"]), _write(1, ["del", "ins"])]
    assert [sql for sql, _ in merge_writes(writes)] == ["del", "ins", "del", "ins"]
    assert [sql for sql, _ in merge_writes(writes, disjoint=True)] == ["del", "ins"]
    assert merge_writes([[("x", [])], [("y", [(1,)])]]) == [("y", [(1,)])]


class _Database:
    """Runs statements as one transaction; refuses one whose rows hold ``"bad"``."""

    def __init__(self) -> None:
        self.committed: list[tuple[str, Any]] = []
        self.transactions = 0

    async def run(self, statements: list[Statement]) -> None:
        await asyncio.sleep(0)
        self.transactions += 1
        rows = _flat(statements)
        if any("bad" in row for _, row in rows):
            raise RuntimeError("refused")
        self.committed.extend(rows)


async def test_submit_many_commits_in_one_transaction() -> None:
    db = _Database()
    committer = GroupCommitter("test store", db.run)
    committer.start()
    try:
        writes = [_write(w, CANONICAL) for w in range(50)]
        assert await committer.submit_many("save_changes", writes) == [None] * 50
        assert db.transactions == 1
        assert len(db.committed) == len(_flat([s for w in writes for s in w]))
        assert await committer.submit_many("save_changes", []) == []
    finally:
        await committer.close()


async def test_submit_many_reports_each_failed_write_alone() -> None:
    db = _Database()
    committer = GroupCommitter("test store", db.run)
    committer.start()
    try:
        writes = [[("events", [(f"t{n}", 1)])] for n in range(5)]
        writes[3] = [("events", [("t3", 1)]), ("history", [("bad",)])]
        results = await committer.submit_many("save_changes", writes)
        assert [r is None for r in results] == [True, True, True, False, True]
        assert isinstance(results[3], StorageError)
        assert str(results[3]) == "test store: save_changes failed: refused"
        assert sorted(row for _, row in db.committed) == [(f"t{n}", 1) for n in (0, 1, 2, 4)]
        assert committer.last_error is None  # the writes after it committed
    finally:
        await committer.close()
    with pytest.raises(StorageError, match="not open"):
        await committer.submit_many("save_changes", writes)
