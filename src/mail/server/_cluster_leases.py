"""Cluster mode: task leases in PostgreSQL, which replica runs each unfinished task.

A replica that starts a turn of a task (a new task, a follow-up, a breakpoint answer)
:meth:`~Leases.take`\\ s its lease first: the row ``cluster_task_leases`` of the task names
the replica (``owner``) until ``expires_at``, with what the turn started from
(``checkpoint``, :mod:`mail.server._cluster_failover`). The owner renews all its leases in one
statement every third of the lease (:meth:`~Leases.renew`) and releases a task's lease once
its turn ended in a final state and the store has it (:meth:`~Leases.release`); a task
paused on breakpoints keeps its owner. A replica that dies stops renewing: once its leases
ran out another replica claims them (:meth:`~Leases.claim_expired`, one winner per task:
the rows are locked and skipped by the others) and carries the tasks on.

``gen`` is a fresh random token at each take, so that the release of an older turn never
drops the lease of a newer one.
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import dataclass
from typing import Any

from mail.db.store import CallerKey
from mail.errors import StorageError

__all__ = ["Claimed", "Leases", "Taken", "lease_survey"]

logger = logging.getLogger("mail.server.cluster")

_SELECT = """SELECT owner, gen, expires_at < now() AS expired, checkpoint
    FROM cluster_task_leases WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4 FOR UPDATE"""
_INSERT = """INSERT INTO cluster_task_leases
    (swarm_name, caller_role, caller_id, task_id, owner, gen, expires_at, checkpoint)
    VALUES ($1, $2, $3, $4, $5, $8, now() + make_interval(secs => $6), $7::jsonb)
    ON CONFLICT DO NOTHING RETURNING gen"""
_UPDATE = """UPDATE cluster_task_leases SET owner = $5, gen = $6,
    expires_at = now() + make_interval(secs => $7),
    checkpoint = COALESCE($8::jsonb, checkpoint) WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4"""
_OWNER = "SELECT owner FROM cluster_task_leases WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4 AND expires_at >= now()"
_RELEASE = "DELETE FROM cluster_task_leases WHERE swarm_name = $1 AND caller_role = $2 AND caller_id = $3 AND task_id = $4 AND owner = $5 AND gen = $6"
_RENEW = """UPDATE cluster_task_leases AS l SET expires_at = now() + make_interval(secs => $2)
    FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]) AS h(s, r, c, t)
    WHERE l.owner = $1 AND l.swarm_name = h.s AND l.caller_role = h.r
      AND l.caller_id = h.c AND l.task_id = h.t
    RETURNING l.swarm_name, l.caller_role, l.caller_id, l.task_id"""
_EXPIRE_MINE = """UPDATE cluster_task_leases SET expires_at = now() - interval '1 second'
    WHERE owner = $1 AND swarm_name = $2"""
_CLAIM = """UPDATE cluster_task_leases AS l
    SET owner = $1, gen = $5, expires_at = now() + make_interval(secs => $2)
    FROM (SELECT swarm_name, caller_role, caller_id, task_id, owner AS was
          FROM cluster_task_leases WHERE swarm_name = $3 AND expires_at < now()
          ORDER BY expires_at LIMIT $4 FOR UPDATE SKIP LOCKED) AS e
    WHERE l.swarm_name = e.swarm_name AND l.caller_role = e.caller_role
      AND l.caller_id = e.caller_id AND l.task_id = e.task_id
    RETURNING l.swarm_name, l.caller_role, l.caller_id, l.task_id, l.gen, e.was, l.checkpoint"""
_SURVEY = """SELECT owner, count(*) FILTER (WHERE expires_at >= now()) AS live,
    count(*) FILTER (WHERE expires_at < now()) AS expired
    FROM cluster_task_leases WHERE swarm_name = $1 GROUP BY owner ORDER BY owner"""

_Held = tuple[CallerKey, str]


@dataclass(frozen=True, slots=True)
class Taken:
    """The lease is this replica's (generation ``gen``). ``held`` says this process held
    it already (its copy of the task is current); otherwise ``was`` names the replica
    whose expired lease it replaced (``None``: the lease was free), and ``checkpoint`` is
    where that replica's last turn started."""

    gen: int
    held: bool = False
    was: str | None = None
    checkpoint: dict[str, Any] | None = None


def _token() -> int:
    return secrets.randbits(62)


@dataclass(frozen=True, slots=True)
class Claimed:
    """An expired lease :meth:`Leases.claim_expired` took."""

    key: CallerKey
    task_id: str
    gen: int
    was: str
    checkpoint: dict[str, Any] | None


def _checkpoint(raw: Any) -> dict[str, Any] | None:
    value = json.loads(raw) if isinstance(raw, str) else raw
    return value if isinstance(value, dict) else None


