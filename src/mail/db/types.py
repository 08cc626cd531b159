"""v1.3.6's ``mail.db.types``: the row shapes, one ``TypedDict`` per table of CONTRACT §11.

:mod:`mail.db.utils` returns these from its ``load_*`` functions. Our own store works with
the dataclasses of :mod:`mail.db.store`; these dictionaries are for code written against
v1.3.6.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict

__all__ = ["AgentHistoriesDB", "TaskDB", "TaskEventDB", "TaskResponseDB"]


class AgentHistoriesDB(TypedDict, total=False):
    """A row of ``agent_histories``: the history of one agent in one task."""

    id: str
    swarm_name: str
    caller_role: str
    caller_id: str
    tool_format: str
    task_id: str
    agent_name: str
    history: list[dict[str, Any]]
    created_at: datetime
    updated_at: datetime


class TaskDB(TypedDict, total=False):
    """A row of ``tasks``."""

    id: str
    task_id: str
    swarm_name: str
    caller_role: str
    caller_id: str
    task_owner: str
    task_contributors: list[str]
    remote_swarms: list[str]
    is_running: bool
    completed: bool
    title: str | None
    start_time: datetime
    created_at: datetime
    updated_at: datetime


class TaskEventDB(TypedDict, total=False):
    """A row of ``task_events`` (``event_data`` is the JSON string of the event's data)."""

    id: str
    task_id: str
    swarm_name: str
    caller_role: str
    caller_id: str
    event_type: str
    event_data: str
    event_id: str | None
    created_at: datetime


class TaskResponseDB(TypedDict, total=False):
    """A row of ``task_responses``: the final response message of a task."""

    id: str
    task_id: str
    swarm_name: str
    caller_role: str
    caller_id: str
    response: dict[str, Any]
    created_at: datetime
