"""Log records as JSON lines (``MAIL_LOG_FORMAT=json``), for log collectors.

One object per record: ``time`` (ISO 8601, UTC), ``level``, ``logger``, ``message`` (its
arguments applied), ``task_id`` and ``agent`` where known (a record's ``extra``, else the
agent turn the record was logged in: :func:`mail.core.current_turn`), and ``exception``
(the traceback) when the record carries one; ``trace_id`` and ``span_id`` (hex) when traces
are on and a span is current (:data:`trace_ids`, set by ``mail.telemetry``).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from mail.core import current_turn

__all__ = ["LOG_FORMAT_ENV", "JSONFormatter", "json_logs"]

#: The variable that picks the format of the server's and the CLI's log lines.
LOG_FORMAT_ENV = "MAIL_LOG_FORMAT"
#: The trace and span ids of the current span, once traces are on (``None``: off).
trace_ids: Callable[[], tuple[str, str] | None] | None = None


def json_logs(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``env`` (default ``os.environ``) asks for JSON log lines."""
    value = (os.environ if env is None else env).get(LOG_FORMAT_ENV, "")
    return value.strip().lower() == "json"


class JSONFormatter(logging.Formatter):
    """Formats each record as one line of JSON (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        turn = current_turn()
        task_id = getattr(record, "task_id", None) or (turn[0] if turn else None)
        agent = getattr(record, "agent", None) or (turn[1] if turn else None)
        if task_id is not None:
            line["task_id"] = str(task_id)
        if agent is not None:
            line["agent"] = str(agent)
        if trace_ids is not None and (ids := trace_ids()) is not None:
            line["trace_id"], line["span_id"] = ids
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)
