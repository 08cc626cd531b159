"""Interswarm actions behind the outbound guard; see :mod:`mail.stdlib.interswarm.actions`."""

from __future__ import annotations

from mail.stdlib.interswarm.actions import get_swarm_health, get_swarm_registry, ping_swarm

__all__ = ["get_swarm_health", "get_swarm_registry", "ping_swarm"]
