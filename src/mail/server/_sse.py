"""Server-sent events as the protocol frames them, and the JSON shapes of stored events.

Streams are ``sse_starlette`` responses. Every line ends with CRLF; an event is, for stored
events, ``id: <sequence number>`` (so a client can resume with ``Last-Event-ID``), then
``event: <name>`` and one compact JSON ``data:`` line (``/`` written ``\\/`` and non-ASCII
as ``\\uXXXX``, as the reference server does). sse-starlette's comment pings are off: a
stream's ``ping`` events are MAIL's own.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette import EventSourceResponse, ServerSentEvent

from mail.core.events import MAILEvent

__all__ = [
    "SSE_HEADERS",
    "compact_json",
    "event_response",
    "server_sent_event",
    "sse_object",
    "stored_event",
]

#: Headers of every stream besides ``Content-Type`` (CONTRACT 2.1).
SSE_HEADERS = {"Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}
_CRLF = "\r\n"


def compact_json(value: Any) -> str:
    """JSON with no spaces, ASCII only, and ``/`` escaped."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True).replace("/", "\\/")


def server_sent_event(event: MAILEvent) -> ServerSentEvent:
    """``event`` as a server-sent event (``id`` only for stored events)."""
    return ServerSentEvent(
        compact_json(event.data()),
        event=event.event,
        id=None if event.seq is None else str(event.seq),
        sep=_CRLF,
    )


async def _framed(
    events: AsyncIterator[MAILEvent], first: MAILEvent | None
) -> AsyncIterator[ServerSentEvent]:
    try:
        if first is not None:
            yield server_sent_event(first)
        async for event in events:
            yield server_sent_event(event)
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


def event_response(
    events: AsyncIterator[MAILEvent], first: MAILEvent | None = None
) -> EventSourceResponse:
    """A ``text/event-stream`` response over ``events`` (``first`` already fetched).

    When the client disconnects, the stream is cancelled and ``events`` closed, which ends
    the reader: nothing of the stream outlives the connection.
    """
    return EventSourceResponse(_framed(events, first), headers=SSE_HEADERS, ping=0, sep=_CRLF)


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
