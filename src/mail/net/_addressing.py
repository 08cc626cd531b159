"""Addressing interswarm messages: the copy of a message a peer sees (its addresses
qualified with their swarm), the swarms a message's targets are in, the direction it
travels (``forward`` or ``back``), and the answers of protocol 1.1 peers wrapped as
inbound messages.

Pure functions over messages, used by the router; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, cast

from mail.core.message import (
    MAIL_INTERSWARM_MESSAGE_TYPES,
    InterswarmMessageType,
    MAILAddress,
    MAILInterswarmMessage,
    MAILMessage,
    MAILPayload,
    create_agent_address,
    get_recipients,
    parse_agent_address,
    parse_task_contributor,
)
from mail.errors import InvalidMessageError
from mail.net._endpoint import is_legacy_version

__all__ = [
    "Direction",
    "by_swarm",
    "contributors_of",
    "direction_to",
    "from_legacy_answer",
    "is_legacy_version",
    "outbound_message",
    "synthesized_owner",
]

Direction = Literal["forward", "back"]


def by_swarm(targets: Iterable[str]) -> dict[str, list[str]]:
    """Group ``agent@swarm`` addresses by swarm, in first-seen order."""
    groups: dict[str, list[str]] = {}
    for target in targets:
        _, swarm = parse_agent_address(target)
        if swarm is not None:
            groups.setdefault(swarm, []).append(target)
    return groups


def contributors_of(task_contributors: Iterable[str], owner: str) -> list[str]:
    """The task's contributors with ``owner`` (this runtime) included, as sent to peers."""
    contributors = list(task_contributors)
    if owner not in contributors:
        contributors.append(owner)
    return contributors


def direction_to(swarm: str, contributors: Iterable[str]) -> Direction:
    """``back`` when ``swarm`` already works on the task (a contributor is there), else ``forward``."""
    for contributor in contributors:
        try:
            if parse_task_contributor(contributor)[2] == swarm:
                return "back"
        except InvalidMessageError:
            continue
    return "forward"


def _qualified(address: MAILAddress, local: str) -> MAILAddress:
    name, swarm = parse_agent_address(address["address"])
    return create_agent_address(f"{name}@{swarm or local}")


def outbound_message(message: MAILMessage, local: str, target_swarm: str) -> MAILMessage:
    """A copy of ``message`` as a peer must see it.

    The sender becomes the agent ``name@<local>`` (whatever its type was), unqualified
    recipients become ``name@<local>`` (so the peer skips them), and the swarm fields name
    the local and the target swarm. Ids, timestamp, subject and body are unchanged.
    """
    payload: dict[str, Any] = dict(message["message"])
    payload["sender"] = _qualified(payload["sender"], local)
    payload["sender_swarm"] = local
    if "recipients" in payload:
        recipients = [_qualified(r, local) for r in get_recipients(cast(MAILPayload, payload))]
        payload["recipients"] = recipients
        swarms = {parse_agent_address(r["address"])[1] for r in recipients} - {local}
        payload["recipient_swarms"] = sorted(s for s in swarms if s)
    else:
        payload["recipient"] = _qualified(payload["recipient"], local)
        payload["recipient_swarm"] = target_swarm
    return {**message, "message": cast(MAILPayload, payload)}


def synthesized_owner(source_swarm: str) -> str:
    """The ``task_owner`` given to tasks from protocol 1.1 peers, which send none."""
    return f"swarm:{source_swarm}@{source_swarm}"


_LEGACY_TYPES = {"broadcast_complete": "broadcast", "buffered": "request"}


def from_legacy_answer(
    answer: MAILMessage,
    *,
    source_swarm: str,
    local: str,
    task_owner: str,
    contributors: list[str],
) -> MAILInterswarmMessage:
    """Wrap the synchronous answer of a protocol 1.1 peer as an inbound ``back`` message.

    Unqualified recipients are ours (the peer answers us); the sender is left as sent
    (the inbound path qualifies it with ``source_swarm``).
    """
    payload: dict[str, Any] = dict(answer["message"])
    if "recipients" in payload:
        payload["recipients"] = [_qualified(r, local) for r in payload["recipients"]]
    else:
        payload["recipient"] = _qualified(payload["recipient"], local)
    msg_type = _LEGACY_TYPES.get(answer["msg_type"], answer["msg_type"])
    return {
        "message_id": answer["id"],
        "source_swarm": source_swarm,
        "target_swarm": local,
        "timestamp": answer["timestamp"],
        "payload": cast(MAILPayload, payload),
        "msg_type": cast(
            InterswarmMessageType,
            msg_type if msg_type in MAIL_INTERSWARM_MESSAGE_TYPES else "response",
        ),
        "auth_token": None,
        "task_owner": task_owner,
        "task_contributors": contributors,
        "metadata": {},
    }
