"""The messages a swarm's caller sends (``MAILSwarm.build_message`` and ``post_message``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from mail.core.message import (
    MAILAddress,
    MAILMessage,
    create_address,
    create_agent_address,
    make_broadcast,
    make_request,
    new_task_id,
)
from mail.errors import InvalidMessageError

if TYPE_CHECKING:
    from mail.api._agents import MAILAgent

__all__ = ["SENDER_TYPES", "caller_message", "user_message"]

SENDER_TYPES = {"admin": "admin", "user": "user", "agent": "agent"}
_USER_MESSAGE_TYPES = ("request", "broadcast")
_NOT_SENDABLE = "cannot be sent by a user; use one of " + ", ".join(_USER_MESSAGE_TYPES)


def caller_message(
    swarm: str,
    user_id: str,
    subject: str,
    body: str,
    targets: Sequence[str],
    sender_type: str,
    kind: str,
    task_id: str | None,
) -> MAILMessage:
    """A ``request`` or ``broadcast`` from ``user_id`` (as ``sender_type``) to ``targets``.

    Raises :class:`InvalidMessageError` for another sender or message type, or a request
    that does not have exactly one target.
    """
    address_type = SENDER_TYPES.get(sender_type)
    if address_type is None:
        raise InvalidMessageError(
            f"sender type {sender_type!r} cannot send user messages", field="sender_type"
        )
    sender: MAILAddress = create_address(user_id, address_type)  # type: ignore[arg-type]  # checked above
    task = task_id or new_task_id()
    if kind == "request":
        if len(targets) != 1:
            raise InvalidMessageError("a request needs exactly one target", field="targets")
        return make_request(
            task_id=task,
            sender=sender,
            recipient=create_agent_address(targets[0]),
            subject=subject,
            body=body,
            sender_swarm=swarm,
            recipient_swarm=swarm,
        )
    if kind == "broadcast":
        return make_broadcast(
            task_id=task,
            sender=sender,
            recipients=[create_agent_address(t) for t in targets],
            subject=subject,
            body=body,
        )
    raise InvalidMessageError(f"message type {kind!r} {_NOT_SENDABLE}", field="msg_type")


def user_message(  # noqa: PLR0917  # the arguments of MAILSwarm.post_message
    swarm: str,
    agents: Sequence[MAILAgent],
    default_entrypoint: str,
    user_id: str,
    user_role: str,
    body: str,
    subject: str,
    msg_type: str,
    entrypoint: str | None,
    task_id: str | None,
) -> MAILMessage:
    """The caller's message to ``entrypoint`` (default: the swarm's).

    Raises :class:`InvalidMessageError` when that agent is not an entrypoint or the
    message type is neither ``request`` nor ``broadcast``.
    """
    target = (entrypoint or "").strip() or default_entrypoint
    agent = next((a for a in agents if a.name == target), None)
    if agent is None or not agent.enable_entrypoint:
        entrypoints = [a.name for a in agents if a.enable_entrypoint]
        raise InvalidMessageError(
            f"'{target}' is not an entrypoint of swarm {swarm}; use one of {', '.join(entrypoints)}",
            field="entrypoint",
        )
    if msg_type not in _USER_MESSAGE_TYPES:
        raise InvalidMessageError(f"message type {msg_type!r} {_NOT_SENDABLE}", field="msg_type")
    sender_type = user_role if user_role in SENDER_TYPES else "user"
    kind: Literal["request", "broadcast"] = "request" if msg_type == "request" else "broadcast"
    return caller_message(
        swarm, user_id, subject or "New Message", body, [target], sender_type, kind, task_id
    )
