"""Cluster mode: this server as one replica of several, sharing PostgreSQL and Redis.

With ``[server.cluster] redis_url`` set, the lifespan opens a :class:`Cluster`: one asyncpg
pool (shared with the task store) on which the cluster tables are migrated, and one Redis
client. The replica announces itself with a heartbeat key ``mail:replica:<id>`` that
expires after ``lease_seconds`` unless renewed (every third of it), and the replicas tell
each other about registry changes on the pub/sub channel ``mail:registry:<swarm>``.

What lives where (docs/scaling.md): API keys and roles (:mod:`mail.server._cluster_auth`)
and the swarm registry (:mod:`mail.server._cluster_registry`) in PostgreSQL; who is alive
in Redis. Tasks still run and stream only on the replica that created them.

:func:`preflight` runs before ``mail server`` starts anything, so a cluster that cannot
work is one line (a :class:`~mail.errors.ConfigurationError`), not a traceback. Redis and
asyncpg are imported here only when cluster mode is on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from mail.errors import ConfigurationError

if TYPE_CHECKING:
    from mail.config import MAILConfig

__all__ = [
    "REPLICA_PREFIX",
    "Cluster",
    "describe_redis",
    "preflight",
    "redis_errors",
    "redis_module",
    "replicas_seen",
    "require_postgres",
    "survey",
    "registry_channel",
    "replica_key",
]

logger = logging.getLogger("mail.server.cluster")

#: Each replica's heartbeat key is this prefix and its id; the value is a JSON object.
REPLICA_PREFIX = "mail:replica:"
_REDIS_TIMEOUT = 3.0


def replica_key(replica_id: str) -> str:
    """The Redis key of ``replica_id``'s heartbeat."""
    return f"{REPLICA_PREFIX}{replica_id}"


def registry_channel(swarm: str) -> str:
    """The pub/sub channel on which replicas of ``swarm`` announce registry changes."""
    return f"mail:registry:{swarm}"


