"""The registry's record of one swarm, and which protocol generation a peer speaks."""

from __future__ import annotations

import copy
import dataclasses
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["FIRST_FORWARD_BACK_VERSION", "SwarmEndpoint", "is_legacy_version", "utc_now"]

_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)")
#: Peers older than this speak the synchronous ``/interswarm/message`` of protocol 1.1.
FIRST_FORWARD_BACK_VERSION = (1, 2)


def utc_now() -> datetime:
    """The current time in UTC (what ``last_seen`` records)."""
    return datetime.now(UTC)


def is_legacy_version(version: str | None) -> bool:
    """True for a version below 1.2 (a protocol 1.1 peer).

    Unknown or unparsable versions count as current: every peer of protocol 1.3 reports one.
    """
    if not version:
        return False
    match = _VERSION.match(version)
    if match is None:
        return False
    return (int(match.group(1)), int(match.group(2))) < FIRST_FORWARD_BACK_VERSION


@dataclass(slots=True, kw_only=True)
class SwarmEndpoint:
    """One swarm known to a :class:`~mail.net.registry.SwarmRegistry`.

    ``auth_token_ref`` is a ``${SWARM_AUTH_TOKEN_<NAME>}`` reference for persistent entries;
    volatile entries may hold the raw token, in memory only (it is left out of ``repr``).
    ``memory_token`` is the raw token given when a persistent entry was registered: kept in
    memory only (never saved, listed or shown in ``repr``) and used while the referenced
    variable is unset, so the peer is routable at once.
    ``version`` is the peer's protocol version (for a protocol 1.1 peer, the ``version`` its
    ``GET /`` reported); ``legacy`` is True when that ``GET /`` reported no
    ``protocol_version`` (or one below 1.2): such a peer is sent the synchronous
    ``/interswarm/message`` of protocol 1.1. ``latency`` is the round trip of the last
    successful contact in seconds. ``failures`` and ``next_check`` (on the registry's clock)
    drive the health-check backoff and are never persisted.
    """

    swarm_name: str
    base_url: str
    version: str | None = None
    health_check_url: str = ""
    auth_token_ref: str | None = field(default=None, repr=False)
    last_seen: datetime | None = None
    is_active: bool = True
    latency: float | None = None
    swarm_description: str = ""
    keywords: list[str] = field(default_factory=list)
    metadata: dict[str, Any] | None = None
    public: bool = False
    volatile: bool = True
    legacy: bool = False
    memory_token: str | None = field(default=None, repr=False)
    failures: int = 0
    next_check: float = 0.0

    def __post_init__(self) -> None:
        if not self.health_check_url:
            self.health_check_url = f"{self.base_url}/health"

    def copy(self) -> SwarmEndpoint:
        """A copy sharing no mutable state with this record."""
        return dataclasses.replace(
            self, keywords=list(self.keywords), metadata=copy.deepcopy(self.metadata)
        )

    def to_public_dict(self) -> dict[str, Any]:
        """The item shape of ``GET /swarms``: no token, no ``public``/``volatile`` flags."""
        return {
            "swarm_name": self.swarm_name,
            "base_url": self.base_url,
            "version": self.version,
            "last_seen": self.last_seen.isoformat() if self.last_seen else None,
            "is_active": self.is_active,
            "latency": self.latency,
            "swarm_description": self.swarm_description,
            "keywords": list(self.keywords),
            "metadata": copy.deepcopy(self.metadata),
        }
