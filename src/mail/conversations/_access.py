"""Who sees which turn, and the small helpers the service's methods share: parameters,
opaque cursors."""

from __future__ import annotations

import base64
import json
from typing import Any

from mail._limits import loads
from mail.conversations.errors import MailPermissionDeniedError, MailProtocolError
from mail.conversations.models import Participant, Permissions, Turn

__all__ = [
    "InvalidParamsError",
    "decode_cursor",
    "encode_cursor",
    "narrowing",
    "opt_str",
    "opt_int",
    "req_str",
    "visible",
]


class InvalidParamsError(MailProtocolError):
    """The request's params are not what the method takes (JSON-RPC -32602)."""

    code = -32602
    name = "INVALID_PARAMS"


def req_str(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidParamsError(f"{name} must be a non-empty string", field=name)
    return value


def opt_str(params: dict[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidParamsError(f"{name} must be a string", field=name)
    return value


def opt_int(params: dict[str, Any], name: str, *, minimum: int = 0) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidParamsError(f"{name} must be an integer >= {minimum}", field=name)
    return value


def encode_cursor(position: list[Any]) -> str:
    """An opaque cursor for ``position`` (where the next page starts after)."""
    return base64.urlsafe_b64encode(json.dumps(position).encode()).decode()


def decode_cursor(cursor: Any, *shape: type) -> list[Any] | None:
    """The position of a cursor (``None`` for none), a list of values of the types of
    ``shape`` (``int, str``); raises :class:`InvalidParamsError` for one this server did
    not hand out."""
    if cursor is None:
        return None
    refused = InvalidParamsError(
        "params.cursor: is not one this server handed out (pass nextCursor as it came)",
        field="cursor",
    )
    try:
        position = loads(base64.urlsafe_b64decode(str(cursor).encode()))
    except ValueError as e:  # not base64, not UTF-8, not JSON
        raise refused from e
    if not isinstance(position, list) or len(position) != len(shape):
        raise refused
    for value, kind in zip(position, shape, strict=True):
        if not isinstance(value, kind) or isinstance(value, bool):
            raise refused
    return position


_HISTORY = ("none", "from-join", "full")


def narrowing(defaults: Permissions, overrides: dict[str, Any] | None) -> dict[str, Any]:
    """The ``permissions`` of a ``mail/join`` (``{}`` for none; checked by its params
    model): the role's ``defaults``, which a participant joining by itself may only
    narrow (a permission set to false, a shorter ``historyAccess``); widening one raises
    10003."""
    if overrides is None:
        return {}
    for name, value in overrides.items():
        if name == "historyAccess":
            wider = _HISTORY.index(value) > _HISTORY.index(defaults["historyAccess"])
        else:
            wider = value and not defaults[name]  # type: ignore[literal-required]  # known key
        if wider:
            raise MailPermissionDeniedError(
                f"joining may only narrow the role's permissions, not grant {name}",
                permission=name,
            )
    return overrides


def visible(turn: Turn, seq: int, viewer: Participant, joined_seq: int) -> bool:
    """Whether ``viewer`` may read ``turn`` (the ``seq``-th of its conversation):
    its own turns always; others' by its ``historyAccess`` (``from-join``: turns after
    the ``joined_seq``-th), the turn's visibility, and ``canSeeInternal`` for ``x-*``
    turns."""
    if turn["participantId"] == viewer["id"]:
        return True
    permissions = viewer["permissions"]
    access = permissions["historyAccess"]
    if access == "none" or (access == "from-join" and seq <= joined_seq):
        return False
    if turn["contentType"].startswith("x-") and not permissions["canSeeInternal"]:
        return False
    scope = turn["visibility"]
    kind = scope.get("type", "all")
    if kind == "participants":
        return viewer["id"] in scope.get("ids", scope.get("participants", []))
    if kind == "role":
        return viewer["role"] in scope.get("roles", [])
    return kind != "private"
