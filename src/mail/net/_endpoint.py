"""The registry's record of one swarm."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["SwarmEndpoint"]


@dataclass(slots=True, kw_only=True)
class SwarmEndpoint:
    """One swarm known to a :class:`~mail.net.registry.SwarmRegistry`.

    ``auth_token_ref`` is a ``${SWARM_AUTH_TOKEN_<NAME>}`` reference for persistent entries;
    volatile entries may hold the raw token, in memory only (it is left out of ``repr``).
    ``version`` is the peer's protocol version, ``latency`` the round trip of the last
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
