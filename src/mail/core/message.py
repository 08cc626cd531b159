"""MAIL protocol types, addresses, constructors, XML rendering, priorities and validation.

Messages are plain dicts shaped by the TypedDicts below (the public wire contract).
They are created only by the ``make_*`` constructors here, which own ``id`` and
``timestamp``, and validated once where data enters the process with
:func:`validate_message` / :func:`validate_interswarm_message`.
"""

from __future__ import annotations

import itertools
import os
import re
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias, TypedDict, cast, get_args

from mail.errors import InvalidMessageError

__all__ = [
    # vocabulary
    "AddressType",
    "MessageType",
    "InterswarmMessageType",
    "MAIL_ADDRESS_TYPES",
    "MAIL_MESSAGE_TYPES",
    "MAIL_INTERSWARM_MESSAGE_TYPES",
    # types
    "MAILAddress",
    "MAILRequest",
    "MAILResponse",
    "MAILBroadcast",
    "MAILInterrupt",
    "MAILPayload",
    "MAILMessage",
    "MAILInterswarmMessage",
    "MAIL_ALL_LOCAL_AGENTS",
    # addresses
    "parse_agent_address",
    "format_agent_address",
    "create_address",
    "create_admin_address",
    "create_agent_address",
    "create_system_address",
    "create_user_address",
    "get_address_string",
    "get_address_type",
    "parse_task_contributor",
    "parse_task_contributors",
    "format_task_contributor",
    # constructors
    "new_id",
    "new_task_id",
    "format_utc",
    "utc_timestamp",
    "make_request",
    "make_response",
    "make_broadcast",
    "make_interrupt",
    "make_broadcast_complete",
    "make_interswarm_message",
    # helpers on messages
    "get_recipients",
    "message_priority",
    "build_body_xml",
    "build_mail_xml",
    "build_interswarm_mail_xml",
    # validation
    "validate_message",
    "validate_interswarm_message",
]

AddressType: TypeAlias = Literal["admin", "agent", "system", "user"]
MessageType: TypeAlias = Literal[
    "request", "response", "broadcast", "interrupt", "broadcast_complete", "buffered"
]
InterswarmMessageType: TypeAlias = Literal["request", "response", "broadcast", "interrupt"]

MAIL_ADDRESS_TYPES: tuple[str, ...] = get_args(AddressType)
#: The five protocol message types (``buffered`` is an internal manual-mode type).
MAIL_MESSAGE_TYPES: tuple[str, ...] = (
    "request",
    "response",
    "broadcast",
    "interrupt",
    "broadcast_complete",
)
MAIL_INTERSWARM_MESSAGE_TYPES: tuple[str, ...] = get_args(InterswarmMessageType)


class MAILAddress(TypedDict):
    """A participant: ``{"address_type": "agent", "address": "weather@swarm-b"}``."""

    address_type: AddressType
    address: str


class MAILRequest(TypedDict):
    task_id: str
    request_id: str
    sender: MAILAddress
    recipient: MAILAddress
    subject: str
    body: str
    sender_swarm: str | None
    recipient_swarm: str | None
    routing_info: dict[str, Any] | None


class MAILResponse(TypedDict):
    task_id: str
    request_id: str
    sender: MAILAddress
    recipient: MAILAddress
    subject: str
    body: str
    sender_swarm: str | None
    recipient_swarm: str | None
    routing_info: dict[str, Any] | None


class MAILBroadcast(TypedDict):
    task_id: str
    broadcast_id: str
    sender: MAILAddress
    recipients: list[MAILAddress]
    subject: str
    body: str
    sender_swarm: str | None
    recipient_swarms: list[str] | None
    routing_info: dict[str, Any] | None


class MAILInterrupt(TypedDict):
    task_id: str
    interrupt_id: str
    sender: MAILAddress
    recipients: list[MAILAddress]
    subject: str
    body: str
    sender_swarm: str | None
    recipient_swarms: list[str] | None
    routing_info: dict[str, Any] | None


