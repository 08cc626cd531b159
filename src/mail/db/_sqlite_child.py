"""The SQLite store's writer process, the child's side: a script the store starts
(``python -I -S _sqlite_child.py PATH PRAGMAS CHECKPOINT_ROWS ORJSON_DIR``) to apply its
write transactions.

Standard library only, and few modules of it, with ``_sqlite_bulk``, ``_raw`` and
``_wire`` loaded from this directory and orjson from ``ORJSON_DIR`` (the standard encoder
if that is empty or fails): it starts in a few tens of milliseconds without importing
``mail``. :mod:`mail.db._writer_process` says why a process, :mod:`mail.db._wire` what
the messages are; the first request's ``forms`` are the multi-row forms of
``_sqlite_bulk``. The :data:`~mail.db._raw.RAW` statement's rows are blobs of parts whose
JSON this process encodes (:mod:`mail.db._raw` says why).

WAL checkpoints run on a thread of the child's own, beside the writes, instead of inside
the commit that crosses the auto-checkpoint size: a checkpoint copies tens of megabytes and
held that commit (and every batch behind it) for up to 190 ms, after which the server had
a backlog to encode at once (20 clients: p99 latency 20 - 21 ms against 12 - 14 ms without
checkpoints, throughput 6 - 8 % lower). The thread runs a passive checkpoint every
``CHECKPOINT_ROWS`` rows written; then the writer checkpoints what was committed meanwhile
(a transaction or two), so that the WAL starts over at the next write. Should the thread
fall behind, the writer checkpoints itself every ``CHECKPOINT_LIMIT`` passes' worth.

The child leaves when its input closes (the store closed, or the server died); it ignores
SIGINT, which a terminal's Ctrl+C sends the server and its children alike.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import sqlite3
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

__all__ = ["CHECKPOINT_ROWS", "configure", "transaction"]

#: the page size of a database the store creates
PAGE_SIZE = 8192
#: rows written between two background checkpoints (about 1,000 tasks of the HTTP
#: benchmark, some 2,700 pages of WAL)
CHECKPOINT_ROWS = 12_000
#: passes' worth of rows after which the writer checkpoints itself (the thread fell behind)
CHECKPOINT_LIMIT = 8


def configure(conn: sqlite3.Connection, pragmas: Mapping[str, int | str]) -> None:
    """The settings every connection of the store gets: WAL, a busy timeout, ``pragmas``."""
    conn.execute("PRAGMA busy_timeout = 10000")
    # 8 KB pages for a new database (before WAL mode writes its first page; an existing
    # database keeps its own): under 20 clients the writer process wrote 19 KB a task
    # instead of 22 KB, read 7.7 KB instead of 16.5 KB and spent a fifth less CPU
    # (16 and 32 KB pages wrote more)
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise sqlite3.OperationalError(f"cannot use WAL mode (journal_mode is {mode})")
    conn.execute("PRAGMA synchronous = NORMAL")
    # Checkpoint every 10,000 pages (about 40 MB of WAL) instead of 1,000: each checkpoint
    # copies the pages written since the last one and syncs the file, and pages written
    # again and again (the tables' and indexes' upper levels) are copied once per
    # checkpoint; a tenth as many checkpoints cost the writer a fifth of its time per task.
    # (The writer process turns this off on its own connection and checkpoints on a
    # thread instead: the module docstring says why.)
    conn.execute("PRAGMA wal_autocheckpoint = 10000")
    for name, value in pragmas.items():
        # PRAGMA takes no parameters: accept identifiers and integers only
        if not (name.isidentifier() and (isinstance(value, int) or value.isidentifier())):
            raise sqlite3.OperationalError(f"bad pragma {name!r} = {value!r}")
        conn.execute(f"PRAGMA {name} = {value}")


def transaction(conn: sqlite3.Connection, statements: Iterable[Any], multi: Any) -> None:
    """Run ``statements`` (``(sql, rows)``) in one transaction; ``multi`` is a
    ``_sqlite_bulk.MultiRow`` that turns rows into multi-row statements where it can."""
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql, rows in statements:
            chunks = multi.split(sql, rows, limit)
            if chunks is None:
                conn.executemany(sql, rows)
                continue
            for text, params in chunks:
                conn.execute(text, params)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


class _Checkpointer(threading.Thread):
    """Runs ``PRAGMA wal_checkpoint(PASSIVE)`` on a connection of its own each time it is
    woken (SQLite lets the writer go on meanwhile: the module docstring says why)."""

    def __init__(self, path: str, pragmas: Mapping[str, int | str]) -> None:
        super().__init__(name="mail-sqlite-checkpoint", daemon=True)
        self.path = path
        self.pragmas = pragmas
        self.wake = threading.Event()
        #: set after each pass (successful or not): the writer then finishes it
        self.done = threading.Event()
        self.stopping = False

    def run(self) -> None:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            return  # the writer's own checkpoints take over
        try:
            configure(conn, self.pragmas)
            while True:
                self.wake.wait()
                self.wake.clear()
                if self.stopping:
                    return
                # busy or failing: the writer's own checkpoints take over
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                self.done.set()
        except sqlite3.Error:
            return  # as above
        finally:
            conn.close()

    def stop(self) -> None:
        self.stopping = True
        self.wake.set()
        self.join(timeout=30)


class _Checkpoints:
    """When the writer's connection ``conn`` wakes the checkpointer and checkpoints itself:
    :meth:`committed` after each transaction."""

    def __init__(self, conn: sqlite3.Connection, thread: _Checkpointer, rows: int) -> None:
        self.conn = conn
        self.thread = thread
        self.rows = max(1, rows)
        self.woken_at = self.checked_at = conn.total_changes

    def committed(self) -> None:
        written = self.conn.total_changes
        if self.thread.done.is_set():
            # the pass copied the WAL up to where it started: copy what came after (a
            # transaction or two), so that the next write starts the WAL over
            self.thread.done.clear()
            self._checkpoint(written)
        elif written - self.checked_at >= self.rows * CHECKPOINT_LIMIT:
            self._checkpoint(written)  # the thread fell behind: as SQLite would itself
        if written - self.woken_at >= self.rows:
            self.woken_at = written
            self.thread.wake.set()

    def _checkpoint(self, written: int) -> None:
        self.checked_at = written
        self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()


def _load(name: str) -> Any:
    """The module ``name`` of this directory, loaded by path (``mail`` is not imported)."""
    # os.path, not pathlib: the child keeps its imports few, to start fast
    here = os.path.dirname(os.path.abspath(__file__))  # noqa: PTH100, PTH120
    spec = importlib.util.spec_from_file_location(name, os.path.join(here, f"{name}.py"))  # noqa: PTH118
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {name}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _encoder(orjson_dir: str) -> Callable[[Any], Any]:
    """JSON as the server encodes it (``mail.db._common.json_bytes``): orjson, and the
    standard encoder for what orjson refuses (or for everything, without orjson)."""
    standard = json.JSONEncoder(separators=(",", ":")).encode
    if orjson_dir:
        sys.path.append(orjson_dir)
        try:
            import orjson  # noqa: PLC0415  # from the server's environment, given by path
        except ImportError:
            return standard
        dumps = orjson.dumps

        def encode(value: Any) -> Any:
            try:
                return dumps(value)
            except TypeError:
                return standard(value)

        return encode
    return standard


def _main(path: str, pragmas: dict[str, int | str], checkpoint_rows: int, orjson_dir: str) -> None:
    wire = _load("_wire")  # without it no error could be told: a traceback, exit code 1
    wire.make_background()
    inp, out = sys.stdin.buffer, sys.stdout.buffer

    def reply(text: str) -> None:
        out.write(wire.frame(text.encode()))
        out.flush()

    try:
        multi = _load("_sqlite_bulk").MultiRow()
        raw = _load("_raw")
    except ImportError as e:
        reply(str(e))
        return
    encode = _encoder(orjson_dir)
    try:
        conn = sqlite3.connect(path, isolation_level=None, cached_statements=256)
        configure(conn, pragmas)
        conn.execute("PRAGMA wal_autocheckpoint = 0")  # the checkpointer's work
    except Exception as e:  # noqa: BLE001  # reported to the parent, which raises it
        reply(str(e) or type(e).__name__)
        return
    thread = _Checkpointer(path, pragmas)
    thread.start()
    checkpoints = _Checkpoints(conn, thread, checkpoint_rows)
    reply("")
    while True:
        header = inp.read(wire.LENGTH.size)
        if len(header) < wire.LENGTH.size:
            break  # the parent closed our input: leave
        (size,) = wire.LENGTH.unpack(header)
        data = inp.read(size)
        try:
            body = wire.body(data)
            if isinstance(body, tuple):
                forms, body = body
                multi.load(forms)
            transaction(conn, raw.expand(body, encode), multi)
        except Exception as e:  # noqa: BLE001  # each failure goes back to the parent
            reply(str(e) or type(e).__name__)
        else:
            reply("")
            # a checkpoint is never owed: the next one copies what this one left
            with contextlib.suppress(sqlite3.Error):
                checkpoints.committed()
    thread.stop()
    conn.close()


if __name__ == "__main__":
    _main(sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
