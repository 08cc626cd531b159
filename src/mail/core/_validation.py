"""Checking messages that come from outside (public through :mod:`mail.core.message`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any, cast

from mail._limits import task_id_problem
from mail.core._wire import (
    MAIL_ADDRESS_TYPES,
    MAIL_INTERSWARM_MESSAGE_TYPES,
    MAILInterswarmMessage,
    MAILMessage,
    parse_task_contributor,
)
from mail.errors import InvalidMessageError

__all__ = ["validate_interswarm_message", "validate_message"]

# --------------------------------------------------------------------------------------
# validation

_UUID_RE = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)

_COMMON_REQUIRED = ("task_id", "sender", "subject", "body")
_SINGLE_KEYS = frozenset(
    (
        *_COMMON_REQUIRED,
        "request_id",
        "recipient",
        "sender_swarm",
        "recipient_swarm",
        "routing_info",
    )
)
_BROADCAST_KEYS = frozenset(
    (
        *_COMMON_REQUIRED,
        "broadcast_id",
        "recipients",
        "sender_swarm",
        "recipient_swarms",
        "routing_info",
    )
)
_INTERRUPT_KEYS = frozenset(
    (
        *_COMMON_REQUIRED,
        "interrupt_id",
        "recipients",
        "sender_swarm",
        "recipient_swarms",
        "routing_info",
    )
)
# msg_type -> (allowed keys, id key, multi-recipient)
_PAYLOAD_SHAPES: dict[str, tuple[frozenset[str], str, bool]] = {
    "request": (_SINGLE_KEYS, "request_id", False),
    "response": (_SINGLE_KEYS, "request_id", False),
    "buffered": (_SINGLE_KEYS, "request_id", False),
    "broadcast": (_BROADCAST_KEYS, "broadcast_id", True),
    "broadcast_complete": (_BROADCAST_KEYS, "broadcast_id", True),
    "interrupt": (_INTERRUPT_KEYS, "interrupt_id", True),
}
_ENVELOPE_KEYS = frozenset(("id", "timestamp", "message", "msg_type"))
_INTERSWARM_REQUIRED = (
    "message_id",
    "source_swarm",
    "target_swarm",
    "timestamp",
    "payload",
    "msg_type",
    "task_owner",
    "task_contributors",
)
_INTERSWARM_KEYS = frozenset((*_INTERSWARM_REQUIRED, "auth_token", "metadata"))


def _fail(field: str, problem: str) -> InvalidMessageError:
    return InvalidMessageError(problem, field=field)


def _check_keys(value: Any, allowed: frozenset[str], required: Iterable[str], field: str) -> None:
    if not isinstance(value, dict):
        raise _fail(field, f"must be an object, got {type(value).__name__}")
    for key in required:
        if key not in value:
            raise _fail(f"{field}.{key}" if field else key, "is required")
    if not allowed.issuperset(value):
        unknown = sorted(k for k in value if k not in allowed)
        raise _fail(f"{field}.{unknown[0]}" if field else unknown[0], "is not an allowed key")


def _check_str(value: Any, field: str, *, nullable: bool = False, non_empty: bool = False) -> None:
    if value is None and nullable:
        return
    if not isinstance(value, str):
        raise _fail(field, f"must be a string, got {type(value).__name__}")
    if non_empty and not value:
        raise _fail(field, "must not be empty")


def _check_uuid(value: Any, field: str) -> None:
    # fullmatch: ``$`` alone would also accept a trailing newline.
    if not isinstance(value, str) or _UUID_RE.fullmatch(value) is None:
        raise _fail(field, f"must be a uuid string, got {value!r}")


def _check_timestamp(value: Any, field: str) -> None:
    _check_str(value, field)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise _fail(field, f"must be an ISO-8601 date-time, got {value!r}") from None
    if parsed.tzinfo is None:
        raise _fail(field, "must carry a time zone offset")


_ADDRESS_KEYS = frozenset(("address_type", "address"))


def _check_address(value: Any, field: str) -> None:
    _check_keys(value, _ADDRESS_KEYS, _ADDRESS_KEYS, field)
    if value["address_type"] not in MAIL_ADDRESS_TYPES:
        raise _fail(
            f"{field}.address_type",
            f"must be one of {', '.join(MAIL_ADDRESS_TYPES)}, got {value['address_type']!r}",
        )
    _check_str(value["address"], f"{field}.address", non_empty=True)


def _check_payload(payload: Any, msg_type: str, field: str) -> None:
    allowed, id_key, multi = _PAYLOAD_SHAPES[msg_type]
    recipient_key = "recipients" if multi else "recipient"
    _check_keys(payload, allowed, (*_COMMON_REQUIRED, id_key, recipient_key), field)
    task_id = payload["task_id"]
    _check_str(task_id, f"{field}.task_id", non_empty=True)
    problem = task_id_problem(task_id)
    if problem is not None:
        raise _fail(f"{field}.task_id", problem)
    if msg_type == "response":
        # a response's request_id is any string: the original's schema gives it no format
        _check_str(payload[id_key], f"{field}.{id_key}")
    else:
        _check_uuid(payload[id_key], f"{field}.{id_key}")
    _check_address(payload["sender"], f"{field}.sender")
    if multi:
        recipients = payload["recipients"]
        if not isinstance(recipients, list) or not recipients:
            raise _fail(f"{field}.recipients", "must be a non-empty list of addresses")
        for i, recipient in enumerate(recipients):
            _check_address(recipient, f"{field}.recipients[{i}]")
        swarms = payload.get("recipient_swarms")
        if swarms is not None and not (
            isinstance(swarms, list) and all(isinstance(s, str) for s in swarms)
        ):
            raise _fail(f"{field}.recipient_swarms", "must be a list of strings or null")
    else:
        _check_address(payload["recipient"], f"{field}.recipient")
        _check_str(payload.get("recipient_swarm"), f"{field}.recipient_swarm", nullable=True)
    _check_str(payload["subject"], f"{field}.subject")
    _check_str(payload["body"], f"{field}.body")
    _check_str(payload.get("sender_swarm"), f"{field}.sender_swarm", nullable=True)
    routing = payload.get("routing_info")
    if routing is not None and not isinstance(routing, dict):
        raise _fail(f"{field}.routing_info", "must be an object or null")


def _check_contributor(value: Any, field: str) -> None:
    _check_str(value, field, non_empty=True)
    try:
        parse_task_contributor(value)
    except InvalidMessageError as e:
        # parse_task_contributor names ``task_contributors``; name the actual field.
        raise _fail(field, f"must be of the form 'role:id@swarm', got {value!r}") from e


def validate_message(message: Any) -> MAILMessage:
    """Check that ``message`` is a well-formed :class:`MAILMessage` and return it.

    Rejects unknown keys, missing keys, wrong types, bad uuids and a payload that does not
    match ``msg_type``. Raises :class:`InvalidMessageError` whose ``field`` names the
    offending key (for example ``message.sender.address_type``).
    """
    _check_keys(message, _ENVELOPE_KEYS, ("id", "timestamp", "message", "msg_type"), "")
    _check_uuid(message["id"], "id")
    _check_timestamp(message["timestamp"], "timestamp")
    msg_type = message["msg_type"]
    # isinstance first: an unhashable msg_type (a list) must not raise TypeError.
    if not isinstance(msg_type, str) or msg_type not in _PAYLOAD_SHAPES:
        raise _fail("msg_type", f"must be one of {', '.join(_PAYLOAD_SHAPES)}, got {msg_type!r}")
    _check_payload(message["message"], msg_type, "message")
    return cast(MAILMessage, message)


def validate_interswarm_message(message: Any) -> MAILInterswarmMessage:
    """Check that ``message`` is a well-formed :class:`MAILInterswarmMessage` and return it.

    Same rules as :func:`validate_message`; ``task_owner`` and every contributor must be of
    the form ``role:id@swarm``. Raises :class:`InvalidMessageError` naming the field.
    """
    _check_keys(message, _INTERSWARM_KEYS, _INTERSWARM_REQUIRED, "")
    _check_uuid(message["message_id"], "message_id")
    _check_str(message["source_swarm"], "source_swarm", non_empty=True)
    _check_str(message["target_swarm"], "target_swarm", non_empty=True)
    _check_timestamp(message["timestamp"], "timestamp")
    msg_type = message["msg_type"]
    if msg_type not in MAIL_INTERSWARM_MESSAGE_TYPES:
        raise _fail(
            "msg_type",
            f"must be one of {', '.join(MAIL_INTERSWARM_MESSAGE_TYPES)}, got {msg_type!r}",
        )
    _check_payload(message["payload"], msg_type, "payload")
    _check_str(message.get("auth_token"), "auth_token", nullable=True)
    _check_contributor(message["task_owner"], "task_owner")
    contributors = message["task_contributors"]
    if not isinstance(contributors, list):
        raise _fail("task_contributors", "must be a list of 'role:id@swarm' strings")
    for i, contributor in enumerate(contributors):
        _check_contributor(contributor, f"task_contributors[{i}]")
    metadata = message.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise _fail("metadata", "must be an object or null")
    return cast(MAILInterswarmMessage, message)