MAILPayload: TypeAlias = MAILRequest | MAILResponse | MAILBroadcast | MAILInterrupt


class MAILMessage(TypedDict):
    """The envelope every message travels in."""

    id: str
    timestamp: str
    message: MAILPayload
    msg_type: MessageType


class MAILInterswarmMessage(TypedDict):
    """The wrapper for a payload crossing from one swarm to another over HTTP."""

    message_id: str
    source_swarm: str
    target_swarm: str
    timestamp: str
    payload: MAILPayload
    msg_type: InterswarmMessageType
    auth_token: str | None
    task_owner: str
    task_contributors: list[str]
    metadata: dict[str, Any] | None


MAIL_ALL_LOCAL_AGENTS: MAILAddress = {"address_type": "agent", "address": "all"}

# --------------------------------------------------------------------------------------
# addresses


def parse_agent_address(address: str) -> tuple[str, str | None]:
    """Split ``"agent@swarm"`` into ``("agent", "swarm")`` and ``"agent"`` into ``("agent", None)``.

    Splits on the first ``@`` and strips spaces. Raises :class:`InvalidMessageError` for an
    empty agent name or an empty swarm after ``@``.
    """
    name, at, swarm = address.partition("@")
    name = name.strip()
    if not name:
        raise InvalidMessageError(f"empty agent name in address {address!r}", field="address")
    if not at:
        return name, None
    swarm = swarm.strip()
    if not swarm:
        raise InvalidMessageError(f"empty swarm name in address {address!r}", field="address")
    return name, swarm


def format_agent_address(agent: str, swarm: str | None = None) -> str:
    """Return ``"agent@swarm"``, or ``"agent"`` when ``swarm`` is empty."""
    return f"{agent}@{swarm}" if swarm else agent


def create_address(address: str, address_type: AddressType) -> MAILAddress:
    """Return a :class:`MAILAddress` of the given type."""
    return {"address_type": address_type, "address": address}


def create_admin_address(address: str) -> MAILAddress:
    return {"address_type": "admin", "address": address}


def create_agent_address(address: str) -> MAILAddress:
    return {"address_type": "agent", "address": address}


def create_system_address(address: str) -> MAILAddress:
    return {"address_type": "system", "address": address}


def create_user_address(address: str) -> MAILAddress:
    return {"address_type": "user", "address": address}


def get_address_string(address: MAILAddress) -> str:
    return address["address"]


def get_address_type(address: MAILAddress) -> AddressType:
    return address["address_type"]


def format_task_contributor(role: str, caller_id: str, swarm: str) -> str:
    """Return the ``role:id@swarm`` form used in ``task_owner`` and ``task_contributors``."""
    return f"{role}:{caller_id}@{swarm}"


def parse_task_contributor(contributor: str) -> tuple[str, str, str]:
    """Split ``"role:id@swarm"`` into ``(role, id, swarm)``.

    The role ends at the first ``:`` and the swarm starts after the last ``@``, so ids
    containing ``:`` or ``@`` survive. Raises :class:`InvalidMessageError` when a part is
    missing.
    """
    role, colon, rest = contributor.partition(":")
    caller_id, at, swarm = rest.rpartition("@")
    if not (colon and at and role and caller_id and swarm):
        raise InvalidMessageError(
            f"task contributor {contributor!r} is not of the form 'role:id@swarm'",
            field="task_contributors",
        )
    return role, caller_id, swarm


def parse_task_contributors(contributors: Iterable[str]) -> list[tuple[str, str, str]]:
    return [parse_task_contributor(c) for c in contributors]


# --------------------------------------------------------------------------------------
# constructors


_VARIANT = "89ab"


def new_task_id() -> str:
    """Return a random version 4 uuid string (16 bytes from ``os.urandom``).

    Used for ids that should not be guessable, such as the ids of new tasks.
    """
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


