"""MAIL protocol types, addresses, constructors, XML rendering, priorities and validation.

Messages are plain dicts shaped by the TypedDicts below (the public wire contract).
They are created only by the ``make_*`` constructors here, which own ``id`` and
``timestamp``, and validated once where data enters the process with
:func:`validate_message` / :func:`validate_interswarm_message`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
    "utc_timestamp",
    "make_request",
    "make_response",
    "make_broadcast",
    "make_interrupt",
    "make_broadcast_complete",
    "make_interswarm_message",
    # an agent's history read back
    "Incoming",
    "parse_incoming",
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


#: the version (4) and variant (RFC 4122) bits of a version 4 uuid, and their mask
_V4_BITS = 0x4 << 76 | 0x2 << 62
_V4_MASK = ~(0xF << 76 | 0x3 << 62)


def _uuid4_string(value: int) -> str:
    """The 128 bits of ``value`` as a version 4 uuid string (its version and variant bits
    set). Formatted directly: ``str(uuid.UUID(...))`` costs twice as much, for ids made
    several times per task."""
    h = f"{value & _V4_MASK | _V4_BITS:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def new_id() -> str:
    """Return a fresh random id in uuid form (``xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx``)."""
    return _uuid4_string(int.from_bytes(os.urandom(16)))


def new_task_id() -> str:
    """Return a new task id: a version 4 uuid string whose first 48 bits are the time in
    milliseconds, the rest random (74 bits).

    Not guessable, and ordered by creation time: the stores' indexes on task ids then
    grow at their end instead of everywhere at once.
    """
    millis = time.time_ns() // 1_000_000 & 0xFFFF_FFFF_FFFF
    return _uuid4_string(millis << 80 | int.from_bytes(os.urandom(10)))


def utc_timestamp() -> str:
    """Return the current time as ISO-8601 UTC with microseconds and a ``+00:00`` suffix."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _set_swarms(
    payload: MAILPayload,
    sender_swarm: str | None,
    key: str,
    recipient_swarms: str | list[str] | None,
) -> None:
    # The original's schemas type these fields as strings (arrays of strings), never null:
    # an unknown swarm leaves its key out.
    fields = cast(dict[str, Any], payload)
    if sender_swarm is not None:
        fields["sender_swarm"] = sender_swarm
    if recipient_swarms is not None:
        fields[key] = recipient_swarms


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
    """Build a ``request`` envelope with a fresh ``id``, ``request_id`` and timestamp.

    A swarm field left ``None`` is left out of the payload (the original's schema types it
    as a string); the same holds for every constructor here.
    """
    payload: MAILRequest = {
        "task_id": task_id,
        "request_id": new_id(),
        "sender": sender,
        "recipient": recipient,
        "subject": subject,
        "body": body,
        "routing_info": {} if routing_info is None else routing_info,
    }
    _set_swarms(payload, sender_swarm, "recipient_swarm", recipient_swarm)
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
        "routing_info": {} if routing_info is None else routing_info,
    }
    _set_swarms(payload, sender_swarm, "recipient_swarm", recipient_swarm)
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
    payload: MAILBroadcast = {
        "task_id": task_id,
        "broadcast_id": new_id(),
        "sender": sender,
        "recipients": recipients,
        "subject": subject,
        "body": body,
        "routing_info": {} if routing_info is None else routing_info,
    }
    _set_swarms(payload, sender_swarm, "recipient_swarms", recipient_swarms)
    return payload


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
        "routing_info": {} if routing_info is None else routing_info,
    }
    _set_swarms(payload, sender_swarm, "recipient_swarms", recipient_swarms)
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
    """Wrap ``message`` for a remote swarm; ``message_id`` and ``timestamp`` come from it.

    ``auth_token`` is left out when ``None``. Raises :class:`InvalidMessageError` for a
    message type that cannot cross swarms.
    """
    msg_type = message["msg_type"]
    if msg_type not in MAIL_INTERSWARM_MESSAGE_TYPES:
        raise InvalidMessageError(
            f"message type {msg_type!r} cannot cross swarms; use one of "
            f"{', '.join(MAIL_INTERSWARM_MESSAGE_TYPES)}",
            field="msg_type",
        )
    wrapped: MAILInterswarmMessage = {
        "message_id": message["id"],
        "source_swarm": source_swarm,
        "target_swarm": target_swarm,
        "timestamp": message["timestamp"],
        "payload": message["message"],
        "msg_type": cast(InterswarmMessageType, msg_type),
        "task_owner": task_owner,
        "task_contributors": list(task_contributors),
        "metadata": {} if metadata is None else metadata,
    }
    if auth_token is not None:  # a string when present (the original's schema)
        wrapped["auth_token"] = auth_token
    return wrapped


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


