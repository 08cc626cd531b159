"""The registry and router a :class:`~mail.api.MAILSwarm` builds for itself.

A swarm used from Python (no server) with ``enable_interswarm`` and no router gets an
:class:`OwnedFederation`: a :class:`~mail.net.SwarmRegistry` (unless one was passed) that
reads its persistence file before the first message, an
:class:`~mail.net.InterswarmRouter` over it, and one HTTP session for both. The swarm's
``shutdown`` closes what was made here, never a registry it was given.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mail.errors import ConfigurationError
from mail.version import PROTOCOL_VERSION

if TYPE_CHECKING:
    from mail.net import InterswarmRouter, SessionSource, SwarmRegistry

__all__ = ["OwnedFederation"]

logger = logging.getLogger("mail.api")


class OwnedFederation:
    """A router (and maybe a registry) owned by one swarm; see the module docstring."""

    def __init__(
        self,
        registry: SwarmRegistry,
        router: InterswarmRouter,
        session: SessionSource,
        *,
        owns_registry: bool,
    ) -> None:
        self.registry = registry
        self.router = router
        self._session = session
        self._owns_registry = owns_registry
        self._loaded = not owns_registry  # a registry we were given is its owner's to load
        self._lock = asyncio.Lock()
        self._closed = False

    @classmethod
    def build(
        cls,
        *,
        swarm: str,
        base_url: str,
        registry_file: str | Path | None,
        registry: object | None,
        description: str,
        keywords: Sequence[str],
        env: Mapping[str, str] | None,
    ) -> OwnedFederation:
        """A router over ``registry``, or over a new registry of ``swarm`` at ``base_url``
        persisted in ``registry_file``. Raises :class:`ConfigurationError` when
        ``registry`` is not a :class:`~mail.net.SwarmRegistry`."""
        from mail.net import (  # noqa: PLC0415  # only swarms that federate
            AddressPolicy,
            InterswarmRouter,
            SessionSource,
            SwarmRegistry,
        )

        session = SessionSource(
            headers={"User-Agent": f"MAIL-Swarm/v{PROTOCOL_VERSION}/{swarm}"},
            policy=AddressPolicy(),
        )
        if registry is None:
            registry = SwarmRegistry(
                swarm,
                base_url,
                registry_file,
                local_swarm_description=description,
                local_swarm_keywords=keywords,
                local_version=PROTOCOL_VERSION,  # peers read the protocol's (CONTRACT 8.5)
                env=env,
                session=session,
            )
            owned = True
        elif isinstance(registry, SwarmRegistry):
            owned = False
        else:
            raise ConfigurationError(
                f"swarm_registry must be a mail.net.SwarmRegistry, not {type(registry).__name__}"
            )
        router = InterswarmRouter(registry, session=session, env=env)
        return cls(registry, router, session, owns_registry=owned)

    async def ready(self) -> None:
        """Read the registry's persistence file once (before the first message).

        Raises :class:`ConfigurationError` or :class:`StorageError` when it cannot be read.
        """
        if self._loaded:
            return
        async with self._lock:
            if not self._loaded:
                await self.registry.load()
                self._loaded = True

    def start_health_checks(self) -> None:
        """Start the owned registry's health loop (a given registry's owner runs its own)."""
        if self._owns_registry and not self._closed:
            self.registry.start_health_checks()

    async def stop_health_checks(self) -> None:
        if self._owns_registry:
            await self.registry.stop_health_checks()

    @property
    def health_checks_running(self) -> bool:
        return self.registry.health_checks_running

    async def aclose(self) -> None:
        """Let deliveries in flight finish, stop health checks, close the session."""
        if self._closed:
            return
        self._closed = True
        try:
            await self.router.aclose()
            if self._owns_registry:
                await self.registry.aclose()
        finally:
            await self._session.aclose()
        logger.debug("closed the interswarm router of swarm %s", self.registry.local_swarm_name)
