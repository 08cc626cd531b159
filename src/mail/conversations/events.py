"""The per-server bus of ``mail.*`` events and the subscriptions that read it.

A subscription belongs to a caller (:class:`~mail.db.CallerKey`) and sees only the
events of that caller's conversations, and of the conversations shared with it, that
match its filter: ``eventTypes`` (any of them), and the ``mail`` filter
(``conversationId``, ``threadId``, ``participantId``, ``contentType``, combined with
AND; only ``mail.*`` events, and our ``x-mail.*`` ones, match it). An event of a shared
conversation names its *guests* (:attr:`MailEvent.guests`: the participants of other
callers it may reach, with the principal each was invited for), as the conversation
service decides from their rows and the turn's visibility; a subscription reaches it when
the participant it was made for is one of them, for the same principal.

Every event has an id (``eventId`` on the wire, and the SSE ``id:``): a number that grows
with each event of the server (of the swarm's Redis stream in cluster mode) and starts
past the ids of an earlier run. A subscription keeps a log of its last
:data:`RETAINED` events, each with its ``sequenceNumber`` (1, 2, 3, ... in the order the
subscription got them); its readers (a WebSocket's push, ``GET /map/events`` streams)
follow the log, each with its own cursor, so every reader gets every event and a reader
that comes back after an event id resumes right after it. The bus keeps the last
:data:`REPLAY_RETAINED` events of every caller for ``map/replay``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from mail.db.store import CallerKey
from mail.errors import MAILError

__all__ = [
    "ID_SCALE",
    "REPLAY_LIMIT",
    "REPLAY_RETAINED",
    "RETAINED",
    "EventBus",
    "EventsNotRetainedError",
    "MailEvent",
    "Reader",
    "Replay",
    "Subscription",
    "matches",
]

#: events a subscription keeps for its readers; older ones are dropped
RETAINED = 1000
#: events the bus keeps for ``map/replay`` (every caller's); older ones are dropped
REPLAY_RETAINED = 10_000
#: the most events one ``map/replay`` answers (the official SDK's maximum)
REPLAY_LIMIT = 1000
#: event ids per millisecond of the clock they start from (as cluster mode's stream ids)
ID_SCALE = 10_000


class EventsNotRetainedError(MAILError):
    """Events after the asked position are no longer kept: ``oldest`` is the id of the
    oldest event still kept (``None`` when none is)."""

    def __init__(self, message: str, *, oldest: int | None) -> None:
        super().__init__(message)
        self.oldest = oldest


@dataclass(slots=True, kw_only=True)
class MailEvent:
    """One ``mail.*`` event: ``type``, ``data``, ``timestamp`` (ms) and its ``id``."""

    id: int
    type: str
    data: dict[str, Any]
    timestamp: int
    #: the participants of other callers the event reaches: participant id -> the
    #: principal its invitation is for (not on the wire)
    guests: dict[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """The event as notifications and ``map/replay`` carry it."""
        return {
            "id": str(self.id),
            "type": self.type,
            "timestamp": self.timestamp,
            "data": self.data,
        }

    def wire(self, subscription_id: str, sequence: int) -> dict[str, Any]:
        """The params of its ``map/event`` notification as event ``sequence`` of a
        subscription."""
        return {
            "subscriptionId": subscription_id,
            "sequenceNumber": sequence,
            "eventId": str(self.id),
            "timestamp": self.timestamp,
            "event": self.body(),
        }

    def replayed(self) -> dict[str, Any]:
        """The event as an item of ``map/replay``'s ``events`` (the SDK's ``ReplayedEvent``)."""
        return {"eventId": str(self.id), "timestamp": self.timestamp, "event": self.body()}


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Reader:
    """Who reads events: the caller ``key``, as the participant ``participant_id``
    holding ``principal`` (what a guest's invitation is checked against; ``None``: the
    caller's own events only)."""

    key: CallerKey
    participant_id: str | None = None
    principal: str | None = None

    def reaches(self, filter_: dict[str, Any], key: CallerKey, event: MailEvent) -> bool:
        """Whether ``event`` of ``key``'s conversations goes to this reader with
        ``filter_``: its own, one it is a guest of (or, with ``filter["x-allCallers"]``,
        an admin's, any caller's), passing the filter."""
        if self.key != key and not filter_.get(ALL_CALLERS) and not self.guest_of(event):
            return False
        return matches(filter_, event.type, event.data)

    def guest_of(self, event: MailEvent) -> bool:
        """Whether the event reaches this reader as one of its guests."""
        pid, principal = self.participant_id, self.principal
        return pid is not None and principal is not None and event.guests.get(pid) == principal


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
    """A caller's subscription: its id, filter and the log of its last :data:`RETAINED`
    events (``(sequenceNumber, event)``) that its readers follow."""

    id: str
    key: CallerKey
    filter: dict[str, Any]
    #: who reads it: its caller as a participant (the conversations shared with it)
    reader: Reader
    #: the callers whose conversations shared with it it has had events of (or had when
    #: it was made): their events may be its
    hosts: set[CallerKey] = field(default_factory=set)
    log: deque[tuple[int, MailEvent]] = field(default_factory=lambda: deque(maxlen=RETAINED))
    #: the sequence number of the newest event (0: none yet)
    last: int = 0
    #: the id of the newest event dropped from the log (0: none)
    dropped: int = 0
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    #: set (and replaced) when an event is appended
    arrival: asyncio.Event = field(default_factory=asyncio.Event)

    def reaches(self, key: CallerKey, event: MailEvent) -> bool:
        """Whether an event of ``key``'s conversations is this subscription's."""
        return self.reader.reaches(self.filter, key, event)

    def append(self, event: MailEvent) -> None:
        """Add an event as the next one (its sequence number is the next) and wake the
        readers."""
        if len(self.log) == self.log.maxlen:
            self.dropped = self.log[0][1].id
        self.last += 1
        self.log.append((self.last, event))
        arrived, self.arrival = self.arrival, asyncio.Event()
        arrived.set()

    def since(self, cursor: int, after_id: int = 0) -> list[tuple[int, MailEvent]]:
        """The retained events after sequence number ``cursor`` whose id is past
        ``after_id`` (a reader's cursor falls behind the log: it goes on at the oldest
        retained event, its sequence numbers show the gap)."""
        if not self.log or cursor >= self.last:
            return []
        start = max(0, cursor - self.log[0][0] + 1)
        found = itertools.islice(self.log, start, None)
        return [(seq, event) for seq, event in found if event.id > after_id]

    def check_after(self, event_id: int) -> None:
        """Raise :class:`EventsNotRetainedError` when events of this subscription after
        ``event_id`` have been dropped from its log."""
        if event_id < self.dropped:
            oldest = self.log[0][1].id if self.log else None
            raise EventsNotRetainedError(
                f"events of subscription {self.id} after {event_id} are no longer kept "
                f"(it keeps its last {RETAINED}; the oldest kept is {oldest})",
                oldest=oldest,
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """What ``map/replay`` asks: the reader's events (its own and those of conversations
    shared with it; every caller's with ``filter["x-allCallers"]``) passing ``filter``,
    after the event ``after`` or from the time ``since`` (ms, inclusive), up to the time
    ``until`` (inclusive), at most ``limit``."""

    reader: Reader
    filter: dict[str, Any]
    after: int | None = None
    since: int | None = None
    until: int | None = None
    limit: int = 100

    def wants(self, key: CallerKey, event: MailEvent) -> bool:
        if self.until is not None and event.timestamp > self.until:
            return False
        return self.reader.reaches(self.filter, key, event)


def _first_id() -> int:
    """Where a process's event ids start: past every id of an earlier run."""
    return int(time.time() * 1000) * ID_SCALE


class EventBus:
    """Fans ``mail.*`` events out to the subscriptions whose caller and filter match, and
    keeps the last :data:`REPLAY_RETAINED` for ``map/replay``."""

    def __init__(self) -> None:
        self._subscriptions: dict[str, Subscription] = {}
        first = _first_id()
        self._ids = itertools.count(first + 1)
        self._log: deque[tuple[CallerKey, MailEvent]] = deque(maxlen=REPLAY_RETAINED)
        #: events up to this id (and up to this time) are not kept: before this process,
        #: or dropped
        self._floor, self._floor_time = first, first // ID_SCALE

    def subscribe(
        self,
        key: CallerKey,
        filter_: dict[str, Any],
        reader: Reader | None = None,
        hosts: Iterable[CallerKey] = (),
    ) -> Subscription:
        """A new subscription of ``key``'s events that pass ``filter_``; with ``reader``
        (of ``key``), of the conversations shared with its participant too (``hosts``:
        the callers whose conversations they are)."""
        sub = Subscription(
            id=f"sub-{secrets.token_hex(8)}",
            key=key,
            filter=filter_,
            reader=reader or Reader(key=key),
            hosts=set(hosts),
        )
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
        """Whether a subscription may take events of ``key``'s conversations (its own, a
        guest's of them, or an admin's of every caller) of one of ``event_types`` (of any
        type when none)."""
        for sub in self._subscriptions.values():
            if sub.key != key and key not in sub.hosts and not sub.filter.get(ALL_CALLERS):
                continue
            types = sub.filter.get("eventTypes")
            if not types or not event_types or any(t in types for t in event_types):
                return True
        return False

    def publish(
        self,
        key: CallerKey,
        event_type: str,
        data: dict[str, Any],
        now: int,
        guests: dict[str, str] | None = None,
    ) -> None:
        """Deliver an event of ``key``'s conversations to the matching subscriptions (its
        ``guests``' too: participant id -> principal) and keep it for ``map/replay``
        (never blocks: full logs drop their oldest event)."""
        event = MailEvent(
            id=next(self._ids), type=event_type, data=data, timestamp=now, guests=guests or {}
        )
        if len(self._log) == self._log.maxlen:
            dropped = self._log[0][1]
            self._floor, self._floor_time = dropped.id, dropped.timestamp
        self._log.append((key, event))
        for sub in list(self._subscriptions.values()):
            if sub.reaches(key, event):
                sub.append(event)
                if key != sub.key:  # (a guest's: its host's events may be its from now on)
                    sub.hosts.add(key)

    async def replay(self, replay: Replay) -> tuple[list[MailEvent], bool]:
        """The events ``replay`` asks for, oldest first, and whether more follow. Raises
        :class:`EventsNotRetainedError` when some after its position are no longer kept."""
        self._check(replay)
        start = replay.after if replay.after is not None else 0
        since = replay.since if replay.after is None else None
        found = (
            event
            for key, event in self._log
            if event.id > start
            and (since is None or event.timestamp >= since)
            and replay.wants(key, event)
        )
        return _page(found, replay.limit)

    def _check(self, replay: Replay) -> None:
        oldest = self._log[0][1].id if self._log else None
        if replay.after is not None and replay.after < self._floor:
            asked = f"after event {replay.after}"
        elif replay.after is None and replay.since is not None and replay.since <= self._floor_time:
            asked = f"from time {replay.since}"
        else:
            return
        raise EventsNotRetainedError(
            f"events {asked} are no longer kept (the server keeps the last "
            f"{REPLAY_RETAINED} events, since it started; the oldest kept is {oldest})",
            oldest=oldest,
        )

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
        """While the events of ``sub`` are read: here, :meth:`publish` feeds it."""
        return contextlib.nullcontext()

    def close(self) -> None:
        """End every subscription (the server stops)."""
        for sub in self._subscriptions.values():
            sub.closed.set()
        self._subscriptions.clear()


def _page(found: Iterator[MailEvent], limit: int) -> tuple[list[MailEvent], bool]:
    """The first ``limit`` events of ``found`` and whether there are more."""
    page = list(itertools.islice(found, limit + 1))
    return page[:limit], len(page) > limit
