"""Server-sent events as the protocol frames them: one code path for the server's streams
and for :meth:`MAILSwarm.post_message_stream <mail.api.MAILSwarm.post_message_stream>`.

Streams are ``sse_starlette`` responses. Every line ends with CRLF; an event is, for stored
events, ``id: <sequence number>`` (so a client can resume with ``Last-Event-ID``), then
``event: <name>`` and one compact JSON ``data:`` line (``/`` written ``\\/`` and non-ASCII
as ``\\uXXXX``, as the reference server does). sse-starlette's comment pings are off: a
stream's ``ping`` events are MAIL's own. A stream that the shutdown of the server cuts
short ends with a final ``task_error`` event that says how to resume the task.

Imported only where a response is built (it loads starlette).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Protocol

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent

from mail.core.events import EventName, MAILEvent

__all__ = [
    "SSE_HEADERS",
    "Signal",
    "compact_json",
    "event_response",
    "first_of",
    "server_sent_event",
    "shutting_down_detail",
]

#: Headers of every stream besides ``Content-Type`` (CONTRACT 2.1).
SSE_HEADERS = {"Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}
CRLF = "\r\n"
#: Seconds sse-starlette lets a stream end by itself (its final event) at shutdown.
_GRACE_SECONDS = 5.0


class Signal(Protocol):
    """An event to wait for (``asyncio.Event``, ``anyio.Event``)."""

    def wait(self) -> Awaitable[Any]: ...


async def first_of(signals: tuple[Signal, ...]) -> None:
    """Return once one of ``signals`` is set."""
    waits = [asyncio.ensure_future(s.wait()) for s in signals]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


def shutting_down_detail(task_id: str) -> str:
    """What a client whose task was cut short by the server's shutdown reads."""
    return (
        f"the server is shutting down; task '{task_id}' is stored as it is now: once the "
        f'server is back, resume it with POST /message {{"task_id": "{task_id}", '
        '"resume_from": "user_response", "body": "..."}'
    )


def compact_json(value: Any) -> str:
    """JSON with no spaces, ASCII only, and ``/`` escaped."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True).replace("/", "\\/")


def server_sent_event(event: MAILEvent) -> ServerSentEvent:
    """``event`` as a server-sent event (``id`` only for stored events)."""
    return ServerSentEvent(
        compact_json(event.data()),
        event=event.event,
        id=None if event.seq is None else str(event.seq),
        sep=CRLF,
    )


async def _framed(
    events: AsyncIterator[MAILEvent],
    first: MAILEvent | None,
    signals: tuple[Signal, ...] = (),
    task_id: str = "",
    final_on_stop: bool = True,
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
                if not pending.done() and not final_on_stop:
                    return  # the server is stopping: the stream just ends
                if not pending.done():
                    # the server is stopping: the client is told so, and how to resume
                    detail = shutting_down_detail(task_id)
                    final = MAILEvent.stream_final(
                        EventName.TASK_ERROR, task_id, detail, status="failed"
                    )
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
    closing: Signal | None = None,
    task_id: str | None = None,
    final_on_stop: bool = True,
) -> EventSourceResponse:
    """A ``text/event-stream`` response over ``events`` (``first`` already fetched).

    When the client disconnects, the stream is cancelled and ``events`` closed, which ends
    the reader: nothing of the stream outlives the connection. With a ``task_id``, the
    stream of that task ends with a final ``task_error`` event that says how to resume the
    task when the server stops: on uvicorn's exit (sse-starlette's notice), or sooner when
    ``closing`` is set; without ``final_on_stop`` it just ends then (cluster mode: the task
    goes on on another replica, where the client follows it with ``Last-Event-ID``).
    """
    if task_id is None:
        return EventSourceResponse(_framed(events, first), headers=SSE_HEADERS, ping=0, sep=CRLF)
    # sse-starlette's own notice of a shutdown (it then waits the grace period before it
    # cancels the stream), and the server's (sooner, where ``mail server`` runs uvicorn)
    farewell = anyio.Event()
    signals: tuple[Signal, ...] = (farewell,) if closing is None else (farewell, closing)
    return EventSourceResponse(
        _framed(events, first, signals, task_id, final_on_stop),
        headers=SSE_HEADERS,
        ping=0,
        sep=CRLF,
        shutdown_event=farewell,
        shutdown_grace_period=_GRACE_SECONDS,
    )
