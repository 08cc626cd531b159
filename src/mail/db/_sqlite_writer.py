"""The SQLite store's writer process, the store's side (:class:`WriterProcess`).

Why a process: the SQLite work of a batch is C code, but a thread running it needs the GIL
between statements and around every step, and under load each time it had to wait for the
busy event loop to hand the GIL over (and the loop, in turn, for the thread): about half a
``POST /message``'s extra cost with a store went to that contention. A process of its own
has its own GIL; the event loop only pickles each batch and reads a short reply. The child
is :mod:`mail.db._sqlite_child`, which also describes the messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
import json
import logging
import marshal
import pickle
import sqlite3
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mail.db import _sqlite_child
from mail.db._sqlite_child import LENGTH, MARSHAL, PICKLE

__all__ = ["WriterProcess"]

logger = logging.getLogger("mail.db")
#: how long closing waits for the child to commit and leave before killing it
_CLOSE_TIMEOUT = 30.0


def _package_dir(name: str) -> str:
    """The directory to put on ``sys.path`` to import ``name``, or ``""``."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return ""
    origin = Path(spec.origin)
    # a package (orjson/__init__.py, orjson/orjson.*.so) or a module beside its peers
    return str(origin.parent.parent if spec.submodule_search_locations else origin.parent)


#: where the child finds orjson (``""``: it encodes with the standard library)
_ORJSON_DIR = _package_dir("orjson")


class _WriterGone(sqlite3.OperationalError):
    """The writer process ended before it replied."""

    def __init__(self, path: Path, code: int) -> None:
        super().__init__(f"the SQLite writer process for {path} exited (code {code})")


class _PlainPickler(pickle.Pickler):
    """Pickles ``str`` and ``int`` subclasses (the runtime's ``StrEnum`` event names and
    states) as plain values: the child does not import ``mail``. Exact built-in values never
    reach :meth:`reducer_override`, so this costs nothing for them."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return str, (str.__str__(obj),)
        if isinstance(obj, int) and not isinstance(obj, bool):
            return int, (int.__index__(obj),)
        return NotImplemented


def _encode(body: Any) -> tuple[bytes, bytes]:
    """``body`` for the child, as the tag and the data: ``marshal`` (faster than pickle
    both ways, for exact built-in values only, which the recorder's batches are), else
    pickled."""
    try:
        return MARSHAL, marshal.dumps(body)
    except ValueError:  # a str or int subclass somewhere (a row given by a caller)
        buffer = io.BytesIO()
        _PlainPickler(buffer, pickle.HIGHEST_PROTOCOL).dump(body)
        return PICKLE, buffer.getvalue()


class WriterProcess:
    """The parent's handle on one writer process (see the module docstring).

    :meth:`run` sends one transaction and waits for its outcome, raising
    :class:`sqlite3.OperationalError` with the child's message when it failed; a child
    that died is started again (logged, see :meth:`run`).
    """

    def __init__(
        self,
        path: Path,
        pragmas: Mapping[str, int | str],
        forms: dict[str, Any],
        checkpoint_rows: int,
    ) -> None:
        self.path = path
        self.pragmas = dict(pragmas)
        self.forms = forms
        self.checkpoint_rows = checkpoint_rows
        self._proc: asyncio.subprocess.Process | None = None
        self._fresh = True  # the next request carries the multi-row forms
        self._lock = asyncio.Lock()

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.returncode is None else None

    async def start(self) -> None:
        """Start the child and wait until it has opened the database."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",  # none of the environment's Python settings
            "-S",  # nor site-packages: the child needs the standard library only
            _sqlite_child.__file__,
            str(self.path),
            json.dumps(self.pragmas),
            str(self.checkpoint_rows),
            _ORJSON_DIR,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        self._proc, self._fresh = proc, True
        try:
            error = await self._reply(proc)
        except sqlite3.OperationalError:
            await self._stop(proc)
            raise
        if error:
            await self._stop(proc)
            raise sqlite3.OperationalError(error)

    async def run(self, statements: list[Any]) -> None:
        """Commit ``statements`` in the child (one transaction).

        A child found dead, or dying during the request, is started again and the request
        sent once more (logged): every write of the store can be applied twice (events are
        kept once per sequence number, the rest replaces), and a transaction cut short by
        the child's death was rolled back or committed whole. Cancelled while the child
        works, the child is killed (as in a crash) so that no reply is left for the next
        request to misread.
        """
        async with self._lock:
            try:
                await self._exchange(statements)
            except _WriterGone as gone:
                logger.warning("%s: starting another", gone)
                await self._exchange(statements)

    async def _exchange(self, statements: list[Any]) -> None:
        proc = self._proc
        if proc is None or proc.returncode is not None:
            if proc is not None:
                logger.warning(
                    "the SQLite writer process for %s had exited (code %s): starting another",
                    self.path,
                    proc.returncode,
                )
            await self.start()
            proc = self._proc
            assert proc is not None  # noqa: S101  # start() sets it or raises
        body = (self.forms, statements) if self._fresh else statements
        assert proc.stdin is not None  # noqa: S101  # started with a pipe
        try:
            tag, data = _encode(body)
            # the length and tag, then the data as it is: a batch is never copied whole
            proc.stdin.write(LENGTH.pack(len(tag) + len(data)) + tag)
            proc.stdin.write(data)
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as e:
            raise _WriterGone(self.path, await proc.wait()) from e
        self._fresh = False
        try:
            error = await self._reply(proc)
        except asyncio.CancelledError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            raise
        if error:
            raise sqlite3.OperationalError(error)

    async def _reply(self, proc: asyncio.subprocess.Process) -> str:
        assert proc.stdout is not None  # noqa: S101  # started with a pipe
        try:
            (size,) = LENGTH.unpack(await proc.stdout.readexactly(LENGTH.size))
            return (await proc.stdout.readexactly(size)).decode()
        except (asyncio.IncompleteReadError, ConnectionResetError) as e:
            raise _WriterGone(self.path, await proc.wait()) from e

    async def close(self) -> None:
        """Let the child finish and leave (killed after 30 s)."""
        async with self._lock:
            proc, self._proc = self._proc, None
            if proc is not None:
                await self._stop(proc)

    @staticmethod
    async def _stop(proc: asyncio.subprocess.Process) -> None:
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), _CLOSE_TIMEOUT)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
