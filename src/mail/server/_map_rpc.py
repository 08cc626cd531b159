"""JSON-RPC 2.0 for MAP, whatever carries it (``POST /map``, the ``/map`` WebSocket):
reading a document, answering a request or a batch through one ``call(method, params)``,
and the error codes.

Codes: JSON-RPC's own (-32700 to -32600), :data:`SERVER_ERROR` (-32000: a ``map/send``
refused as ``POST /message`` would refuse it, ``data.status`` its HTTP status),
:data:`EVENTS_NOT_RETAINED` (-32001: ``map/replay`` from a position whose next events are
no longer kept), the
official SDK's ``AUTH_ERROR_CODES`` for authentication (1000 required, 1001 failed, 1003
refused, 1005 method not supported), its ``AGENT_NOT_FOUND`` (2001: ``map/agents/get``,
``map/send`` to no agent) and ``AGENT_EXISTS`` (3000: ``map/agents/register`` of an id
taken), its ``RESOURCE_ERROR_CODES.RATE_LIMITED`` (4001)
for a connection with too many requests pending, and MAP Mail's 10000-10010
(:class:`~mail.conversations.MailProtocolError`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mail._limits import JSONRefusedError, loads
from mail._text import text_problem
from mail.conversations import MailProtocolError
from mail.errors import MAILError, StorageError
from mail.server._statuses import server_status

__all__ = [
    "AGENT_EXISTS",
    "AGENT_NOT_FOUND",
    "AUTH_FAILED",
    "AUTH_METHOD_NOT_SUPPORTED",
    "AUTH_PERMISSION_DENIED",
    "AUTH_REQUIRED",
    "EVENTS_NOT_RETAINED",
    "INTERNAL",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "RATE_LIMITED",
    "SERVER_ERROR",
    "Call",
    "RpcError",
    "answer",
    "answer_document",
    "error",
    "read",
    "request_ids",
]

logger = logging.getLogger("mail.server")

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INTERNAL = -32700, -32600, -32601, -32603
#: JSON-RPC's "server error" range: a map/send refused as POST /message would refuse it
SERVER_ERROR = -32000
# the official SDK's AUTH_ERROR_CODES (@multi-agent-protocol/sdk 0.1.15)
AUTH_REQUIRED, AUTH_FAILED, AUTH_PERMISSION_DENIED, AUTH_METHOD_NOT_SUPPORTED = (
    1000,
    1001,
    1003,
    1005,
)
#: the SDK's ROUTING_ERROR_CODES.AGENT_NOT_FOUND and AGENT_ERROR_CODES.AGENT_EXISTS
AGENT_NOT_FOUND, AGENT_EXISTS = 2001, 3000
#: the SDK's RESOURCE_ERROR_CODES.RATE_LIMITED: too many requests pending on a connection
RATE_LIMITED = 4001
#: ours (the SDK has no code for it): ``map/replay`` asked for events no longer kept
EVENTS_NOT_RETAINED = -32001

#: What answers a method: ``await call(method, params)`` returns its result or raises.
Call = Callable[[str, Any], Awaitable[Any]]


class RpcError(Exception):
    """A JSON-RPC error a method answers with (``code``, ``message``, ``data``)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response."""
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def read(raw: str | bytes) -> Any:
    """The JSON document of a body or frame. Raises :class:`RpcError` (-32700) saying why
    it is not read: not JSON at all, or JSON past the limits of :func:`mail._limits.loads`
    (``NaN``, a number out of range, nesting too deep)."""
    try:
        return loads(raw, check_text=False)  # (params report it: -32602 naming them)
    except JSONRefusedError as e:
        raise RpcError(PARSE_ERROR, f"parse error: {_unread(raw, e)}") from None


def _unread(raw: str | bytes, error: JSONRefusedError) -> str:
    try:
        json.loads(raw)
    except RecursionError:
        pass  # JSON, too deep
    except ValueError:
        return "the body is not JSON"
    return error.msg


def request_ids(document: Any) -> list[Any]:
    """The ids of a document's requests that expect an answer (a batch's, or its own)."""
    items = document if isinstance(document, list) else [document]
    return [item["id"] for item in items if isinstance(item, dict) and "id" in item]


async def answer_document(document: Any, call: Call) -> Any:
    """The answer to a JSON-RPC document: a request's response, a batch's list of
    responses (in order, notifications left out), or ``None`` when nothing is answered
    (a notification, a batch of them)."""
    if isinstance(document, list):
        if not document:
            return error(None, INVALID_REQUEST, "an empty batch")
        answers = [a for a in [await answer(item, call) for item in document] if a]
        return answers or None
    return await answer(document, call)


async def answer(item: Any, call: Call) -> dict[str, Any] | None:
    """The response to one request object (``None`` for a notification): a failure of
    one request of a batch is that request's error, never the batch's."""
    if not isinstance(item, dict):
        return error(None, INVALID_REQUEST, "a request must be an object")
    request_id = item.get("id")
    valid_id = request_id is None or (
        isinstance(request_id, int) and not isinstance(request_id, bool)
    )
    if isinstance(request_id, str):  # answered as sent: it must be storable text too
        valid_id = text_problem(request_id) is None
    method, params = item.get("method"), item.get("params", {})
    if item.get("jsonrpc") != "2.0" or not isinstance(method, str) or not valid_id:
        return error(
            request_id if valid_id else None, INVALID_REQUEST, "not a JSON-RPC 2.0 request"
        )
    notification = "id" not in item
    try:
        result = await call(method, params)
    except (RpcError, MailProtocolError) as e:
        response = error(request_id, e.code, e.message, e.data)
    except StorageError:
        logger.exception("%s failed", method)
        response = error(request_id, INTERNAL, "internal error")
    except MAILError as e:  # map/send: what POST /message answers with an HTTP status
        response = error(request_id, SERVER_ERROR, str(e), {"status": server_status(e)})
    except Exception:  # a bug: this request's error; the batch and the connection go on
        logger.exception("%s failed unexpectedly", method)
        response = error(request_id, INTERNAL, "internal error")
    else:
        response = {"jsonrpc": "2.0", "id": request_id, "result": result}
    return None if notification else response
