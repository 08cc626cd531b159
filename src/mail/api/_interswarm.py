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
from typing import TYPE_CHECKING, Any, cast

from mail.core.message import MAILInterswarmMessage, MAILMessage, validate_interswarm_message
from mail.errors import ConfigurationError, InvalidMessageError
from mail.version import PROTOCOL_VERSION

if TYPE_CHECKING:
    from mail.core import Direction
    from mail.core.runtime import MAILRuntime, RemoteRouter
    from mail.core.tasks import MAILTask
    from mail.net import InterswarmRouter, SessionSource, SwarmRegistry

__all__ = ["OwnedFederation", "SwarmInterswarm"]

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


class SwarmInterswarm:
    """The interswarm methods of :class:`~mail.api.MAILSwarm` (mixed into it)."""

    name: str
    enable_interswarm: bool
    runtime: MAILRuntime
    _router: RemoteRouter | None
    _federation: OwnedFederation | None

    async def _prepare(self, *, start: bool = True) -> None:
        raise NotImplementedError  # the swarm's

    def _require_interswarm(self) -> None:
        if not self.enable_interswarm:
            raise ConfigurationError(f"interswarm is not enabled in swarm {self.name}")

    async def start_interswarm(self) -> None:
        """Route ``agent@swarm`` messages again (after :meth:`stop_interswarm`), read the
        registry file and run health checks of the registry this swarm made.

        Raises :class:`ConfigurationError` when interswarm is not enabled or no router
        was given, and what reading the registry file raises.
        """
        self._require_interswarm()
        if self._router is None:
            raise ConfigurationError(f"swarm {self.name} has no interswarm router")
        if self._federation is not None:
            await self._federation.ready()
            self._federation.start_health_checks()
        self.runtime.router = self._router

    async def stop_interswarm(self) -> None:
        """Stop routing ``agent@swarm`` messages (agents are told they were not delivered)
        and stop the health checks of the registry this swarm made."""
        self.runtime.router = None
        if self._federation is not None:
            await self._federation.stop_health_checks()

    def is_interswarm_running(self) -> bool:
        """True while ``agent@swarm`` messages are routed to other swarms."""
        return self.enable_interswarm and self.runtime.router is not None

    async def receive_interswarm_message(
        self, message: MAILInterswarmMessage, direction: Direction = "forward"
    ) -> MAILTask:
        """Queue a message from another swarm (what ``POST /interswarm/{direction}``
        does); returns its task. Raises :class:`InvalidMessageError` (malformed, or not
        for this swarm), :class:`TaskNotFoundError` and :class:`TaskStateError` (see
        :meth:`MAILRuntime.receive_interswarm`)."""
        checked = validate_interswarm_message(message)
        await self._prepare()
        return self.runtime.receive_interswarm(checked, direction)

    async def send_interswarm_message(
        self, message: MAILInterswarmMessage, direction: Direction = "forward"
    ) -> Any:
        """Send the payload of ``message`` to its ``target_swarm`` now, in the task
        ``task_id`` of this swarm (opened as this caller's task with that swarm if there is
        none); returns the peer's JSON answer.

        Differs from v1.3.6: the router chooses the direction (``forward`` to a swarm that
        has not taken part in the task, else ``back``), so ``direction`` is only checked,
        and the envelope's owner, contributors and token are the task's and the
        registry's, not the ones given. Raises :class:`ConfigurationError` (no interswarm),
        :class:`InvalidMessageError` (malformed) and
        :class:`~mail.errors.RemoteSwarmUnavailableError` (not delivered).
        """
        if direction not in ("forward", "back"):
            raise InvalidMessageError("must be 'forward' or 'back'", field="direction")
        return await self._deliver(message, new_task=False)

    async def post_interswarm_user_message(self, message: MAILInterswarmMessage) -> Any:
        """Send a message of this swarm's caller (a user or admin) to an agent of another
        swarm, in a new task of that caller (``message['task_id']``), as ``POST
        /interswarm/message`` does; returns the peer's acknowledgement. A reply addressed
        to the caller ends the task's turn (:meth:`MAILTask.wait_turn`). Raises as
        :meth:`send_interswarm_message` does, and :class:`TaskStateError` when the task
        id is taken."""
        return await self._deliver(message, new_task=True)

    async def _deliver(self, message: MAILInterswarmMessage, *, new_task: bool) -> Any:
        from mail.net import InterswarmRouter  # noqa: PLC0415  # only swarms that federate

        self._require_interswarm()
        router = self._router
        if not isinstance(router, InterswarmRouter):
            raise ConfigurationError(f"swarm {self.name} has no interswarm router")
        checked = validate_interswarm_message(message)
        await self._prepare()
        runtime = self.runtime
        target = checked["target_swarm"]
        # the envelope's own fields make the local message the router wraps again
        local = cast(
            "MAILMessage",
            {
                "id": checked["message_id"],
                "timestamp": checked["timestamp"],
                "message": checked["payload"],
                "msg_type": checked["msg_type"],
            },
        )
        task_id = checked["payload"]["task_id"]
        task = None if new_task else runtime.get_task(task_id)
        if task is None:
            task = runtime.open_remote_task(task_id, target)
        return await router.deliver(runtime, task, local, target)
