"""v1.3.6's ``mail.net.server_utils``: the server's defaults, read from a configuration.

``cfg`` is a :class:`mail.config.MAILConfig` or its ``server`` section
(:class:`mail.config.ServerConfig`); v1.3.6 took its own ``ServerConfig``. Our server does
not call these (its lifespan builds the same things); they are for code that did.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mail.api import MAILSwarm, MAILSwarmTemplate
    from mail.net.registry import SwarmRegistry

__all__ = [
    "logger",
    "compute_external_base_url",
    "get_default_persistent_swarm",
    "init_mail_instances_dict",
    "init_mail_tasks_dict",
    "get_default_swarm_registry",
    "get_default_swarm_name",
    "get_default_base_url",
    "get_default_entrypoint_agent",
    "init_task_bindings_dict",
]

logger = logging.getLogger("mail.net.server_utils")


def _server(cfg: Any) -> Any:
    return getattr(cfg, "server", cfg)


def compute_external_base_url(cfg: Any) -> str:
    """The URL peers should use: ``base_url`` (``BASE_URL``), else ``http://host:port``
    (a wildcard host becomes ``localhost``)."""
    return str(_server(cfg).advertised_url)


def get_default_base_url(cfg: Any) -> str:
    """Same as :func:`compute_external_base_url`."""
    return compute_external_base_url(cfg)


def get_default_swarm_name(cfg: Any) -> str:
    """The name of the swarm the server runs (``[server.swarm] name``)."""
    return str(_server(cfg).swarm.name)


def get_default_persistent_swarm(cfg: Any) -> MAILSwarmTemplate:
    """The template of the swarm the server runs, loaded from ``[server.swarm] source``."""
    from mail.api import MAILSwarmTemplate  # noqa: PLC0415

    swarm = _server(cfg).swarm
    return MAILSwarmTemplate.from_swarm_json_file(swarm.name, swarm.source)


def get_default_swarm_registry(
    cfg: Any, swarm: MAILSwarmTemplate | MAILSwarm | None = None
) -> SwarmRegistry:
    """A registry for ``swarm`` (default: the configured one) at the configured URL,
    persisted to ``[server.swarm] registry``; not started."""
    from mail.net.registry import SwarmRegistry  # noqa: PLC0415

    server = _server(cfg)
    return SwarmRegistry(
        getattr(swarm, "name", None) or server.swarm.name,
        compute_external_base_url(cfg),
        server.swarm.registry,
        local_swarm_description=getattr(swarm, "description", "") or "",
        local_swarm_keywords=getattr(swarm, "keywords", None) or [],
        local_swarm_public=bool(getattr(swarm, "public", False)),
    )


def get_default_entrypoint_agent(swarm_template: MAILSwarmTemplate) -> str:
    """The template's entrypoint agent."""
    return str(swarm_template.entrypoint)


def init_mail_instances_dict() -> dict[str, MAILSwarm]:
    """An empty ``{caller key: swarm instance}`` table."""
    return {}


def init_mail_tasks_dict() -> dict[str, Any]:
    """An empty ``{caller key: run-loop task}`` table."""
    return {}


def init_task_bindings_dict() -> dict[str, dict[str, Any]]:
    """An empty ``{task id: binding}`` table."""
    return {}
