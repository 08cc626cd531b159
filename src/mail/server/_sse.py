"""Server-sent events of the server: the framing (:mod:`mail._sse`, shared with
:meth:`MAILSwarm.post_message_stream <mail.api.MAILSwarm.post_message_stream>`) and the
JSON shapes of stored events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mail._sse import CRLF as _CRLF
from mail._sse import SSE_HEADERS, Signal, compact_json, event_response, server_sent_event
from mail.core.events import MAILEvent

if TYPE_CHECKING:
    from sse_starlette import EventSourceResponse

    from mail.server._task_service import Stream

__all__ = [
    "SSE_HEADERS",
    "compact_json",
    "event_response",
    "server_sent_event",
    "sse_object",
    "stored_event",
    "stream_response",
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


def stream_response(stream: Stream, closing: Signal) -> EventSourceResponse:
    """The ``text/event-stream`` response of a task service's :class:`Stream
    <mail.server._tasks.Stream>` (``closing``: the server was told to stop)."""
    if stream.task_id is None:
        return event_response(stream.events, stream.first)
    return event_response(
        stream.events,
        stream.first,
        closing=closing,
        task_id=stream.task_id,
        final_on_stop=stream.final_on_stop,
    )
