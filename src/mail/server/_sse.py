"""Server-sent events as the protocol frames them, and the JSON shapes of stored events.

Streams are ``sse_starlette`` responses. Every line ends with CRLF; an event is, for stored
events, ``id: <sequence number>`` (so a client can resume with ``Last-Event-ID``), then
``event: <name>`` and one compact JSON ``data:`` line (``/`` written ``\\/`` and non-ASCII
as ``\\uXXXX``, as the reference server does). sse-starlette's comment pings are off: a
stream's ``ping`` events are MAIL's own.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent

from mail.core.events import EventName, MAILEvent
from mail.server._shutdown import Signal, first_of, shutting_down_detail

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
#: Seconds sse-starlette lets a stream end by itself (its final event) at shutdown.
_GRACE_SECONDS = 5.0


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
    events: AsyncIterator[MAILEvent],
    first: MAILEvent | None,
    signals: tuple[Signal, ...] = (),
    task_id: str = "",
) -> AsyncIterator[ServerSentEvent]:
    stop = asyncio.ensure_future(first_of(signals)) if signals else None
    pending: asyncio.Future[MAILEvent | None] | None = None
    try:
        if first is not None:
            yield server_sent_event(first)
        while True:
            if stop is None:
                event = await anext(events, None)
            else:
                pending = asyncio.ensure_future(anext(events, None))
                await asyncio.wait({pending, stop}, return_when=asyncio.FIRST_COMPLETED)
                if not pending.done():
                    # the server is stopping: the client is told so, and how to resume
                    detail = shutting_down_detail(task_id)
                    final = MAILEvent.stream_final(EventName.TASK_ERROR, task_id, detail)
                    yield server_sent_event(final)
                    return
                event, pending = pending.result(), None
            if event is None:
                return
            yield server_sent_event(event)
    finally:
        for future in (stop, pending):
            if future is not None and not future.done():
                future.cancel()
                await asyncio.wait({future})
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


def event_response(
    events: AsyncIterator[MAILEvent],
    first: MAILEvent | None = None,
    *,
    closing: asyncio.Event | None = None,
    task_id: str | None = None,
) -> EventSourceResponse:
    """A ``text/event-stream`` response over ``events`` (``first`` already fetched).

    When the client disconnects, the stream is cancelled and ``events`` closed, which ends
    the reader: nothing of the stream outlives the connection. When ``closing`` is set (the
    server is stopping), the stream of task ``task_id`` ends with a final ``task_error``
    event that says how to resume the task.
    """
    if task_id is None:
        return EventSourceResponse(_framed(events, first), headers=SSE_HEADERS, ping=0, sep=_CRLF)
    # sse-starlette's own notice of a shutdown (it then waits the grace period before it
    # cancels the stream), and the server's (sooner, where ``mail server`` runs uvicorn)
    farewell = anyio.Event()
    signals: tuple[Signal, ...] = (farewell,) if closing is None else (farewell, closing)
    return EventSourceResponse(
        _framed(events, first, signals, task_id),
        headers=SSE_HEADERS,
        ping=0,
        sep=_CRLF,
        shutdown_event=farewell,
        shutdown_grace_period=_GRACE_SECONDS,
    )


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
