"""Cluster mode: MAP Mail's ``mail.*`` events and subscriptions shared by the replicas.

A client may ``map/subscribe`` on one replica and read ``GET /map/events`` from another,
while the events come from a third. So every replica appends each event to one Redis
stream per swarm (``mail:map:<swarm>``, trimmed to about :data:`STREAM_MAXLEN` entries)
instead of handing it to its own subscriptions, and a subscription is a Redis key
(``mail:map:sub:<id>``: the caller, the participant and principal it reads as, the filter and the stream entry it
starts after, kept
a day after its last use). An event's id is its stream entry's (``<ms>-<n>`` as the
number ``ms * 10000 + n``): the same on every replica.

While a subscription's events are read on a replica (one feed per subscription there,
however many readers), the replica reads the stream from the subscription's start, keeps
what the caller and filter match, numbers them in stream order (so every replica gives an
event the same ``sequenceNumber``) into the subscription's log, which its readers follow
as on one server; it ends the readers once the key is gone (``map/unsubscribe`` on any
replica). ``map/replay`` reads the stream itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from mail.conversations.events import (
    ID_SCALE,
    EventBus,
    EventsNotRetainedError,
    MailEvent,
    Reader,
    Replay,
    Subscription,
)
from mail.db.store import CallerKey
from mail.server._cluster import redis_errors

if TYPE_CHECKING:
    from mail.server._cluster import Cluster

__all__ = ["STREAM_MAXLEN", "SharedEventBus"]

logger = logging.getLogger("mail.server.cluster")

STREAM_MAXLEN = 10_000
_SUB_TTL = 86_400
#: how often a streamed subscription checks that it still exists (and keeps it alive)
_CHECK_SECONDS = 2.0
_BLOCK_MS = 1000
#: stream entries map/replay reads at a time
_PAGE = 500


def _sub_key(subscription_id: str) -> str:
    return f"mail:map:sub:{subscription_id}"


def _key(parts: list[str]) -> CallerKey:
    swarm, role, caller_id = parts
    return CallerKey(swarm=swarm, role=role, id=caller_id)


def _event_id(entry_id: str) -> int:
    """A stream entry's id (``<ms>-<n>``) as the increasing number ``map/event`` carries."""
    ms, _, n = entry_id.partition("-")
    return int(ms) * ID_SCALE + int(n or 0)


def _entry_id(event_id: int) -> str:
    """The stream entry id of an event id (:func:`_event_id`'s inverse)."""
    return f"{event_id // ID_SCALE}-{event_id % ID_SCALE}"


