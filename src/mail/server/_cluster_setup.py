"""How cluster mode changes a server's parts, chosen once at start-up: its task service,
its authenticator, its registry, the pool of its store, and what the lifespan opens and
runs (:mod:`mail.server._cluster` is the connection itself). Nothing else asks which mode
runs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mail.net import SwarmRegistry
from mail.server._local_tasks import LocalTasks

if TYPE_CHECKING:
    from mail.config import MAILConfig
    from mail.errors import MAILError
    from mail.server._cluster import Cluster
    from mail.server._state import ServerState
    from mail.server._task_service import TaskService
    from mail.server.auth import Authenticator

__all__ = [
    "authenticator_for",
    "follow_cluster",
    "open_cluster",
    "registry_class",
    "store_pool",
    "task_service",
]


def task_service(state: ServerState) -> TaskService:
    """What the routes do tasks with: this server's runtimes, or the replicas'."""
    if state.cluster is None:
        return LocalTasks(state)
    from mail.server._cluster_tasks import ClusterTasks  # noqa: PLC0415

    return ClusterTasks(state, state.cluster)


def store_pool(cluster: Cluster | None) -> Any:
    """The PostgreSQL pool the task store shares (the cluster's), or ``None``: its own."""
    return cluster.pool if cluster is not None else None


def authenticator_for(config: MAILConfig, cluster: Cluster | None) -> Authenticator | None:
    """Cluster mode's shared keys, unless auth is remote (the service is shared already);
    ``None``: the configured authenticator."""
    if cluster is None or config.auth.mode == "remote":
        return None
    from mail.server._cluster_auth import ClusterAuth  # noqa: PLC0415

    return ClusterAuth(cluster, Path(config.auth.credentials_file))


def registry_class(
    cluster: Cluster | None, path: str | Path | None
) -> Callable[..., SwarmRegistry]:
    """The registry of the server: one kept in the file ``path``, or one shared through
    PostgreSQL in cluster mode (no file)."""
    if cluster is None:
        return functools.partial(SwarmRegistry, persistence_file=path)
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

    assert isinstance(state.tasks, ClusterTasks)  # noqa: S101  # (task_service)
    state.spawn(state.tasks.run(status), "mail-cluster-tasks")
    from mail.server._cluster_map import SharedEventBus  # noqa: PLC0415

    if isinstance(state.map_events, SharedEventBus):
        state.spawn(state.map_events.publish_forever(), "mail-cluster-map-events")
    state.spawn(state.cluster.run(), "mail-cluster-heartbeat")
    if isinstance(state.registry, SharedSwarmRegistry):
        state.spawn(state.registry.follow(), "mail-cluster-registry")
