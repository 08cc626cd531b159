"""API keys shared by the replicas of a cluster, in PostgreSQL (table ``cluster_api_keys``).

Each key is kept as its SHA-256 digest with its role and id, never as the key. Every
request reads through to the database (one primary-key lookup), so a key created on one
replica authenticates on every other at once, and one deleted stops at once.

The table starts from the first replica's ``credentials.json``: when it is empty, the
replica opening it loads (or creates, printing the banner as a single server does) its
local credentials file and copies the keys' digests in, under a table lock, so replicas
starting together agree on one set.
"""

from __future__ import annotations

import logging
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mail.errors import AuthenticationError, ConfigurationError, StorageError
from mail.server._auth_embedded import EmbeddedAuth
from mail.server._auth_types import ROLES, Caller, Role, key_digest, key_fingerprint

if TYPE_CHECKING:
    from mail.server._cluster import Cluster

__all__ = ["ClusterAuth"]

logger = logging.getLogger("mail.server.auth")

_LOOKUP = "SELECT role, key_id FROM cluster_api_keys WHERE digest = $1"
_INSERT = "INSERT INTO cluster_api_keys (digest, role, key_id) VALUES ($1, $2, $3)"


class ClusterAuth:
    """An authenticator over ``cluster``'s PostgreSQL pool (open the cluster first).

    ``credentials_file`` seeds an empty table (see the module). Raises
    :class:`~mail.errors.StorageError` when the database fails.
    """

    def __init__(self, cluster: Cluster, credentials_file: Path) -> None:
        self._cluster = cluster
        self._credentials_file = Path(credentials_file)

    def _pool(self) -> Any:
        pool = self._cluster.pool
        if pool is None:
            raise StorageError("cluster mode: the database is not open")
        return pool

    async def seed(self) -> int:
        """Copy the local credentials file's keys in when the table is empty; return how
        many were copied (0: the table already had keys). Raises ConfigurationError
        (the credentials file) or StorageError."""
        async with self._pool().acquire() as conn, conn.transaction():
            await conn.execute("LOCK TABLE cluster_api_keys IN SHARE ROW EXCLUSIVE MODE")
            if await conn.fetchval("SELECT count(*) FROM cluster_api_keys"):
                return 0
            local = EmbeddedAuth(self._credentials_file)
            if local.created:
                sys.stderr.write(local.banner() + "\n")
            rows = [(key_digest(key), role, id_) for role, id_, key in local.entries()]
            await conn.executemany(_INSERT, rows)
        logger.info("cluster mode: API keys of %s copied to the database", self._credentials_file)
        return len(rows)

    async def authenticate(self, api_key: str) -> Caller:
        """The caller owning ``api_key``. Raises :class:`AuthenticationError` (``"invalid
        API key"``) or :class:`StorageError`."""
        try:
            row = await self._pool().fetchrow(_LOOKUP, key_digest(api_key))
        except StorageError:
            raise
        except Exception as e:
            logger.error("cluster mode: reading API keys failed: %s", e)  # noqa: TRY400
            raise StorageError("cluster mode: reading API keys failed") from e
        if row is None or row["role"] not in ROLES:
            logger.info("rejected an unknown API key (sha256 %s)", key_fingerprint(api_key))
            raise AuthenticationError("invalid API key")
        return Caller(role=row["role"], id=row["key_id"], api_key=api_key)

    async def create_key(self, role: Role, id: str) -> str:
        """Generate a key for ``role`` and ``id``, store its digest, return the key.

        Raises :class:`ConfigurationError` for an unknown role or an empty id and
        :class:`StorageError` when the database fails.
        """
        if role not in ROLES:
            raise ConfigurationError(f"unknown role '{role}' (expected one of {', '.join(ROLES)})")
        if not id:
            raise ConfigurationError("an API key needs a non-empty id")
        key = f"mail-{role}-{secrets.token_urlsafe(32)}"
        try:
            await self._pool().execute(_INSERT, key_digest(key), role, id)
        except Exception as e:
            raise StorageError(f"cluster mode: storing an API key failed: {e}") from e
        logger.info("created an API key for %s:%s (sha256 %s)", role, id, key_fingerprint(key))
        return key

    async def aclose(self) -> None:
        """Nothing to release: the cluster owns the pool."""
