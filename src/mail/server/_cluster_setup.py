"""How cluster mode changes a server's parts: its authenticator, its registry, and what
the lifespan opens and runs (:mod:`mail.server._cluster` is the connection itself)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mail.net import SwarmRegistry

if TYPE_CHECKING:
    from mail.config import MAILConfig
    from mail.errors import MAILError
    from mail.server._cluster import Cluster
    from mail.server._state import ServerState
    from mail.server.auth import Authenticator

__all__ = ["authenticator_for", "follow_cluster", "open_cluster", "registry_class"]


def authenticator_for(config: MAILConfig, cluster: Cluster) -> Authenticator | None:
    """Cluster mode's shared keys, unless auth is remote (the service is shared already)."""
    if config.auth.mode == "remote":
        return None
    from mail.server._cluster_auth import ClusterAuth  # noqa: PLC0415

    return ClusterAuth(cluster, Path(config.auth.credentials_file))


def registry_class(cluster: Cluster | None) -> Callable[..., SwarmRegistry]:
    """The registry of the server: one shared through PostgreSQL in cluster mode."""
    if cluster is None:
        return SwarmRegistry
    from mail.server._cluster_registry import SharedSwarmRegistry  # noqa: PLC0415

    return functools.partial(SharedSwarmRegistry, cluster=cluster)


async def open_cluster(state: ServerState) -> None:
    """Cluster mode: connect to Redis and PostgreSQL, and seed the shared keys."""
    if state.cluster is None:
        return
    await state.cluster.open()
    from mail.server._cluster_auth import ClusterAuth  # noqa: PLC0415
    from mail.server._cluster_map import SharedEventBus  # noqa: PLC0415

    # MAP Mail's events and subscriptions go through Redis (before the service is made)
    state.map_events = SharedEventBus(state.cluster, state.template.name)

    if isinstance(state.authenticator, ClusterAuth):
        await state.authenticator.seed()


def follow_cluster(state: ServerState, status: Callable[[MAILError], int]) -> None:
    """Cluster mode: the heartbeat, the registry's updates and the tasks among the replicas
    (``status`` maps an error of a handed-over request to its HTTP status), owned by the
    state. Call it once the task store is open."""
    if state.cluster is None:
        return
    from mail.server._cluster_registry import SharedSwarmRegistry  # noqa: PLC0415
    from mail.server._cluster_tasks import ClusterTasks  # noqa: PLC0415
    from mail.server._routes_interswarm import back_here, forward_here  # noqa: PLC0415

    here = {"forward": forward_here, "back": back_here}
    state.cluster_tasks = ClusterTasks(state, state.cluster, here)
    state.spawn(state.cluster_tasks.run(status), "mail-cluster-tasks")
    from mail.server._cluster_map import SharedEventBus  # noqa: PLC0415

    if isinstance(state.map_events, SharedEventBus):
        state.spawn(state.map_events.publish_forever(), "mail-cluster-map-events")
    state.spawn(state.cluster.run(), "mail-cluster-heartbeat")
    if isinstance(state.registry, SharedSwarmRegistry):
        state.spawn(state.registry.follow(), "mail-cluster-registry")
