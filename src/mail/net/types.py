"""v1.3.6's ``mail.net.types``: the JSON shapes of registry entries and of the HTTP
routes' answers (CONTRACT §1.5, §8), as ``TypedDict``s for type checking.

``total=False``: some keys are present only in some answers (``auth_token_ref`` only in
the registry's own dumps, for example). Nothing here checks values at run time.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = [
    "SwarmEndpoint",
    "SwarmEndpointCleaned",
    "SwarmInfo",
    "SwarmStatus",
    "GetRootResponse",
    "GetWhoamiResponse",
    "GetStatusResponse",
    "PostMessageResponse",
    "GetHealthResponse",
    "GetSwarmsResponse",
    "PostSwarmsResponse",
    "GetSwarmsDumpResponse",
    "PostInterswarmMessageResponse",
    "PostInterswarmForwardResponse",
    "PostInterswarmBackResponse",
    "PostSwarmsLoadResponse",
]


class SwarmEndpoint(TypedDict, total=False):
    """A registry entry as the registry keeps and persists it."""

    swarm_name: str
    base_url: str
    health_check_url: str
    auth_token_ref: str | None
    last_seen: str | None
    is_active: bool
    latency: float | None
    version: str
    swarm_description: str
    keywords: list[str]
    public: bool
    metadata: dict[str, Any] | None
    volatile: bool


class SwarmEndpointCleaned(TypedDict, total=False):
    """A registry entry as ``GET /swarms`` shows it (no token reference, no health URL)."""

    swarm_name: str
    base_url: str
    version: str
    last_seen: str | None
    is_active: bool
    latency: float | None
    swarm_description: str
    keywords: list[str]
    metadata: dict[str, Any] | None


class SwarmInfo(TypedDict, total=False):
    """The ``swarm`` object of ``GET /``."""

    name: str
    version: str
    description: str
    entrypoint: str
    keywords: list[str]
    public: bool


class SwarmStatus(TypedDict, total=False):
    """The ``swarm`` object of ``GET /status``."""

    name: str | None
    status: str


class GetRootResponse(TypedDict, total=False):
    """``GET /``."""

    name: str
    protocol_version: str
    swarm: SwarmInfo
    status: str
    uptime: float


class GetWhoamiResponse(TypedDict):
    """``GET /whoami``."""

    id: str
    role: str


class GetStatusResponse(TypedDict, total=False):
    """``GET /status``."""

    swarm: SwarmStatus
    active_users: int
    user_mail_ready: bool
    user_task_running: bool


class PostMessageResponse(TypedDict, total=False):
    """``POST /message`` without streaming (``events`` with ``show_events``)."""

    response: str
    events: list[dict[str, Any]] | None


class GetHealthResponse(TypedDict, total=False):
    """``GET /health`` and ``POST /health``."""

    status: str
    swarm_name: str
    timestamp: str


class GetSwarmsResponse(TypedDict):
    """``GET /swarms``."""

    swarms: list[SwarmEndpointCleaned]


class PostSwarmsResponse(TypedDict):
    """``POST /swarms``."""

    status: str
    swarm_name: str


class GetSwarmsDumpResponse(TypedDict):
    """``GET /swarms/dump``."""

    status: str
    swarm_name: str


class PostInterswarmMessageResponse(TypedDict, total=False):
    """``POST /interswarm/message``: the remote task's final message and, when asked, its
    events."""

    response: dict[str, Any]
    events: list[dict[str, Any]] | None


class PostInterswarmForwardResponse(TypedDict, total=False):
    """``POST /interswarm/forward``."""

    swarm: str
    task_id: str
    status: str
    local_runner: str


class PostInterswarmBackResponse(TypedDict, total=False):
    """``POST /interswarm/back``."""

    swarm: str
    task_id: str
    status: str
    local_runner: str


class PostSwarmsLoadResponse(TypedDict, total=False):
    """``POST /swarms/load``."""

    status: str
    swarm_name: str