class _IdSource:
    """Unique uuid-shaped ids: a random 68-bit prefix per process, then a counter.

    Message ids only need to be unique (peers deduplicate deliveries by them); drawing
    fresh randomness for each of the several ids every message carries was a measurable
    share of the runtime's work. The prefix is drawn again in a forked child.
    """

    __slots__ = ("counter", "prefix")

    def __init__(self) -> None:
        self.reseed()

    def reseed(self) -> None:
        h = os.urandom(9).hex()
        # 8-4-4-4-12 layout: version nibble 4, variant 8..b, 60 counter bits at the end
        self.prefix = f"{h[:8]}-{h[8:12]}-4{h[12:15]}-{_VARIANT[int(h[15], 16) & 3]}"
        self.counter = itertools.count(int(h[16:18], 16) << 48)

    def __call__(self) -> str:
        c = f"{next(self.counter):015x}"
        return f"{self.prefix}{c[:3]}-{c[3:]}"


#: Return a fresh unique id in uuid form (``xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx``).
new_id = _IdSource()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=new_id.reseed)

_second_cache: list[Any] = [-1, ""]


def format_utc(now: float) -> str:
    """Format a POSIX time as ISO-8601 UTC with microseconds and a ``+00:00`` suffix.

    The date and time of day are formatted once per second: every event and message
    takes a timestamp, so this is on the hot path.
    """
    second = int(now)
    cache = _second_cache
    if second != cache[0]:
        cache[1] = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        cache[0] = second
    return f"{cache[1]}.{int((now - second) * 1_000_000):06d}+00:00"


def utc_timestamp() -> str:
    """Return the current time as ISO-8601 UTC with microseconds and a ``+00:00`` suffix."""
    return format_utc(time.time())


def _envelope(payload: MAILPayload, msg_type: MessageType) -> MAILMessage:
    return {
        "id": new_id(),
        "timestamp": utc_timestamp(),
        "message": payload,
        "msg_type": msg_type,
    }


def make_request(
    *,
    task_id: str,
    sender: MAILAddress,
    recipient: MAILAddress,
    subject: str,
    body: str,
    sender_swarm: str | None = None,
    recipient_swarm: str | None = None,
    routing_info: dict[str, Any] | None = None,
) -> MAILMessage:
    """Build a ``request`` envelope with a fresh ``id``, ``request_id`` and timestamp."""
    payload: MAILRequest = {
        "task_id": task_id,
        "request_id": new_id(),
        "sender": sender,
        "recipient": recipient,
        "subject": subject,
        "body": body,
        "sender_swarm": sender_swarm,
        "recipient_swarm": recipient_swarm,
        "routing_info": {} if routing_info is None else routing_info,
    }
    return _envelope(payload, "request")


def make_response(
    *,
    task_id: str,
    sender: MAILAddress,
    recipient: MAILAddress,
    subject: str,
    body: str,
    sender_swarm: str | None = None,
    recipient_swarm: str | None = None,
    routing_info: dict[str, Any] | None = None,
    request_id: str | None = None,
) -> MAILMessage:
    """Build a ``response`` envelope; ``request_id`` defaults to a fresh uuid."""
    payload: MAILResponse = {
        "task_id": task_id,
        "request_id": request_id or new_id(),
        "sender": sender,
        "recipient": recipient,
        "subject": subject,
        "body": body,
        "sender_swarm": sender_swarm,
        "recipient_swarm": recipient_swarm,
        "routing_info": {} if routing_info is None else routing_info,
    }
    return _envelope(payload, "response")


def _broadcast_payload(
    task_id: str,
    sender: MAILAddress,
    recipients: list[MAILAddress],
    subject: str,
    body: str,
    sender_swarm: str | None,
    recipient_swarms: list[str] | None,
    routing_info: dict[str, Any] | None,
) -> MAILBroadcast:
    return {
        "task_id": task_id,
        "broadcast_id": new_id(),
        "sender": sender,
        "recipients": recipients,
        "subject": subject,
        "body": body,
        "sender_swarm": sender_swarm,
        "recipient_swarms": recipient_swarms,
        "routing_info": {} if routing_info is None else routing_info,
    }