class Leases:
    """This replica's leases (``replica_id``) on the pool of the cluster's database."""

    def __init__(self, pool: Any, replica_id: str, lease_seconds: float, swarm: str) -> None:
        self._pool = pool
        self.replica_id = replica_id
        self.lease_seconds = float(lease_seconds)
        self.swarm = swarm
        #: the leases this process holds: (caller, task) -> generation
        self.held: dict[_Held, int] = {}

    def holds(self, key: CallerKey, task_id: str) -> bool:
        return (key, task_id) in self.held

    async def take(
        self, key: CallerKey, task_id: str, checkpoint: dict[str, Any] | None = None
    ) -> Taken | str:
        """Take the task's lease (free, expired, or this replica's), recording
        ``checkpoint`` when given; or the id of the live replica that holds it. The lease
        counts as held once the transaction committed (a renewal meanwhile cannot see it)."""
        held = (key, task_id) in self.held
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                outcome = await self._take(conn, key, task_id, checkpoint, held)
        except Exception as e:
            raise StorageError(
                f"cluster mode: taking the lease of task {task_id!r} failed: {e}"
            ) from e
        if isinstance(outcome, Taken):
            self.held[(key, task_id)] = outcome.gen
        return outcome

    async def _take(
        self,
        conn: Any,
        key: CallerKey,
        task_id: str,
        checkpoint: dict[str, Any] | None,
        held: bool,
    ) -> Taken | str:
        cp = json.dumps(checkpoint) if checkpoint is not None else None
        pk = (key.swarm, key.role, key.id, task_id)
        for _ in range(3):  # a concurrent insert: read it again
            row = await conn.fetchrow(_SELECT, *pk)
            gen = _token()
            if row is None:
                inserted = await conn.fetchval(
                    _INSERT, *pk, self.replica_id, self.lease_seconds, cp, gen
                )
                if inserted is not None:
                    return Taken(gen=gen, held=held)
                continue
            owner = str(row["owner"])
            if owner != self.replica_id and not row["expired"]:
                return owner
            await conn.execute(_UPDATE, *pk, self.replica_id, gen, self.lease_seconds, cp)
            if held and owner == self.replica_id:
                return Taken(gen=gen, held=True)
            return Taken(gen=gen, was=owner, checkpoint=_checkpoint(row["checkpoint"]))
        raise StorageError(f"cluster mode: the lease of task {task_id!r} keeps changing")

    async def owner(self, key: CallerKey, task_id: str) -> str | None:
        """The replica holding a live lease on the task, ``None`` when nobody does."""
        try:
            value = await self._pool.fetchval(_OWNER, key.swarm, key.role, key.id, task_id)
        except Exception as e:
            raise StorageError(f"cluster mode: reading the lease of {task_id!r} failed: {e}") from e
        return str(value) if value is not None else None

    async def release(self, key: CallerKey, task_id: str, gen: int) -> None:
        """Drop the lease of generation ``gen`` (a newer take keeps its lease)."""
        if self.held.get((key, task_id)) != gen:
            return
        del self.held[(key, task_id)]  # first: a renewal meanwhile does not miss it
        pk = (key.swarm, key.role, key.id, task_id)
        await self._pool.execute(_RELEASE, *pk, self.replica_id, gen)

    async def renew(self) -> list[_Held]:
        """Extend every lease this process holds; returns those it lost (another replica
        claimed them after they ran out), which it no longer holds."""
        if not self.held:
            return []
        gens = dict(self.held)
        held = list(gens)
        rows = await self._pool.fetch(
            _RENEW,
            self.replica_id,
            self.lease_seconds,
            [k.swarm for k, _ in held],
            [k.role for k, _ in held],
            [k.id for k, _ in held],
            [t for _, t in held],
        )
        kept = {
            (
                CallerKey(swarm=r["swarm_name"], role=r["caller_role"], id=r["caller_id"]),
                r["task_id"],
            )
            for r in rows
        }
        # a lease released or taken again meanwhile is not lost
        lost = [h for h in held if h not in kept and self.held.get(h) == gens[h]]
        for h in lost:
            del self.held[h]
        return lost

    async def expire_own(self) -> None:
        """At start: the leases an earlier process of this replica held are out of date
        (its memory is gone), so they expire now and are claimed like any others."""
        await self._pool.execute(_EXPIRE_MINE, self.replica_id, self.swarm)

    async def claim_expired(self, limit: int = 100) -> list[Claimed]:
        """Take up to ``limit`` expired leases of this swarm (each by one replica only)."""
        rows = await self._pool.fetch(
            _CLAIM, self.replica_id, self.lease_seconds, self.swarm, limit, _token()
        )
        claimed = []
        for r in rows:
            key = CallerKey(swarm=r["swarm_name"], role=r["caller_role"], id=r["caller_id"])
            self.held[(key, r["task_id"])] = int(r["gen"])
            claimed.append(
                Claimed(
                    key, r["task_id"], int(r["gen"]), str(r["was"]), _checkpoint(r["checkpoint"])
                )
            )
        return claimed


async def lease_survey(dsn: str, swarm: str) -> dict[str, tuple[int, int]]:
    """Per replica, its live and its expired leases on tasks of ``swarm`` (``mail
    doctor``). Raises :class:`StorageError` when the database cannot be read."""
    import asyncpg  # type: ignore[import-untyped]  # noqa: PLC0415  # only in cluster mode

    try:
        conn = await asyncpg.connect(dsn, timeout=5)
        try:
            rows = await conn.fetch(_SURVEY, swarm)
        finally:
            await conn.close()
    except (OSError, asyncpg.PostgresError) as e:
        raise StorageError(f"cannot read the task leases: {e}") from e
    return {str(r["owner"]): (int(r["live"]), int(r["expired"])) for r in rows}
