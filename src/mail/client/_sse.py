"""Server-sent events for :mod:`mail.client`: the event type and the one incremental parser.

:class:`SSEParser` turns bytes, split anywhere, into :class:`ServerSentEvent` objects as the
WHATWG ``EventSource`` rules read them: UTF-8 decoded incrementally (bad bytes become
U+FFFD), a leading BOM dropped, lines ended by CRLF, LF or CR, an event dispatched at each
blank line, ``:`` comment lines and unknown fields ignored, ``data`` lines joined with
``"\\n"``. Unlike a browser, an event's ``id`` is only what its own ``id:`` line said (the
server's final ``task_complete`` has none); :attr:`SSEParser.last_event_id` keeps the
browser's running value. A partial event left when the stream ends is discarded.

Nothing here does I/O, so the parser is tested with chunks split at every byte offset.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SSEParser", "ServerSentEvent"]

_LINE_END = re.compile(r"\r\n|\r|\n")
_BOM = "\ufeff"


@dataclass(slots=True)
class ServerSentEvent:
    """One server-sent event.

    ``event`` is the event name (``"message"`` when the frame named none), ``data`` the
    raw text of its ``data:`` lines joined with ``"\\n"``, ``id`` its ``id:`` line (the
    per-task sequence number of a stored MAIL event; ``None`` for pings and the final
    ``task_complete``/``task_error``) and ``retry`` its ``retry:`` line in milliseconds.
    """

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None

    def json(self) -> Any:
        """``data`` parsed as JSON (MAIL sends one JSON object). Raises ``ValueError``."""
        return json.loads(self.data)


@dataclass(slots=True)
class _Pending:
    event: str | None = None
    data: list[str] = field(default_factory=list)
    id: str | None = None
    retry: int | None = None


class SSEParser:
    """Incremental SSE parser: :meth:`feed` bytes, get the events they complete."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""  # the start of a line whose end has not arrived
        self._skip_lf = False  # the last chunk ended with CR: a leading LF belongs to it
        self._started = False  # past the optional BOM
        self._pending = _Pending()
        #: The latest ``id:`` value seen, as a browser's ``lastEventId`` (``None`` before any).
        self.last_event_id: str | None = None
        #: The latest ``retry:`` value seen, in milliseconds.
        self.retry: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Parse ``chunk`` (any slice of the stream); return the events it completes."""
        return self._text(self._decoder.decode(chunk))

    def close(self) -> list[ServerSentEvent]:
        """End of stream: return the events still completed by buffered bytes.

        An event (or line) without its terminating blank line is discarded, as a browser does.
        """
        events = self._text(self._decoder.decode(b"", final=True))
        self._partial = ""
        self._pending = _Pending()
        return events

    def _text(self, text: str) -> list[ServerSentEvent]:
        if not text:
            return []
        if not self._started:
            self._started = True
            text = text.removeprefix(_BOM)
        if self._skip_lf:
            self._skip_lf = False
            text = text.removeprefix("\n")
        events: list[ServerSentEvent] = []
        position = 0
        for match in _LINE_END.finditer(text):
            line = self._partial + text[position : match.start()]
            self._partial = ""
            position = match.end()
            event = self._line(line)
            if event is not None:
                events.append(event)
        # a CR at the very end may be the first half of a CRLF split across chunks
        self._skip_lf = text.endswith("\r")
        self._partial += text[position:]
        return events

    def _line(self, line: str) -> ServerSentEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        pending = self._pending
        if name == "event":
            pending.event = value
        elif name == "data":
            pending.data.append(value)
        elif name == "id":
            if "\0" not in value:
                pending.id = value
                self.last_event_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            pending.retry = int(value)
            self.retry = pending.retry
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        pending, self._pending = self._pending, _Pending()
        if not pending.data:
            return None  # no data line: nothing to dispatch (a browser does the same)
        return ServerSentEvent(
            event=pending.event or "message",
            data="\n".join(pending.data),
            id=pending.id,
            retry=pending.retry,
        )
