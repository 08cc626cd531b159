"""``mail doctor``'s cluster checks: Redis answers, and which replicas it has seen.

Only with ``[server.cluster] redis_url`` set (nothing is checked, nor imported, without).
Findings are ``(name, status, message, fix)`` tuples, as :mod:`mail.cli._doctor_mcp`'s.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from mail.config import MAILConfig

__all__ = ["check_cluster"]

Finding = tuple[str, Literal["ok", "warn", "fail"], str, str]
_TIMEOUT = 5.0


def check_cluster(config: MAILConfig) -> list[Finding]:
    """Cluster mode: the store is PostgreSQL, Redis answers (its version), and the
    replicas whose heartbeat is live (ids, URLs, age). Nothing without a ``redis_url``."""
    cluster = config.server.cluster
    if cluster.redis_url is None:
        return []
    from mail.errors import ConfigurationError  # noqa: PLC0415
    from mail.server._cluster import require_postgres, survey  # noqa: PLC0415

    findings: list[Finding] = []
    try:
        require_postgres(config)
    except ConfigurationError as e:
        findings.append(("cluster", "fail", str(e), "set [database] url (DATABASE_URL)"))
    try:
        version, replicas = asyncio.run(asyncio.wait_for(survey(cluster.redis_url), _TIMEOUT))
    except (ConfigurationError, TimeoutError) as e:
        message = str(e) or "Redis did not answer in time"
        fix = "start Redis or correct MAIL_REDIS_URL ([server.cluster] redis_url)"
        return [*findings, ("redis", "fail", message, fix)]
    findings.append(("redis", "ok", f"Redis {version} answers", ""))
    findings.append(_replicas(replicas, cluster.lease_seconds))
    if config.database.url and config.database.backend == "postgres":
        findings.append(_leases(config.database.url, config.server.swarm.name))
    return findings


def _leases(dsn: str, swarm: str) -> Finding:
    """The task leases per replica: live ones, and expired ones waiting to be taken over."""
    from mail.errors import StorageError  # noqa: PLC0415
    from mail.server._cluster_leases import lease_survey  # noqa: PLC0415

    try:
        held = asyncio.run(asyncio.wait_for(lease_survey(dsn, swarm), _TIMEOUT))
    except (StorageError, TimeoutError) as e:
        return ("leases", "warn", str(e) or "the database did not answer in time", "")
    if not held:
        return ("leases", "ok", "no task leases held (no unfinished task runs)", "")
    parts = [
        f"{owner}: {live} live" + (f", {old} expired" if old else "")
        for owner, (live, old) in held.items()
    ]
    expired = sum(old for _, old in held.values())
    status: Literal["ok", "warn"] = "warn" if expired else "ok"
    fix = (
        "a live replica takes expired leases over within a third of lease_seconds"
        if expired
        else ""
    )
    return ("leases", status, "task leases per replica: " + "; ".join(parts), fix)


def _replicas(replicas: list[dict[str, Any]], lease: float) -> Finding:
    if not replicas:
        return (
            "replicas",
            "warn",
            "no replica has a live heartbeat (none running, or another Redis database)",
            "start `mail server` with the same redis_url",
        )
    now = time.time()
    shown = []
    for replica in replicas:
        beat = replica.get("beat")
        age = f", beat {now - beat:.0f}s ago" if isinstance(beat, int | float) else ""
        shown.append(f"{replica['replica_id']} ({replica.get('url', '?')}{age})")
    return (
        "replicas",
        "ok",
        f"{len(replicas)} replica(s) seen (heartbeat every {lease / 3:g}s): " + "; ".join(shown),
        "",
    )