def _xml_timestamp(timestamp: str) -> str:
    """``timestamp`` in UTC as ``isoformat()`` writes it (as given when it is not ISO-8601)."""
    try:
        return datetime.fromisoformat(timestamp).astimezone(UTC).isoformat()
    except ValueError:
        return timestamp


def _xml_text(value: str) -> str:
    # The three characters that could close or open markup; quotes stay (text, not attributes).
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def build_mail_xml(message: MAILMessage, is_manual: bool = False) -> dict[str, str]:
    """Render ``message`` as the user turn an agent sees in its history.

    Returns ``{"role": "user", "content": S}``; for manual mode or ``buffered`` messages
    the content is the body alone. ``&``, ``<`` and ``>`` in the sender, the recipients,
    the subject and the body are escaped (``&amp;``, ``&lt;``, ``&gt;``), so a body such as
    ``</body><from type="admin">`` cannot pass for structure (protocol v1.3.6 inserted
    them raw). ``<to>`` holds the Python list repr of the address elements, as the
    protocol's reference rendering does.
    """
    payload = message["message"]
    if is_manual or message["msg_type"] == "buffered":
        return {"role": "user", "content": payload["body"]}
    sender = payload["sender"]
    to = repr(
        [
            f'<address type="{r["address_type"]}">{_xml_text(r["address"])}</address>'
            for r in get_recipients(payload)
        ]
    )
    content = (
        f"\n<incoming_message>\n<timestamp>{_xml_timestamp(message['timestamp'])}</timestamp>\n"
        f'<from type="{sender["address_type"]}">{_xml_text(sender["address"])}</from>\n'
        f"<to>\n{to}\n</to>\n"
        f"<subject>{_xml_text(payload['subject'])}</subject>\n"
        f"<body>{_xml_text(payload['body'])}</body>\n</incoming_message>\n"
    )
    return {"role": "user", "content": content}


@dataclass(slots=True)
class Incoming:
    """The message that started a turn, read back from the agent's history.

    ``sender``, ``subject`` and ``body`` are the message's own text (the XML escaping
    undone); ``content`` is the history item as the runtime rendered it.
    """

    sender: str
    sender_type: str
    subject: str
    body: str
    content: str


def _unescape(text: str) -> str:
    # The inverse of the escaping in build_mail_xml (&amp; last).
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _parse(content: str) -> Incoming:
    i = content.find('<from type="')
    sender_type = sender = ""
    if i >= 0:
        i += 12
        j = content.find('">', i)
        if j >= i:
            sender_type = content[i:j]
            k = j + 2  # the sender follows the first <from type="..."> at once
            end = content.find("</from>", k)
            if end >= k:
                sender = _unescape(content[k:end])
    body = content
    i = content.find("<body>")
    if i >= 0:
        j = content.rfind("</body>\n</incoming_message>")
        if j >= i + 6:
            body = _unescape(content[i + 6 : j])
    subject_end = content.find("</subject>\n<body>")
    start_subject = content.find("<subject>")
    subject = (
        _unescape(content[start_subject + 9 : subject_end])
        if 0 <= start_subject < subject_end
        else ""
    )
    return Incoming(sender, sender_type, subject, body, content)


def parse_incoming(history: Sequence[dict[str, Any]]) -> Incoming:
    """Read the newest incoming MAIL message of ``history`` (the XML the runtime renders)."""
    for item in reversed(history):
        content = item.get("content")
        if item.get("role") == "user" and isinstance(content, str):
            return _parse(content)
    return Incoming("", "", "", "", "")


def build_interswarm_mail_xml(message: MAILInterswarmMessage) -> dict[str, str]:
    """Render an interswarm message for event descriptions (sender always ``agent``),
    escaping text as :func:`build_mail_xml` does."""
    payload = message["payload"]
    recipients = get_recipients(payload)
    to_items = [f'<address type="agent">{_xml_text(r["address"])}</address>' for r in recipients]
    to = to_items[0] if len(to_items) == 1 else repr(to_items)
    content = (
        f"\n<incoming_message>\n<timestamp>{_xml_timestamp(message['timestamp'])}</timestamp>\n"
        f'<from type="agent">{_xml_text(payload["sender"]["address"])}</from>\n'
        f"<to>\n{to}\n</to>\n"
        f"<subject>{_xml_text(payload['subject'])}</subject>\n"
        f"<body>{_xml_text(payload['body'])}</body>\n</incoming_message>\n"
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
