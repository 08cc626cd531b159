"""The HTTP status the server answers for a :class:`~mail.errors.MAILError`: the library's
table (:func:`mail.errors.http_status_for`) with the server's own overrides, shared by the
exception handler and the JSON-RPC methods that report what ``POST /message`` would."""

from __future__ import annotations

from mail.errors import InvalidMessageError, MAILError, SwarmDefinitionError, http_status_for
from mail.server._routes_core import SwarmNameTakenError
from mail.server._task_service import RelayedError, TurnCutShortError

__all__ = ["server_status"]


_SERVER_STATUS: dict[type[MAILError], int] = {
    InvalidMessageError: 400,
    SwarmDefinitionError: 400,
    SwarmNameTakenError: 409,
    TurnCutShortError: 503,
}


def server_status(error: MAILError) -> int:
    """The status the server's exception handler answers ``error`` with."""
    if isinstance(error, RelayedError):
        return error.status
    for cls, status in _SERVER_STATUS.items():
        if isinstance(error, cls):
            return status
    return http_status_for(error)
