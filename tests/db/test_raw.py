"""Rows whose JSON the SQLite writer process encodes (``mail.db._raw``): the process
formats timestamps and encodes values as the server would have, byte for byte."""

from __future__ import annotations

import marshal
import random
from typing import Any

import pytest

from mail.core._persist import WriteBatch
from mail.core.events import EventName, MAILEvent
from mail.core.message import format_utc
from mail.db import CallerKey
from mail.db._common import changes_from_batch, json_bytes
from mail.db._raw import RAW, cook, format_stamp
from mail.db._sqlite import SQLiteStore
from mail.db._sqlite_child import _encoder
from mail.db._statements import _merged, batch_write, changes_write
from mail.db._writer_process import package_dir

KEY = CallerKey(swarm="demo", role="user", id="u1")
ORJSON_DIR = package_dir("orjson")


def test_the_writer_formats_timestamps_as_the_runtime_does() -> None:
    rng = random.Random(8)
    times = [1_700_000_000 + rng.random() * 1e8 for _ in range(20_000)]
    times += [1_764_170_000.0, 1_764_170_000.999999, 1_764_170_000.9999995, 0.0000005, 59.5]
    times += [t + k * 1e-6 for t in (1_764_170_007.0, 1_764_170_007.5) for k in range(-3, 4)]
    assert [format_stamp(t) for t in times] == [format_utc(t) for t in times]


VALUES: list[Any] = [
    {"a": [1, 2.5, None, True], "é": '\u2028 \\ " \n', "nested": {"x": [{"y": 1e300}]}},
    {"big": 2**70},  # beyond orjson: the standard encoder
    {"nan": float("nan"), "inf": float("-inf")},
    (1, "two"),
    "",
]


@pytest.mark.parametrize("value", VALUES, ids=["dict", "big-int", "nan", "tuple", "empty"])
def test_the_writer_encodes_as_the_server_does(value: Any) -> None:
    assert ORJSON_DIR  # orjson is a dependency: the writer process finds it
    encode = _encoder(ORJSON_DIR)
    assert encode(value) == json_bytes(value)


def test_without_orjson_the_writer_writes_standard_json() -> None:
    encode = _encoder("")
    assert encode({"a": [1, "é"]}) == '{"a":[1,"\\u00e9"]}'
    with pytest.raises(TypeError):
        encode({"a": {1, 2}})


def _batch() -> WriteBatch:
    batch = WriteBatch()
    for n in range(3):
        task_id = f"t{n}"
        events = [
            MAILEvent(EventName.NEW_MESSAGE, task_id, f"event {s}", {"n": s}, None, s)
            for s in (1, 2, 3)
        ]
        events[0].timestamp  # noqa: B018  # one formatted already (streamed), two not
        batch.events[task_id] = events
        batch.histories.append((task_id, "supervisor", [{"role": "user", "content": "hi"}], "x"))
        batch.responses.append((task_id, {"body": f"done {n}"}))
    return batch


def _text(row: Any) -> tuple[Any, ...]:
    return tuple(v.decode() if isinstance(v, bytes) else v for v in row)


def test_the_writer_cooks_the_rows_the_server_would_have_written() -> None:
    d = SQLiteStore.dialect
    batch = _batch()
    raw = batch_write(d, KEY, batch)  # first: the task-by-task rows format every timestamp
    assert [sql for sql, _ in raw] == [RAW]
    (blob,) = raw[0][1]
    cooked = cook(marshal.loads(blob), _encoder(ORJSON_DIR))  # noqa: S302  # our own
    # the rows of the server's task-by-task path, which encodes the JSON itself
    expected = _merged(d, [changes_write(d, KEY, c) for c in changes_from_batch(batch).values()])
    # the histories' updated_at is the time of writing: compare all but that column
    assert [(sql, [_text(row[:7]) for row in rows]) for sql, rows in cooked] == [
        (sql, [_text(row[:7]) for row in rows]) for sql, rows in expected
    ]


def test_values_marshal_refuses_are_encoded_by_the_server() -> None:
    batch = _batch()
    batch.events["t1"][1].extra_data["subject"] = EventName.TASK_COMPLETE  # a str subclass
    write = batch_write(SQLiteStore.dialect, KEY, batch)
    assert RAW not in [sql for sql, _ in write]
    events = dict(write)[SQLiteStore.dialect.append_event]
    assert b'"subject":"task_complete"' in events[4][6]
