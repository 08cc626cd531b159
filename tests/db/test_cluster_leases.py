"""Task leases in PostgreSQL (cluster mode, :mod:`mail.server._cluster_leases`): who runs a
task, renewals, releases by generation, and claims of expired leases by one replica only.
Two :class:`Leases` on one database play two replicas; each test uses its own swarm name."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mail.db import CallerKey, migrations
from mail.server._cluster_leases import Leases, Taken, lease_survey

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
async def pool(postgres_url: str) -> AsyncIterator[Any]:
    import asyncpg

    pool = await asyncpg.create_pool(postgres_url, min_size=1, max_size=4)
    async with pool.acquire() as conn:
        await migrations.apply_postgres(conn)
    yield pool
    await pool.close()


@pytest.fixture
def swarm() -> str:
    return f"leases-{uuid.uuid4().hex[:8]}"


def _key(swarm: str, who: str = "u1") -> CallerKey:
    return CallerKey(swarm=swarm, role="user", id=who)


async def _expire(pool: Any, swarm: str) -> None:
    await pool.execute(
        "UPDATE cluster_task_leases SET expires_at = now() - interval '1 second' "
        "WHERE swarm_name = $1",
        swarm,
    )


async def test_a_lease_is_the_first_takers_until_it_runs_out(pool: Any, swarm: str) -> None:
    a, b = Leases(pool, "a", 30, swarm), Leases(pool, "b", 30, swarm)
    key = _key(swarm)
    point = {"seq": 0, "message": {"m": 1}, "histories": {}}

    first = await a.take(key, "t1", point)
    assert isinstance(first, Taken) and first.held is False and first.was is None
    assert a.holds(key, "t1")
    assert await b.take(key, "t1") == "a"  # a live lease: b is told who runs it
    assert await b.owner(key, "t1") == "a"
    again = await a.take(key, "t1")
    assert isinstance(again, Taken) and again.held is True and again.gen != first.gen

    await _expire(pool, swarm)
    taken = await b.take(key, "t1")
    assert isinstance(taken, Taken)
    assert taken.was == "a" and taken.checkpoint == point  # b takes it over from a
    assert await a.renew() == [(key, "t1")]  # a learns that it lost it
    assert not a.holds(key, "t1") and b.holds(key, "t1")


async def test_a_release_of_an_older_take_keeps_the_newer_lease(pool: Any, swarm: str) -> None:
    a = Leases(pool, "a", 30, swarm)
    key = _key(swarm)
    old = await a.take(key, "t1")
    new = await a.take(key, "t1")
    assert isinstance(old, Taken) and isinstance(new, Taken)

    await a.release(key, "t1", old.gen)
    assert await a.owner(key, "t1") == "a"
    await a.release(key, "t1", new.gen)
    assert await a.owner(key, "t1") is None
    assert not a.holds(key, "t1")
    assert await a.renew() == []


async def test_expired_leases_are_claimed_by_one_replica_each(pool: Any, swarm: str) -> None:
    dead = Leases(pool, "dead", 30, swarm)
    key = _key(swarm)
    for n in range(40):
        await dead.take(key, f"t{n}", {"seq": n, "message": None, "histories": {}})
    await _expire(pool, swarm)
    claimers = [Leases(pool, name, 30, swarm) for name in ("b", "c", "d")]

    results = await asyncio.gather(*(c.claim_expired(limit=40) for c in claimers))

    claimed = [c.task_id for result in results for c in result]
    assert sorted(claimed) == sorted(f"t{n}" for n in range(40))  # each exactly once
    assert all(c.was == "dead" for result in results for c in result)
    assert {c.checkpoint["seq"] for r in results for c in r if c.checkpoint} == set(range(40))
    assert await claimers[0].claim_expired() == []  # nothing left to claim
    held = sum(len(c.held) for c in claimers)
    assert held == 40


async def test_a_restarted_replica_gives_up_its_old_leases(pool: Any, swarm: str) -> None:
    before = Leases(pool, "a", 30, swarm)
    await before.take(_key(swarm), "t1")
    after = Leases(pool, "a", 30, swarm)  # the same replica id, a new process

    await after.expire_own()

    claimed = await Leases(pool, "b", 30, swarm).claim_expired()
    assert [(c.task_id, c.was) for c in claimed] == [("t1", "a")]


async def test_the_survey_counts_live_and_expired_leases(
    pool: Any, swarm: str, postgres_url: str
) -> None:
    a, b = Leases(pool, "a", 30, swarm), Leases(pool, "b", 30, swarm)
    await a.take(_key(swarm), "t1")
    await a.take(_key(swarm), "t2")
    await b.take(_key(swarm), "t3")
    await pool.execute(
        "UPDATE cluster_task_leases SET expires_at = now() - interval '1 second' "
        "WHERE swarm_name = $1 AND task_id = 't3'",
        swarm,
    )

    assert await lease_survey(postgres_url, swarm) == {"a": (2, 0), "b": (0, 1)}