def make_broadcast(
    *,
    task_id: str,
    sender: MAILAddress,
    recipients: list[MAILAddress],
    subject: str,
    body: str,
    sender_swarm: str | None = None,
    recipient_swarms: list[str] | None = None,
    routing_info: dict[str, Any] | None = None,
) -> MAILMessage:
    """Build a ``broadcast`` envelope."""
    payload = _broadcast_payload(
        task_id, sender, recipients, subject, body, sender_swarm, recipient_swarms, routing_info
    )
    return _envelope(payload, "broadcast")


def make_broadcast_complete(
    *,
    task_id: str,
    sender: MAILAddress,
    subject: str,
    body: str,
    recipients: list[MAILAddress] | None = None,
    sender_swarm: str | None = None,
    recipient_swarms: list[str] | None = None,
    routing_info: dict[str, Any] | None = None,
) -> MAILMessage:
    """Build a ``broadcast_complete`` envelope (recipients default to all local agents)."""
    payload = _broadcast_payload(
        task_id,
        sender,
        [dict(MAIL_ALL_LOCAL_AGENTS)] if recipients is None else recipients,  # type: ignore[list-item]
        subject,
        body,
        sender_swarm,
        recipient_swarms,
        routing_info,
    )
    return _envelope(payload, "broadcast_complete")


def make_interrupt(
    *,
    task_id: str,
    sender: MAILAddress,
    recipients: list[MAILAddress],
    subject: str,
    body: str,
    sender_swarm: str | None = None,
    recipient_swarms: list[str] | None = None,
    routing_info: dict[str, Any] | None = None,
) -> MAILMessage:
    """Build an ``interrupt`` envelope."""
    payload: MAILInterrupt = {
        "task_id": task_id,
        "interrupt_id": new_id(),
        "sender": sender,
        "recipients": recipients,
        "subject": subject,
        "body": body,
        "sender_swarm": sender_swarm,
        "recipient_swarms": recipient_swarms,
        "routing_info": {} if routing_info is None else routing_info,
    }
    return _envelope(payload, "interrupt")


