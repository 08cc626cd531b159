"""The JSON shapes :class:`mail.client.MAILClient` returns, as ``TypedDict``\\s.

They describe what a MAIL server answers (CONTRACT section 1.5); the client checks only
that an answer is a JSON object, so a field this server adds is kept and one an older
server omits is missing (``NotRequired`` marks the fields older servers do not send).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "DumpResult",
    "HealthInfo",
    "LoadResult",
    "MessageEvent",
    "MessageResult",
    "RegisterResult",
    "RootInfo",
    "RootSwarm",
    "StatusInfo",
    "StatusSwarm",
    "StoredEvent",
    "SwarmEntry",
    "SwarmsList",
    "TaskRecord",
    "WhoAmI",
]


class RootSwarm(TypedDict):
    """The served swarm as ``GET /`` describes it."""

    name: str
    version: str
    description: str
    entrypoint: str
    keywords: list[str]
    public: bool


class RootInfo(TypedDict):
    """``GET /``: the server and its swarm."""

    name: str
    protocol_version: str
    version: NotRequired[str]
    swarm: RootSwarm
    status: str
    uptime: float


class HealthInfo(TypedDict):
    """``GET /health`` and ``POST /health``."""

    status: str
    swarm_name: str
    timestamp: str
    storage: NotRequired[str]  # "ok", or the store's last failure (servers with a store)
    unsaved_tasks: NotRequired[int]  # tasks the store has not got yet (servers with a store)


class WhoAmI(TypedDict):
    """``GET /whoami``: the caller's identity (``username`` repeats ``id``)."""

    id: str
    role: str
    username: NotRequired[str]


class StatusSwarm(TypedDict):
    """The swarm part of :class:`StatusInfo`."""

    name: str | None
    status: str


class StatusInfo(TypedDict):
    """``GET /status``: the caller's runtime on the server."""

    swarm: StatusSwarm
    active_users: int
    user_mail_ready: bool
    user_task_running: bool


class MessageEvent(TypedDict):
    """A stored event in a ``POST /message`` answer (``show_events``); ``data`` is an object
    ``{timestamp, description, task_id, extra_data}`` and ``id`` its sequence number."""

    event: str
    data: dict[str, Any]
    id: str | None
    retry: NotRequired[int | None]
    comment: NotRequired[str | None]


class MessageResult(TypedDict):
    """``POST /message``: the final answer, and the task's events when asked for.

    ``task_id`` and ``status`` (``completed``, ``waiting_breakpoint``, ``failed``,
    ``cancelled``) are sent by this implementation, not by v1.3.6 servers.
    """

    response: str
    events: list[MessageEvent] | None
    task_id: NotRequired[str]
    status: NotRequired[str]


class StoredEvent(TypedDict):
    """An event in a task record; ``data`` is the JSON text of the event's data."""

    event: str
    data: str
    id: str | None
    retry: NotRequired[int | None]
    comment: NotRequired[str | None]


class TaskRecord(TypedDict):
    """``GET /task``, and each value of ``GET /tasks``."""

    task_id: str
    task_owner: str
    task_contributors: list[str]
    start_time: str
    events: list[StoredEvent]
    is_running: bool
    completed: bool
    task_message_queue: list[Any]
    updated_at: NotRequired[str]
    state: NotRequired[str]
    remote_swarms: NotRequired[list[str]]
    title: NotRequired[str | None]


class SwarmEntry(TypedDict):
    """One public swarm of ``GET /swarms``."""

    swarm_name: str
    base_url: str
    version: str | None
    last_seen: str | None
    is_active: bool
    latency: float | None
    swarm_description: str
    keywords: list[str]
    metadata: dict[str, Any] | None


class SwarmsList(TypedDict):
    """``GET /swarms``."""

    swarms: list[SwarmEntry]


class RegisterResult(TypedDict):
    """``POST /swarms``."""

    status: Literal["registered"]
    swarm_name: str


class DumpResult(TypedDict):
    """``GET /swarms/dump``."""

    status: Literal["dumped"]
    swarm_name: str


class LoadResult(TypedDict):
    """``POST /swarms/load``."""

    status: Literal["success"]
    swarm_name: str
