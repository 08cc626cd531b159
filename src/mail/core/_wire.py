"""Wire vocabulary and types of MAIL messages, and the address helpers.

Public through :mod:`mail.core.message`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict, get_args

from mail.errors import InvalidMessageError

__all__ = [
    "AddressType",
    "MessageType",
    "InterswarmMessageType",
    "MAIL_ADDRESS_TYPES",
    "MAIL_MESSAGE_TYPES",
    "MAIL_INTERSWARM_MESSAGE_TYPES",
    "MAILAddress",
    "MAILRequest",
    "MAILResponse",
    "MAILBroadcast",
    "MAILInterrupt",
    "MAILPayload",
    "MAILMessage",
    "MAILInterswarmMessage",
    "MAIL_ALL_LOCAL_AGENTS",
    "parse_agent_address",
    "format_agent_address",
    "create_address",
    "create_admin_address",
    "create_agent_address",
    "create_system_address",
    "create_user_address",
    "get_address_string",
    "get_address_type",
    "get_recipients",
    "single_recipient",
    "parse_task_contributor",
    "parse_task_contributors",
    "format_task_contributor",
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
    sender_swarm: NotRequired[str | None]
    recipient_swarm: NotRequired[str | None]
    routing_info: dict[str, Any] | None


class MAILResponse(TypedDict):
    task_id: str
    request_id: str
    sender: MAILAddress
    recipient: MAILAddress
    subject: str
    body: str
    sender_swarm: NotRequired[str | None]
    recipient_swarm: NotRequired[str | None]
    routing_info: dict[str, Any] | None


class MAILBroadcast(TypedDict):
    task_id: str
    broadcast_id: str
    sender: MAILAddress
    recipients: list[MAILAddress]
    subject: str
    body: str
    sender_swarm: NotRequired[str | None]
    recipient_swarms: NotRequired[list[str] | None]
    routing_info: dict[str, Any] | None


class MAILInterrupt(TypedDict):
    task_id: str
    interrupt_id: str
    sender: MAILAddress
    recipients: list[MAILAddress]
    subject: str
    body: str
    sender_swarm: NotRequired[str | None]
    recipient_swarms: NotRequired[list[str] | None]
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
    auth_token: NotRequired[str | None]
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


def format_agent_address(agent_name: str, swarm_name: str | None = None) -> str:
    """Return ``"agent@swarm"``, or ``"agent"`` when ``swarm`` is empty."""
    return f"{agent_name}@{swarm_name}" if swarm_name else agent_name


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


def single_recipient(payload: MAILPayload) -> MAILAddress | None:
    """The ``recipient`` of a request or response payload; ``None`` for the other kinds."""
    if "recipient" in payload:
        return payload["recipient"]  # type: ignore[typeddict-item]
    return None


def get_recipients(payload: MAILPayload) -> list[MAILAddress]:
    """Return the recipient list of any payload (``recipient`` becomes a one-item list)."""
    if "recipients" in payload:
        return payload["recipients"]  # type: ignore[typeddict-item]
    return [payload["recipient"]]
