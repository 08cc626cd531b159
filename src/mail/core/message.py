"""MAIL protocol types, addresses, constructors, XML rendering, priorities and validation.

Messages are plain dicts shaped by the TypedDicts below (the public wire contract).
They are created only by the ``make_*`` constructors here, which own ``id`` and
``timestamp``, and validated once where data enters the process with
:func:`validate_message` / :func:`validate_interswarm_message`.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

from mail.core._validation import validate_interswarm_message, validate_message
from mail.core._wire import (
    MAIL_ADDRESS_TYPES,
    MAIL_ALL_LOCAL_AGENTS,
    MAIL_INTERSWARM_MESSAGE_TYPES,
    MAIL_MESSAGE_TYPES,
    AddressType,
    InterswarmMessageType,
    MAILAddress,
    MAILBroadcast,
    MAILInterrupt,
    MAILInterswarmMessage,
    MAILMessage,
    MAILPayload,
    MAILRequest,
    MAILResponse,
    MessageType,
    create_address,
    create_admin_address,
    create_agent_address,
    create_system_address,
    create_user_address,
    format_agent_address,
    format_task_contributor,
    get_address_string,
    get_address_type,
    get_recipients,
    parse_agent_address,
    parse_task_contributor,
    parse_task_contributors,
    single_recipient,
)
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
    "single_recipient",
    "message_priority",
    "build_body_xml",
    "build_mail_xml",
    "build_interswarm_mail_xml",
    # validation
    "validate_message",
    "validate_interswarm_message",
]

# --------------------------------------------------------------------------------------
# constructors


_VARIANT = "89ab"


class _RandomPool:
    """Bytes from ``os.urandom``, drawn 4 KiB at a time and handed out once each.

    ``os.urandom`` is a system call that gives the GIL up: with a store's writer thread
    waiting for the GIL, every call cost the event loop a wait to get it back (about a
    tenth of a ``POST /message``'s time under load). A pool refilled every 256 ids keeps
    the same unpredictability (the kernel's CSPRNG) at one call per 256.
    """

    __slots__ = ("_buffer", "_lock", "_position")

    _SIZE = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buffer = b""
        self._position = 0

    def take(self, n: int) -> bytes:
        with self._lock:
            position = self._position
            if position + n > len(self._buffer):
                self._buffer = os.urandom(max(self._SIZE, n))
                position = 0
            self._position = position + n
            return self._buffer[position : position + n]

    def reseed(self) -> None:
        """Forget the pool (in a forked child, which must not repeat its parent's ids;
        a fresh lock, as the parent's may have been held by another thread)."""
        self._lock = threading.Lock()
        self._buffer = b""
        self._position = 0


_random = _RandomPool()


def new_task_id() -> str:
    """Return a new task id: a version 4 uuid string whose first 48 bits are the time in
    milliseconds, the rest random (74 bits from ``os.urandom``).

    Not guessable, and ordered by creation time: the stores' indexes on task ids then
    grow at their end instead of everywhere at once (a third less of the SQLite writer's
    work per task, most of it page writes).
    """
    h = f"{time.time_ns() // 1_000_000 & 0xFFFF_FFFF_FFFF:012x}{_random.take(10).hex()}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"


class _IdSource:
    """Unique uuid-shaped ids: a random 68-bit prefix per process, then a counter.

    Message ids only need to be unique (peers deduplicate deliveries by them); drawing
    fresh randomness for each of the several ids every message carries was a measurable
    share of the runtime's work. The prefix is drawn again in a forked child.
    """

    __slots__ = ("counter", "head", "high", "prefix")

    _LOW = 1 << 48

    def __init__(self) -> None:
        self.reseed()

    def reseed(self) -> None:
        h = os.urandom(9).hex()
        # 8-4-4-4-12 layout: version nibble 4, variant 8..b, 60 counter bits at the end
        self.prefix = f"{h[:8]}-{h[8:12]}-4{h[12:15]}-{_VARIANT[int(h[15], 16) & 3]}"
        self._start(int(h[16:18], 16))

    def _start(self, high: int) -> None:
        # the counter's top 12 bits end the fourth group: formatted once per 2**48 ids
        self.high = high
        self.head = f"{self.prefix}{high:03x}-"
        self.counter = itertools.count()

    def next_id(self) -> str:
        """The next id: the fixed head, then the counter's low 48 bits as the fifth group."""
        low = next(self.counter)
        if low >= self._LOW:  # 2**48 ids later: carry into the top bits
            self._start((self.high + 1) & 0xFFF)
            low = next(self.counter)
        return "%s%012x" % (self.head, low)  # noqa: UP031


_ids = _IdSource()
#: Return a fresh unique id in uuid form (``xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx``).
#: A bound method rather than a callable instance: several ids a message, and calling
#: an instance goes through its type's ``__call__`` lookup each time.
new_id = _ids.next_id
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_ids.reseed)
    os.register_at_fork(after_in_child=_random.reseed)

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
    # %-formatting truncates as int() does, and formats the number in a fifth less time
    return "%s.%06d+00:00" % (cache[1], (now - second) * 1_000_000)  # noqa: UP031


def utc_timestamp() -> str:
    """Return the current time as ISO-8601 UTC with microseconds and a ``+00:00`` suffix."""
    return format_utc(time.time())


def _envelope(payload: MAILPayload, msg_type: MessageType) -> MAILMessage:
    return {
        "id": new_id(),
        "timestamp": format_utc(time.time()),  # utc_timestamp(), one call less
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


_UTC_MICROS_LEN = len("2025-01-08T12:00:00.000000+00:00")

# (address type, address) -> the ``<to>`` text of a message to that one address
_rendered_to: dict[tuple[str, str], str] = {}
_RENDERED_TO_MAX = 1024


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
    recipients: list[MAILAddress] | None = payload.get("recipients")  # type: ignore[assignment]
    if recipients is None or len(recipients) == 1:
        # one recipient: the repr of a one-item list, without building the list, and
        # rendered once per address (a swarm has few)
        r = payload["recipient"] if recipients is None else recipients[0]  # type: ignore[typeddict-item]
        key = (r["address_type"], r["address"])
        to = _rendered_to.get(key)
        if to is None:
            to = f"""[{f'<address type="{key[0]}">{key[1]}</address>'!r}]"""
            if len(_rendered_to) >= _RENDERED_TO_MAX:
                _rendered_to.clear()
            _rendered_to[key] = to
    else:
        to = repr(
            [f'<address type="{r["address_type"]}">{r["address"]}</address>' for r in recipients]
        )
    timestamp = message["timestamp"]
    if not (  # _xml_timestamp's fast check, inlined: our own timestamps pass it
        len(timestamp) == _UTC_MICROS_LEN
        and timestamp[10] == "T"
        and timestamp[19] == "."
        and timestamp.endswith("+00:00")
        and timestamp[19:26] != ".000000"
    ):
        timestamp = _xml_timestamp(timestamp)
    content = (
        f"\n<incoming_message>\n<timestamp>{timestamp}</timestamp>\n"
        f'<from type="{sender["address_type"]}">{sender["address"]}</from>\n'
        f"<to>\n{to}\n</to>\n"
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
