"""A store's writer process, the store's side (:class:`WriterProcess`).

Why a process: the SQLite work of a batch is C code, but a thread running it needs the GIL
between statements and around every step, and under load each time it had to wait for the
busy event loop to hand the GIL over (and the loop, in turn, for the thread): about half a
``POST /message``'s extra cost with a store went to that contention. A process of its own
has its own GIL and core; the event loop only marshals each batch and reads a short reply,
and the process encodes the batch's JSON (:mod:`mail.db._raw`). The children are
:mod:`mail.db._sqlite_child` and :mod:`mail.db._pg_child`; :mod:`mail.db._wire` describes
the messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
import logging
import marshal
import pickle
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mail.db._wire import LENGTH, MARSHAL, PICKLE

__all__ = ["WriterError", "WriterProcess", "package_dir"]

logger = logging.getLogger("mail.db")
#: how long closing waits for the child to commit and leave before killing it
_CLOSE_TIMEOUT = 30.0


def package_dir(name: str) -> str:
    """The directory to put on ``sys.path`` to import ``name``, or ``""``."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return ""
    origin = Path(spec.origin)
    # a package (orjson/__init__.py, orjson/orjson.*.so) or a module beside its peers
    return str(origin.parent.parent if spec.submodule_search_locations else origin.parent)


class WriterError(Exception):
    """A write the writer process reported as failed (its message), or the process could
    not start."""


class _WriterGone(WriterError):
    """The writer process ended before it replied."""

    def __init__(self, label: str, code: int) -> None:
        super().__init__(f"the {label} exited (code {code})")


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
    """The parent's handle on one writer process (see the module docstring): ``argv``
    starts it (with ``env`` as its environment, else this process's), ``label`` names it
    in errors and logs, ``forms`` go with the first request to each child started.

    :meth:`run` sends one transaction and waits for its outcome, raising
    :class:`WriterError` with the child's message when it failed; a child that died is
    started again (logged, see :meth:`run`).
    """

    def __init__(
        self,
        label: str,
        argv: Sequence[str],
        forms: Any,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.label = label
        self.argv = list(argv)
        self.forms = forms
        self.env = None if env is None else dict(env)
        self._proc: asyncio.subprocess.Process | None = None
        self._fresh = True  # the next request carries the forms
        self._lock = asyncio.Lock()

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.returncode is None else None

    async def start(self) -> None:
        """Start the child and wait until it is ready (it opened its database)."""
        proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=self.env,
        )
        self._proc, self._fresh = proc, True
        try:
            error = await self._reply(proc)
        except WriterError:
            await self._stop(proc)
            raise
        if error:
            await self._stop(proc)
            raise WriterError(error)

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
                    "the %s had exited (code %s): starting another", self.label, proc.returncode
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
            raise _WriterGone(self.label, await proc.wait()) from e
        self._fresh = False
        try:
            error = await self._reply(proc)
        except asyncio.CancelledError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            raise
        if error:
            raise WriterError(error)

    async def _reply(self, proc: asyncio.subprocess.Process) -> str:
        assert proc.stdout is not None  # noqa: S101  # started with a pipe
        try:
            (size,) = LENGTH.unpack(await proc.stdout.readexactly(LENGTH.size))
            return (await proc.stdout.readexactly(size)).decode()
        except (asyncio.IncompleteReadError, ConnectionResetError) as e:
            raise _WriterGone(self.label, await proc.wait()) from e

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
