"""The per-server bus of ``mail.*`` events and the subscriptions that read it.

A subscription belongs to a caller (:class:`~mail.db.CallerKey`) and sees only the
events of that caller's conversations that match its filter: ``eventTypes`` (any of
them), and the ``mail`` filter (``conversationId``, ``threadId``, ``participantId``,
``contentType``, combined with AND; only ``mail.*`` events, and our ``x-mail.*`` ones,
match it).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
from dataclasses import dataclass, field
from typing import Any

from mail.db.store import CallerKey

__all__ = ["EventBus", "MailEvent", "Subscription", "matches"]

#: events a subscription holds for a reader that is not there yet; older ones are dropped
QUEUE_LIMIT = 1000


@dataclass(slots=True, kw_only=True)
class MailEvent:
    """One ``map/event`` notification's params: ``type``, ``data`` and a server-wide
    increasing ``id``."""

    id: int
    type: str
    data: dict[str, Any]
    timestamp: int

    def wire(self, subscription_id: str) -> dict[str, Any]:
        return {
            "subscriptionId": subscription_id,
            "event": {
                "id": str(self.id),
                "type": self.type,
                "timestamp": self.timestamp,
                "data": self.data,
            },
        }


def _fields(data: dict[str, Any]) -> dict[str, set[str]]:
    """The values of an event's data the ``mail`` filter compares, by filter field."""
    turn = data.get("turn") or {}
    thread = data.get("thread") or {}
    participant = data.get("participant") or {}
    people = {
        data.get("participantId"),
        data.get("createdBy"),
        data.get("closedBy"),
        turn.get("participantId"),
        participant.get("id"),
    }
    found = {
        "conversationId": {data.get("conversationId")},
        "threadId": {turn.get("threadId"), thread.get("id")},
        "participantId": people,
        "contentType": {turn.get("contentType")},
    }
    return {name: {str(v) for v in values if v is not None} for name, values in found.items()}


#: A subscription filter's key (our extension, admins only): every caller's events.
ALL_CALLERS = "x-allCallers"


def reaches(sub: Subscription, key: CallerKey, event_type: str, data: dict[str, Any]) -> bool:
    """Whether an event of ``key``'s conversations goes to ``sub``: its caller's (or, with
    ``filter["x-allCallers"]``, an admin's, any caller's), passing its filter."""
    if sub.key != key and not sub.filter.get(ALL_CALLERS):
        return False
    return matches(sub.filter, event_type, data)


def matches(filter_: dict[str, Any], event_type: str, data: dict[str, Any]) -> bool:
    """Whether an event passes a ``map/subscribe`` filter."""
    types = filter_.get("eventTypes")
    if types and event_type not in types:
        return False
    mail = filter_.get("mail")
    if not mail:
        return True
    if not event_type.startswith(("mail.", "x-mail.")):
        return False
    found = _fields(data)
    return all(value is None or value in found.get(name, set()) for name, value in mail.items())


@dataclass(slots=True, kw_only=True)
class Subscription:
    """A caller's subscription: its id, filter and the queue its stream reads."""

    id: str
    key: CallerKey
    filter: dict[str, Any]
    queue: asyncio.Queue[MailEvent] = field(default_factory=lambda: asyncio.Queue(QUEUE_LIMIT))
    closed: asyncio.Event = field(default_factory=asyncio.Event)


class EventBus:
    """Fans ``mail.*`` events out to the subscriptions whose caller and filter match."""

    def __init__(self) -> None:
        self._subscriptions: dict[str, Subscription] = {}
        self._ids = itertools.count(1)

    def subscribe(self, key: CallerKey, filter_: dict[str, Any]) -> Subscription:
        """A new subscription of ``key``'s events that pass ``filter_``."""
        sub = Subscription(id=f"sub-{secrets.token_hex(8)}", key=key, filter=filter_)
        self._subscriptions[sub.id] = sub
        return sub

    def get(self, key: CallerKey, subscription_id: str) -> Subscription | None:
        """The caller's subscription with this id, or ``None``."""
        sub = self._subscriptions.get(subscription_id)
        return sub if sub is not None and sub.key == key else None

    def unsubscribe(self, key: CallerKey, subscription_id: str) -> bool:
        """End a subscription (its stream ends); False when the caller has none so named."""
        sub = self.get(key, subscription_id)
        if sub is None:
            return False
        del self._subscriptions[subscription_id]
        sub.closed.set()
        return True

    def listening_to(self, key: CallerKey, *event_types: str) -> bool:
        """Whether a subscription may take events of ``key``'s conversations (its own, or
        an admin's of every caller) of one of ``event_types`` (of any type when none)."""
        for sub in self._subscriptions.values():
            if sub.key != key and not sub.filter.get(ALL_CALLERS):
                continue
            types = sub.filter.get("eventTypes")
            if not types or not event_types or any(t in types for t in event_types):
                return True
        return False

    def publish(self, key: CallerKey, event_type: str, data: dict[str, Any], now: int) -> None:
        """Deliver an event of ``key``'s conversations to the matching subscriptions
        (never blocks: a full queue drops its oldest event)."""
        if not self._subscriptions:
            return
        event = MailEvent(id=next(self._ids), type=event_type, data=data, timestamp=now)
        for sub in list(self._subscriptions.values()):
            if not reaches(sub, key, event_type, data):
                continue
            if sub.queue.full():
                sub.queue.get_nowait()
            sub.queue.put_nowait(event)

    # --- beyond this process (cluster mode overrides these; here they are local) -----------

    async def register(self, sub: Subscription) -> None:
        """Make a new subscription known to every process serving the swarm."""

    async def find(self, key: CallerKey, subscription_id: str) -> Subscription | None:
        """The caller's subscription with this id, wherever it was made."""
        return self.get(key, subscription_id)

    async def forget(self, key: CallerKey, subscription_id: str) -> bool:
        """End the caller's subscription, wherever it was made."""
        return self.unsubscribe(key, subscription_id)

    def feeding(self, sub: Subscription) -> contextlib.AbstractAsyncContextManager[None]:
        """While the events of ``sub`` are streamed: here, :meth:`publish` feeds it."""
        return contextlib.nullcontext()

    def close(self) -> None:
        """End every subscription (the server stops)."""
        for sub in self._subscriptions.values():
            sub.closed.set()
        self._subscriptions.clear()
