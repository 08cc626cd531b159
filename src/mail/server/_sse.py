"""Server-sent events of the server: the framing (:mod:`mail._sse`, shared with
:meth:`MAILSwarm.post_message_stream <mail.api.MAILSwarm.post_message_stream>`) and the
JSON shapes of stored events.
"""

from __future__ import annotations

from typing import Any

from mail._sse import CRLF as _CRLF
from mail._sse import SSE_HEADERS, compact_json, event_response, server_sent_event
from mail.core.events import MAILEvent

__all__ = [
    "SSE_HEADERS",
    "compact_json",
    "event_response",
    "server_sent_event",
    "sse_object",
    "stored_event",
]


def sse_object(event: MAILEvent) -> dict[str, Any]:
    """A stored event as ``/message`` returns it in ``events`` (data as an object)."""
    return {
        "data": event.data(),
        "event": event.event,
        "id": None if event.seq is None else str(event.seq),
        "retry": None,
        "comment": None,
        "_sep": _CRLF,
    }


def stored_event(event: MAILEvent) -> dict[str, Any]:
    """A stored event as ``/tasks`` and ``/task`` return it (data as a JSON string)."""
    return {
        "data": compact_json(event.data()),
        "event": event.event,
        "id": None if event.seq is None else str(event.seq),
        "retry": None,
        "comment": None,
        "_sep": _CRLF,
    }