def make_interswarm_message(
    *,
    message: MAILMessage,
    source_swarm: str,
    target_swarm: str,
    task_owner: str,
    task_contributors: list[str],
    auth_token: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> MAILInterswarmMessage:
    """Wrap ``message`` for a remote swarm; ``message_id`` and ``timestamp`` come from it."""
    msg_type = message["msg_type"]
    if msg_type not in MAIL_INTERSWARM_MESSAGE_TYPES:
        raise InvalidMessageError(
            f"message type {msg_type!r} cannot cross swarms; use one of "
            f"{', '.join(MAIL_INTERSWARM_MESSAGE_TYPES)}",
            field="msg_type",
        )
    return {
        "message_id": message["id"],
        "source_swarm": source_swarm,
        "target_swarm": target_swarm,
        "timestamp": message["timestamp"],
        "payload": message["message"],
        "msg_type": cast(InterswarmMessageType, msg_type),
        "auth_token": auth_token,
        "task_owner": task_owner,
        "task_contributors": list(task_contributors),
        "metadata": {} if metadata is None else metadata,
    }


# --------------------------------------------------------------------------------------
# helpers on messages

_PRIORITY_AGENT = {
    "interrupt": 3,
    "broadcast_complete": 3,
    "broadcast": 4,
    "request": 5,
    "response": 5,
}


def message_priority(message: MAILMessage) -> int:
    """Return the queue priority of ``message`` (lower runs first).

    system 1; user 2; agent interrupt/broadcast_complete 3, broadcast 4, request/response 5;
    anything else (admin, agent ``buffered``) 0.
    """
    sender_type = message["message"]["sender"]["address_type"]
    if sender_type == "system":
        return 1
    if sender_type == "user":
        return 2
    if sender_type == "agent":
        return _PRIORITY_AGENT.get(message["msg_type"], 0)
    return 0


def get_recipients(payload: MAILPayload) -> list[MAILAddress]:
    """Return the recipient list of any payload (``recipient`` becomes a one-item list)."""
    if "recipients" in payload:
        return cast(MAILBroadcast, payload)["recipients"]
    return [payload["recipient"]]


_UTC_MICROS_LEN = len("2025-01-08T12:00:00.000000+00:00")


def _xml_timestamp(timestamp: str) -> str:
    # Our own timestamps are already UTC with non-zero microseconds, exactly what
    # isoformat() would print; anything else is parsed and re-serialised. The "T" and "."
    # checks keep other accepted spellings (a space separator, a decimal comma) on the
    # slow path, which normalises them.
    if (
        len(timestamp) == _UTC_MICROS_LEN
        and timestamp[10] == "T"
        and timestamp[19] == "."
        and timestamp.endswith("+00:00")
        and timestamp[19:26] != ".000000"
    ):
        return timestamp
    try:
        return datetime.fromisoformat(timestamp).astimezone(UTC).isoformat()
    except ValueError:
        return timestamp


def build_mail_xml(message: MAILMessage, is_manual: bool = False) -> dict[str, str]:
    """Render ``message`` as the user turn an agent sees in its history.

    Returns ``{"role": "user", "content": S}``; for manual mode or ``buffered`` messages
    the content is the body alone. Values are inserted raw, without XML escaping, and
    ``<to>`` holds the Python list repr of the address elements, as the protocol's
    reference rendering does.
    """
    payload = message["message"]
    if is_manual or message["msg_type"] == "buffered":
        return {"role": "user", "content": payload["body"]}
    sender = payload["sender"]
    to = [
        f'<address type="{r["address_type"]}">{r["address"]}</address>'
        for r in get_recipients(payload)
    ]
    content = (
        f"\n<incoming_message>\n<timestamp>{_xml_timestamp(message['timestamp'])}</timestamp>\n"
        f'<from type="{sender["address_type"]}">{sender["address"]}</from>\n'
        f"<to>\n{to!r}\n</to>\n"
        f"<subject>{payload['subject']}</subject>\n"
        f"<body>{payload['body']}</body>\n</incoming_message>\n"
    )
    return {"role": "user", "content": content}


def build_interswarm_mail_xml(message: MAILInterswarmMessage) -> dict[str, str]:
    """Render an interswarm message for event descriptions (sender always ``agent``)."""
    payload = message["payload"]
    recipients = get_recipients(payload)
    to_items = [f'<address type="agent">{r["address"]}</address>' for r in recipients]
    to = to_items[0] if len(to_items) == 1 else repr(to_items)
    content = (
        f"\n<incoming_message>\n<timestamp>{_xml_timestamp(message['timestamp'])}</timestamp>\n"
        f'<from type="agent">{payload["sender"]["address"]}</from>\n'
        f"<to>\n{to}\n</to>\n"
        f"<subject>{payload['subject']}</subject>\n"
        f"<body>{payload['body']}</body>\n</incoming_message>\n"
    )
    return {"role": "user", "content": content}


def build_body_xml(content: Mapping[str, Any]) -> str:
    """Render a mapping as XML elements inside ``<body>`` (values inserted raw)."""

    def render(value: Any) -> str:
        if isinstance(value, Mapping):
            return "".join(f"<{k}>{render(v)}</{k}>" for k, v in value.items())
        if isinstance(value, list | tuple):
            return "".join(render(v) for v in value)
        return str(value)

    return f"<body>{render(content)}</body>"


# --------------------------------------------------------------------------------------
# validation

_UUID_RE = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)
_TASK_ID_MAX = 256

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
    if len(task_id) > _TASK_ID_MAX:
        raise _fail(f"{field}.task_id", f"must be at most {_TASK_ID_MAX} characters")
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