class SharedEventBus(EventBus):
    """:class:`EventBus` over Redis (see the module)."""

    def __init__(self, cluster: Cluster, swarm: str) -> None:
        super().__init__()
        self.cluster = cluster
        self.stream = f"mail:map:{swarm}"
        self._outbox: asyncio.Queue[str] = asyncio.Queue()
        #: subscription id -> the stream entry its log here was fed up to
        self._marks: dict[str, str] = {}
        #: subscription id -> its feed here and how many readers it has
        self._feeds: dict[str, tuple[asyncio.Task[None], int]] = {}

    @property
    def _redis(self) -> Any:
        assert self.cluster.redis is not None  # noqa: S101  # open while the server runs
        return self.cluster.redis

    # --- events -------------------------------------------------------------------------------

    def listening_to(self, key: CallerKey, *event_types: str) -> bool:
        """Always: a subscriber may listen on any replica."""
        return True

    def publish(
        self,
        key: CallerKey,
        event_type: str,
        data: dict[str, Any],
        now: int,
        guests: dict[str, str] | None = None,
    ) -> None:
        """Queue the event, with its guests, for the stream (:meth:`publish_forever`
        appends it)."""
        item = {"key": [key.swarm, key.role, key.id], "type": event_type, "data": data, "now": now}
        if guests:
            item["guests"] = guests
        self._outbox.put_nowait(json.dumps(item, separators=(",", ":")))

    async def publish_forever(self) -> None:
        """Append the queued events to the stream, in order, until cancelled."""
        while True:
            item = await self._outbox.get()
            try:
                await self._redis.xadd(
                    self.stream, {"e": item}, maxlen=STREAM_MAXLEN, approximate=True
                )
            except redis_errors() as e:
                logger.warning("a mail.* event was not shared (Redis failed): %s", e)

    # --- subscriptions ------------------------------------------------------------------------

    async def register(self, sub: Subscription) -> None:
        """Record ``sub`` in Redis, starting after the stream's newest entry."""
        newest = await self._redis.xrevrange(self.stream, count=1)
        self._marks[sub.id] = newest[0][0] if newest else "0-0"
        key = [sub.key.swarm, sub.key.role, sub.key.id]
        reader = [sub.reader.participant_id, sub.reader.principal]
        record = {"key": key, "reader": reader, "filter": sub.filter, "start": self._marks[sub.id]}
        await self._redis.set(_sub_key(sub.id), json.dumps(record), ex=_SUB_TTL)

    async def find(self, key: CallerKey, subscription_id: str) -> Subscription | None:
        """The caller's subscription, made here or on another replica."""
        found = self.get(key, subscription_id)
        if found is not None:
            return found
        raw = await self._redis.get(_sub_key(subscription_id))
        if raw is None:
            return None
        record = json.loads(raw)
        if _key(record["key"]) != key:
            return None  # another caller's: as unknown
        participant_id, principal = record.get("reader") or (None, None)
        reader = Reader(key=key, participant_id=participant_id, principal=principal)
        sub = Subscription(id=subscription_id, key=key, filter=record["filter"], reader=reader)
        self._subscriptions[sub.id] = sub
        self._marks[sub.id] = record["start"]  # numbered from its start, as everywhere
        return sub

    async def forget(self, key: CallerKey, subscription_id: str) -> bool:
        """End the subscription here and everywhere (its streams see the key gone)."""
        if await self.find(key, subscription_id) is None:
            return False
        self.unsubscribe(key, subscription_id)
        self._marks.pop(subscription_id, None)
        await self._redis.delete(_sub_key(subscription_id))
        return True

    @contextlib.asynccontextmanager
    async def feeding(self, sub: Subscription) -> AsyncIterator[None]:
        """Feed ``sub``'s log here from the stream while it has readers here."""
        task, readers = self._feeds.get(sub.id, (None, 0))
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(self._feed(sub), name=f"feed:{sub.id}")
        self._feeds[sub.id] = (task, readers + 1)
        try:
            yield
        finally:
            task, readers = self._feeds[sub.id]
            if readers > 1:
                self._feeds[sub.id] = (task, readers - 1)
            else:
                del self._feeds[sub.id]
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _feed(self, sub: Subscription) -> None:
        checked = time.monotonic()
        while not sub.closed.is_set() and (mark := self._marks.get(sub.id)) is not None:
            try:
                entries = await self._redis.xread({self.stream: mark}, count=200, block=_BLOCK_MS)
                if time.monotonic() - checked >= _CHECK_SECONDS:
                    checked = time.monotonic()
                    if not await self._redis.expire(_sub_key(sub.id), _SUB_TTL):
                        sub.closed.set()  # unsubscribed (or expired): the stream ends
            except redis_errors() as e:
                logger.warning("subscription %s: Redis failed, retrying: %s", sub.id, e)
                await asyncio.sleep(1.0)
                continue
            for entry_id, fields in entries[0][1] if entries else []:
                self._marks[sub.id] = entry_id
                _offer(sub, entry_id, json.loads(fields["e"]))

    # --- map/replay ---------------------------------------------------------------------------

    async def replay(self, replay: Replay) -> tuple[list[MailEvent], bool]:
        """The events ``replay`` asks for, read from the stream (see :meth:`EventBus.replay`)."""
        await self._check_trimmed(replay)
        if replay.after is not None:
            start = f"({_entry_id(replay.after)}"
        else:
            start = f"{replay.since}-0" if replay.since is not None else "-"
        found: list[MailEvent] = []
        while len(found) <= replay.limit:
            entries = await self._redis.xrange(self.stream, min=start, count=_PAGE)
            for entry_id, fields in entries:
                item = json.loads(fields["e"])
                event = _event(entry_id, item)
                if replay.wants(_key(item["key"]), event):
                    found.append(event)
            if len(entries) < _PAGE:
                break
            start = f"({entries[-1][0]}"
        return found[: replay.limit], len(found) > replay.limit

    async def _check_trimmed(self, replay: Replay) -> None:
        """Raise :class:`EventsNotRetainedError` when the stream was trimmed past the asked
        position (the asked event itself is gone: later ones may be too)."""
        if replay.after is None and replay.since is None:
            return
        try:
            info = await self._redis.xinfo_stream(self.stream)
        except redis_errors():
            return  # no stream yet: nothing was ever trimmed
        first = info.get("first-entry")
        if first is None or int(info.get("entries-added", 0)) <= int(info.get("length", 0)):
            return
        oldest = _event_id(first[0])
        if replay.after is not None:
            gone, asked = replay.after < oldest, f"after event {replay.after}"
        else:
            gone, asked = (
                replay.since is not None and replay.since <= oldest // ID_SCALE,
                (f"from time {replay.since}"),
            )
        if gone:
            raise EventsNotRetainedError(
                f"events {asked} are no longer kept (the swarm's stream keeps about "
                f"{STREAM_MAXLEN} events; the oldest kept is {oldest})",
                oldest=oldest,
            )


def _event(entry_id: str, item: dict[str, Any]) -> MailEvent:
    return MailEvent(
        id=_event_id(entry_id),
        type=item["type"],
        data=item["data"],
        timestamp=item["now"],
        guests=item.get("guests") or {},
    )


def _offer(sub: Subscription, entry_id: str, item: dict[str, Any]) -> None:
    event = _event(entry_id, item)
    if sub.reaches(_key(item["key"]), event):
        sub.append(event)
