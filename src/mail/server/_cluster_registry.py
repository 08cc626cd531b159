"""The swarm registry shared by the replicas of a cluster (table ``cluster_swarm_registry``).

A :class:`SharedSwarmRegistry` is a :class:`~mail.net.SwarmRegistry` whose entries are
rows in PostgreSQL, one per peer of the local swarm, in the registry file's record format
(tokens as ``${VAR}`` references only: a raw token given at registration stays in the
memory of the replica that got it, the others resolve the reference from their
environment). Volatile peers are shared too (the cluster is one server to its callers);
they last as long as the database does.

Each replica keeps its table in memory, as a single server does (routing reads it
synchronously): a registration writes its row, then publishes the peer's name on the
Redis channel ``mail:registry:<swarm>``; every replica, on a message, re-reads the table.
A replica (re)subscribing re-reads it too, and so does a periodic pass every
``lease_seconds``, in case a message was lost. Health (``is_active``, ``latency``) stays
each replica's own view.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

from mail.errors import StorageError
from mail.net import SwarmRegistry
from mail.net._registry_file import decode_endpoint, encode_endpoint
from mail.net._tokens import stored_ref
from mail.server._cluster import redis_errors, registry_channel

if TYPE_CHECKING:
    from mail.net import SwarmEndpoint
    from mail.server._cluster import Cluster

__all__ = ["SharedSwarmRegistry"]

logger = logging.getLogger("mail.net.registry")

_SELECT = "SELECT swarm_name, record::text FROM cluster_swarm_registry WHERE local_swarm = $1"
_UPSERT = """INSERT INTO cluster_swarm_registry (local_swarm, swarm_name, record, updated_at)
    VALUES ($1, $2, $3::jsonb, NOW())
    ON CONFLICT (local_swarm, swarm_name) DO UPDATE SET
    record = excluded.record, updated_at = NOW()"""
_DELETE = "DELETE FROM cluster_swarm_registry WHERE local_swarm = $1 AND swarm_name = $2"
# What a replica's own health checks change: not compared when syncing.
_LOCAL_FIELDS = ("last_seen", "latency", "is_active")


def _record(endpoint: SwarmEndpoint) -> dict[str, Any]:
    return encode_endpoint(endpoint, stored_ref(endpoint))


def _shared_part(record: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in record.items() if k not in _LOCAL_FIELDS}, sort_keys=True)


class SharedSwarmRegistry(SwarmRegistry):
    """A registry kept in ``cluster``'s database (see the module); the constructor takes
    :class:`~mail.net.SwarmRegistry`'s arguments (no ``persistence_file``) and ``cluster``.

    :meth:`load` reads the table; :meth:`follow` (spawned by the lifespan) keeps the
    memory in step. Writes raise :class:`~mail.errors.StorageError` when the database
    fails (the change is then undone in memory).
    """

    def __init__(self, *args: Any, cluster: Cluster, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cluster = cluster
        self._channel = registry_channel(self.local_swarm_name)
        self._known: dict[str, str] = {}  # name -> shared part of the record last synced
        self._sync_lock = asyncio.Lock()

    def _pool(self) -> Any:
        pool = self._cluster.pool
        if pool is None:
            raise StorageError("cluster mode: the database is not open")
        return pool

    async def load(self) -> int:
        """Read the shared table into memory; return how many peers it holds."""
        await self.sync()
        return len(self._known)

    async def save(self) -> None:
        """Nothing to do: every change is written when it is made."""

    async def sync(self) -> None:
        """Make the peers in memory those of the table (entries unchanged are kept, with
        their health and any raw token)."""
        async with self._sync_lock:
            try:
                rows = await self._pool().fetch(_SELECT, self.local_swarm_name)
            except StorageError:
                raise
            except Exception as e:
                raise StorageError(f"cluster mode: reading the swarm registry failed: {e}") from e
            seen: dict[str, str] = {}
            for row in rows:
                name, record = row["swarm_name"], json.loads(row["record"])
                if name == self.local_swarm_name:
                    continue
                shared = _shared_part(record)
                seen[name] = shared
                if self._known.get(name) != shared or name not in self._endpoints:
                    source = "the cluster's swarm registry"
                    self._endpoints[name] = decode_endpoint(name, record, source)
            for name in set(self._known) - set(seen):
                self._endpoints.pop(name, None)
            self._known = seen

    async def follow(self) -> None:
        """Keep the memory in step with the table until cancelled: on every message of the
        registry channel, and every ``lease_seconds`` in case one was lost."""

        async def on_message(_name: str) -> None:
            try:
                await self.sync()
            except StorageError as e:
                logger.warning("%s", e)

        async def periodic() -> None:
            while True:
                await asyncio.sleep(self._cluster.lease_seconds)
                await on_message("")

        async with asyncio.TaskGroup() as group:
            group.create_task(self._cluster.listen(self._channel, on_message))
            group.create_task(periodic())

    async def _registered(self, swarm_name: str, previous: SwarmEndpoint | None) -> None:
        endpoint = self._endpoints[swarm_name]
        record = _record(endpoint)
        async with self._sync_lock:  # a sync meanwhile must not undo the new entry
            try:
                await self._pool().execute(
                    _UPSERT, self.local_swarm_name, swarm_name, json.dumps(record)
                )
            except Exception as e:
                self._put_back(swarm_name, previous)
                raise StorageError(f"cluster mode: saving swarm {swarm_name!r} failed: {e}") from e
            self._endpoints[swarm_name] = endpoint
            self._known[swarm_name] = _shared_part(record)
        await self._announce(swarm_name)

    async def _unregistered(self, swarm_name: str, endpoint: SwarmEndpoint) -> None:
        async with self._sync_lock:
            try:
                await self._pool().execute(_DELETE, self.local_swarm_name, swarm_name)
            except Exception as e:
                self._put_back(swarm_name, endpoint)
                raise StorageError(
                    f"cluster mode: removing swarm {swarm_name!r} failed: {e}"
                ) from e
            self._endpoints.pop(swarm_name, None)
            self._known.pop(swarm_name, None)
        await self._announce(swarm_name)

    async def _announce(self, swarm_name: str) -> None:
        try:
            await self._cluster.publish(self._channel, swarm_name)
        except redis_errors() as e:  # the others catch up at their next periodic sync
            logger.warning("cluster mode: announcing swarm %r failed: %s", swarm_name, e)
