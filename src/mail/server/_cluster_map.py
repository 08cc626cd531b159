"""Cluster mode: MAP Mail's ``mail.*`` events and subscriptions shared by the replicas.

A client may ``map/subscribe`` on one replica and read ``GET /map/events`` from another,
while the events come from a third. So every replica appends each event to one Redis
stream per swarm (``mail:map:<swarm>``, trimmed to about :data:`STREAM_MAXLEN` entries)
instead of handing it to its own subscriptions, and a subscription is a Redis key
(``mail:map:sub:<id>``: the caller, the filter and the stream entry it starts after, kept
a day after its last use). A replica streaming a subscription's events reads the stream
from there, keeps what the caller and filter match, and ends the stream once the key is
gone (``map/unsubscribe`` on any replica).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from mail.conversations.events import EventBus, MailEvent, Subscription, reaches
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


def _sub_key(subscription_id: str) -> str:
    return f"mail:map:sub:{subscription_id}"


def _key(parts: list[str]) -> CallerKey:
    swarm, role, caller_id = parts
    return CallerKey(swarm=swarm, role=role, id=caller_id)


def _event_id(entry_id: str) -> int:
    """A stream entry's id (``<ms>-<n>``) as the increasing number ``map/event`` carries."""
    ms, _, n = entry_id.partition("-")
    return int(ms) * 10_000 + int(n or 0)


class SharedEventBus(EventBus):
    """:class:`EventBus` over Redis (see the module)."""

    def __init__(self, cluster: Cluster, swarm: str) -> None:
        super().__init__()
        self.cluster = cluster
        self.stream = f"mail:map:{swarm}"
        self._outbox: asyncio.Queue[str] = asyncio.Queue()
        #: subscription id -> the stream entry its events start after (known here)
        self._marks: dict[str, str] = {}

    @property
    def _redis(self) -> Any:
        assert self.cluster.redis is not None  # noqa: S101  # open while the server runs
        return self.cluster.redis

    # --- events -------------------------------------------------------------------------------

    def listening_to(self, key: CallerKey, *event_types: str) -> bool:
        """Always: a subscriber may listen on any replica."""
        return True

    def publish(self, key: CallerKey, event_type: str, data: dict[str, Any], now: int) -> None:
        """Queue the event for the stream (:meth:`publish_forever` appends it)."""
        item = {"key": [key.swarm, key.role, key.id], "type": event_type, "data": data, "now": now}
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
        await self._save(sub)

    async def _save(self, sub: Subscription, **flags: bool) -> None:
        """Write ``sub``'s key: its caller, filter and mark (``xx``: only if it exists)."""
        key = [sub.key.swarm, sub.key.role, sub.key.id]
        record = {"key": key, "filter": sub.filter, "mark": self._marks[sub.id]}
        await self._redis.set(_sub_key(sub.id), json.dumps(record), ex=_SUB_TTL, **flags)

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
        sub = Subscription(id=subscription_id, key=key, filter=record["filter"])
        self._subscriptions[sub.id] = sub
        self._marks[sub.id] = record["mark"]
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
        """Feed ``sub``'s queue from the stream while its events are streamed; then note
        where it stopped, for a stream opened later on any replica."""
        reader = asyncio.get_running_loop().create_task(self._feed(sub))
        try:
            yield
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            if sub.id in self._marks:  # not unsubscribed meanwhile
                with contextlib.suppress(*redis_errors()):
                    await self._save(sub, xx=True)

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
                self._offer(sub, entry_id, json.loads(fields["e"]))

    @staticmethod
    def _offer(sub: Subscription, entry_id: str, item: dict[str, Any]) -> None:
        if not reaches(sub, _key(item["key"]), item["type"], item["data"]):
            return
        event = MailEvent(
            id=_event_id(entry_id), type=item["type"], data=item["data"], timestamp=item["now"]
        )
        if sub.queue.full():
            sub.queue.get_nowait()
        sub.queue.put_nowait(event)
