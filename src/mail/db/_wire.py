"""The messages between a store and its writer process (standard library only: the SQLite
writer process loads this file by path).

Each message is an 8-byte little-endian length and a body:

* child → parent, once at start: empty when the child is ready, else the error;
* parent → child: ``(forms, statements)`` for the first request, then ``statements``
  lists (``(sql, rows)``, run in one transaction; ``forms`` is what the child needs to
  know of the store's statements), each as a tag byte and a body: ``m`` and ``marshal``
  data, or ``p`` and a pickle (for values ``marshal`` refuses: str and int subclasses,
  datetimes);
* child → parent, per request: empty when it committed, else the error's message (it
  rolled back, or never began: a body it could not read).
"""

from __future__ import annotations

import marshal
import os
import pickle
import signal
import struct
from typing import Any

__all__ = ["LENGTH", "MARSHAL", "PICKLE", "WRITER_NICE", "body", "frame", "make_background"]

#: the length before every message
LENGTH = struct.Struct("<Q")
#: the tag byte of a request body in ``marshal`` form, or pickled
MARSHAL, PICKLE = b"m", b"p"
#: the niceness a writer process adds to its own
WRITER_NICE = 10


def frame(data: bytes) -> bytes:
    """``data`` as a message."""
    return LENGTH.pack(len(data)) + data


def body(data: bytes) -> Any:
    """A request's body (``data``: its tag byte and the rest)."""
    rest = memoryview(data)[1:]  # not a copy
    if data[:1] == MARSHAL:
        return marshal.loads(rest)  # noqa: S302  # from our parent, over our own pipe
    return pickle.loads(rest)  # noqa: S301  # from our parent, over our own pipe


def make_background() -> None:
    """Make this (writer) process background work: the request path goes first when both
    want a core, and Ctrl+C in a terminal, which reaches the whole process group, leaves
    it alone (the server closes its input once it has handed over its last writes, which
    it must still apply).

    Measured with benchmarks/stores.py (4 runs each): sequential 0.81 of the memory store
    against 0.75 at the default priority, 20 clients unchanged; the recorder's backlog
    bound keeps the writer from falling behind without limit.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(os, "sched_setscheduler"):
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    os.nice(WRITER_NICE)