def describe_redis(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def redis_module() -> Any:
    """``redis.asyncio``, imported now. Raises :class:`ConfigurationError` naming the extra."""
    try:
        import redis.asyncio  # noqa: PLC0415  # only in cluster mode (STYLE §4)
    except ImportError as e:
        raise ConfigurationError(
            "cluster mode ([server.cluster] redis_url) needs the redis package: "
            "pip install 'mail-swarms[cluster]'"
        ) from e
    return redis.asyncio


def redis_errors() -> tuple[type[BaseException], ...]:
    """What a failing Redis call raises (its own errors, or the socket's)."""
    return (redis_module().RedisError, OSError)


def require_postgres(config: MAILConfig) -> None:
    """Raise :class:`ConfigurationError` unless the task store is PostgreSQL."""
    backend = config.database.backend
    if backend != "postgres":
        raise ConfigurationError(
            f"cluster mode ([server.cluster] redis_url) needs the PostgreSQL store, not "
            f"{backend}: set [database] url (DATABASE_URL) to the database the replicas share"
        )


def preflight(config: MAILConfig) -> None:
    """Check, before anything starts, that cluster mode can work; nothing without it.

    Raises :class:`ConfigurationError` (one line) when the store is not PostgreSQL, the
    redis package is missing, or Redis does not answer within a few seconds.
    """
    if not config.server.cluster.enabled:
        return
    require_postgres(config)
    redis_module()
    asyncio.run(_ping(_redis_url(config)))


async def _ping(url: str) -> str:
    """Connect to Redis at ``url`` and return its version; raises ConfigurationError."""
    client = _client(url)
    try:
        return await _version(client, url)
    finally:
        await client.aclose()


def _redis_url(config: MAILConfig) -> str:
    url = config.server.cluster.redis_url
    if url is None:
        raise ConfigurationError("cluster mode needs [server.cluster] redis_url")
    return url


def _client(url: str) -> Any:
    return redis_module().Redis.from_url(
        url,
        socket_timeout=_REDIS_TIMEOUT,
        socket_connect_timeout=_REDIS_TIMEOUT,
        decode_responses=True,
    )


async def _version(client: Any, url: str) -> str:
    try:
        info = await client.info("server")
    except Exception as e:  # redis raises its own ConnectionError, TimeoutError, ...
        raise ConfigurationError(f"cannot reach Redis at {describe_redis(url)}: {e}") from e
    return str(info.get("redis_version", "unknown"))


class Cluster:
    """This replica's view of the cluster: the shared PostgreSQL pool, Redis, its heartbeat.

    Built from ``config`` (cluster mode on, PostgreSQL store) and ``url`` (what the
    heartbeat advertises). :meth:`open` connects; :meth:`run` keeps the heartbeat alive
    (spawned by the lifespan); :meth:`close` removes the heartbeat and disconnects.
    """

    def __init__(self, config: MAILConfig, url: str) -> None:
        require_postgres(config)
        cluster = config.server.cluster
        self.replica_id = config.server.replica_id
        self.lease_seconds = cluster.lease_seconds
        self.url = url
        self._redis_url = _redis_url(config)
        self._dsn = config.database.url
        self.pool: Any | None = None
        self.redis: Any | None = None
        self.redis_version = ""
        self._started = time.time()

    async def open(self) -> None:
        """Connect to Redis (its version is kept) and PostgreSQL, migrate, and beat once.

        Raises :class:`ConfigurationError` when Redis does not answer and
        :class:`~mail.errors.StorageError` when the database cannot be opened.
        """
        self.redis = _client(self._redis_url)
        self.redis_version = await _version(self.redis, self._redis_url)
        self.pool = await _open_pool(self._dsn)
        await self.beat()
        logger.info(
            "replica %s joined the cluster (Redis %s at %s)",
            self.replica_id,
            self.redis_version,
            describe_redis(self._redis_url),
        )

    def _heartbeat(self) -> str:
        return json.dumps(
            {
                "replica_id": self.replica_id,
                "url": self.url,
                "pid": os.getpid(),
                "started": self._started,
                "beat": time.time(),
            }
        )

    async def beat(self) -> None:
        """Write this replica's heartbeat key, expiring after ``lease_seconds``."""
        assert self.redis is not None  # noqa: S101  # opened first
        await self.redis.set(
            replica_key(self.replica_id),
            self._heartbeat(),
            px=int(self.lease_seconds * 1000),
        )

    async def run(self) -> None:
        """Renew the heartbeat every third of the lease until cancelled; a failed renewal
        is logged and retried at the next beat."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                await self.beat()
            except redis_errors() as e:
                logger.warning("replica %s: heartbeat failed: %s", self.replica_id, e)

    async def publish(self, channel: str, message: str) -> None:
        """Send ``message`` to the replicas listening on ``channel`` (itself included)."""
        assert self.redis is not None  # noqa: S101
        await self.redis.publish(channel, message)

    async def listen(self, channel: str, handle: Callable[[str], Awaitable[None]]) -> None:
        """Call ``handle(message)`` for each message on ``channel`` until cancelled.

        A lost connection is retried every second; ``handle`` is also called with ``""``
        after each (re)subscription, so the listener catches up on what it missed.
        """
        assert self.redis is not None  # noqa: S101
        while True:
            pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(channel)
                await handle("")
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        await handle(str(message.get("data", "")))
            except redis_errors() as e:
                logger.warning(
                    "replica %s: listening on %s failed: %s", self.replica_id, channel, e
                )
                await asyncio.sleep(1.0)
            finally:
                with contextlib.suppress(*redis_errors()):
                    await asyncio.shield(pubsub.aclose())

    async def close(self) -> None:
        """Remove the heartbeat (the others see this replica gone at once), disconnect."""
        redis, self.redis = self.redis, None
        pool, self.pool = self.pool, None
        if redis is not None:
            try:
                await redis.delete(replica_key(self.replica_id))
            except redis_errors() as e:
                logger.warning("replica %s: could not remove its heartbeat: %s", self.replica_id, e)
            await redis.aclose()
        if pool is not None:
            await pool.close()


async def _open_pool(dsn: str | None) -> Any:
    """An asyncpg pool on ``dsn`` with every migration applied (cluster tables included)."""
    from mail.db import migrations  # noqa: PLC0415
    from mail.errors import StorageError  # noqa: PLC0415

    try:
        import asyncpg  # type: ignore[import-untyped]  # noqa: PLC0415
    except ImportError as e:
        raise ConfigurationError("cluster mode needs asyncpg (the PostgreSQL store)") from e
    try:
        pool = await asyncpg.create_pool(
            dsn,
            min_size=1,
            max_size=10,
            command_timeout=30.0,
            timeout=10.0,
            server_settings={"application_name": "mail-server"},
        )
    except (OSError, asyncpg.PostgresError) as e:
        raise StorageError(f"cluster mode: cannot open the PostgreSQL database: {e}") from e
    try:
        async with pool.acquire() as conn:
            await migrations.apply_postgres(conn)
    except BaseException:
        await pool.close()
        raise
    return pool


async def survey(url: str) -> tuple[str, list[dict[str, Any]]]:
    """Redis's version and the replicas seen (:func:`replicas_seen`), for ``mail doctor``.

    Raises :class:`ConfigurationError` when Redis does not answer.
    """
    client = _client(url)
    try:
        version = await _version(client, url)
        try:
            return version, await replicas_seen(client)
        except redis_errors() as e:
            raise ConfigurationError(f"cannot list the replicas: {e}") from e
    finally:
        await client.aclose()


async def replicas_seen(client: Any) -> list[dict[str, Any]]:
    """The heartbeats in Redis (live replicas), sorted by id."""
    seen: list[dict[str, Any]] = []
    async for key in client.scan_iter(match=f"{REPLICA_PREFIX}*", count=100):
        raw = await client.get(key)
        if raw is None:
            continue  # expired meanwhile
        try:
            value = json.loads(raw)
        except ValueError:
            value = {}
        seen.append({**value, "replica_id": str(key).removeprefix(REPLICA_PREFIX)})
    return sorted(seen, key=lambda r: r["replica_id"])
