"""Server-sent events as the protocol frames them, and the JSON shapes of stored events.

Every line ends with CRLF; an event is ``event: <name>``, one compact JSON ``data:`` line
(``/`` written ``\\/`` and non-ASCII as ``\\uXXXX``, as the reference server does) and, for
stored events, ``id: <sequence number>`` so a client can resume with ``Last-Event-ID``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from mail.core.events import MAILEvent

__all__ = [
    "SSE_HEADERS",
    "EventStreamResponse",
    "compact_json",
    "encode_event",
    "event_response",
    "sse_object",
    "stored_event",
]

SSE_HEADERS = {"Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}


class EventStreamResponse(StreamingResponse):
    """A streaming ``text/event-stream`` answer (names the media type for the OpenAPI document)."""

    media_type = "text/event-stream"


def compact_json(value: Any) -> str:
    """JSON with no spaces, ASCII only, and ``/`` escaped."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True).replace("/", "\\/")


def encode_event(event: MAILEvent) -> bytes:
    """One SSE frame for ``event``."""
    frame = f"event: {event.event}\r\ndata: {compact_json(event.data())}\r\n"
    if event.seq is not None:
        frame += f"id: {event.seq}\r\n"
    return (frame + "\r\n").encode("ascii")


async def _frames(events: AsyncIterator[MAILEvent]) -> AsyncIterator[bytes]:
    try:
        async for event in events:
            yield encode_event(event)
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


class _FramedEvents(StreamingResponse):
    """An event stream served with asyncio alone, its first frame sent at once.

    Starlette's ``StreamingResponse`` streams from an anyio task group, whose asyncio
    backend costs 50 to 170 ms to import on the first stream a process serves, and whose
    streaming task starts only after whatever the event loop had queued (such as the agent
    turns of the task being streamed). Here the head and the frame already in hand go out
    inline; then one task streams the rest while another watches for the client leaving,
    and whichever ends first cancels the other (closing the event iterator).
    """

    def __init__(self, frames: AsyncIterator[bytes], first: bytes | None) -> None:
        super().__init__(frames, media_type="text/event-stream; charset=utf-8", headers=SSE_HEADERS)
        self._first = first

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        if self._first is not None:
            await send({"type": "http.response.body", "body": self._first, "more_body": True})
        streaming = asyncio.ensure_future(self._stream(send))
        watching = asyncio.ensure_future(self.listen_for_disconnect(receive))
        try:
            await asyncio.wait((streaming, watching), return_when=asyncio.FIRST_COMPLETED)
        finally:
            streaming.cancel()
            watching.cancel()
            outcome, _ = await asyncio.gather(streaming, watching, return_exceptions=True)
        if isinstance(outcome, Exception):
            raise outcome

    async def _stream(self, send: Send) -> None:
        async for chunk in self.body_iterator:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def event_response(
    events: AsyncIterator[MAILEvent], first: MAILEvent | None = None
) -> StreamingResponse:
    """A ``text/event-stream`` response over ``events`` (``first`` already fetched).

    When the client disconnects, Starlette stops iterating and the iterator is closed,
    which ends the reader: nothing of the stream outlives the connection.
    """
    return _FramedEvents(_frames(events), None if first is None else encode_event(first))


def sse_object(event: MAILEvent) -> dict[str, Any]:
    """A stored event as ``/message`` returns it in ``events`` (data as an object)."""
    return {
        "data": event.data(),
        "event": event.event,
        "id": None if event.seq is None else str(event.seq),
        "retry": None,
        "comment": None,
        "_sep": "\r\n",
    }


def stored_event(event: MAILEvent) -> dict[str, Any]:
    """A stored event as ``/tasks`` and ``/task`` return it (data as a JSON string)."""
    return {
        "data": compact_json(event.data()),
        "event": event.event,
        "id": None if event.seq is None else str(event.seq),
        "retry": None,
        "comment": None,
        "_sep": "\r\n",
    }
