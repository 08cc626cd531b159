"""v1.3.6's ``mail.db.utils``: per-row functions over the task store of :mod:`mail.db`.

v1.3.6 kept an asyncpg pool to ``DATABASE_URL`` and wrote the tables of CONTRACT §11
directly. Here the same functions work on the store the configuration names (PostgreSQL
when ``DATABASE_URL`` / ``[database] url`` is set, else the SQLite file, else memory with
``persist = false``), opened once per process by :func:`get_pool` and applying its
migrations. Deliberate differences, all from using our store:

* :func:`get_pool` returns that :class:`mail.db.TaskStore`, not an ``asyncpg.Pool``.
* A task's ``is_running``/``completed`` pair is our task state: ``completed=True`` is
  ``"completed"``, ``is_running=False`` without it ``"interrupted"``, else ``"running"``.
* Events get the next per-task sequence number; ``event_id`` is not kept, and
  :func:`load_task_events` reports the sequence number as ``event_id``.
* A history or response saved again for the same task and agent replaces the earlier one
  (v1.3.6 appended rows and concatenated them on load).
* Failures raise :class:`mail.errors.StorageError` rather than being logged and swallowed.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

from mail.db.store import CallerKey, EventRow, TaskRow, TaskStore, dumps, loads
from mail.db.types import TaskDB, TaskEventDB

__all__ = [
    "logger",
    "get_pool",
    "close_pool",
    "create_agent_history",
    "load_agent_histories",
    "create_agent_histories_table",
    "create_task",
    "update_task",
    "load_tasks",
    "create_task_event",
    "load_task_events",
    "create_task_response",
    "load_task_responses",
]

logger = logging.getLogger("mail.db")

_store: TaskStore | None = None
_lock = asyncio.Lock()


async def get_pool() -> TaskStore:
    """The process's open task store, opening it from the configuration on first use."""
    global _store  # noqa: PLW0603  # one store per process, as v1.3.6 had one pool
    async with _lock:
        if _store is None:
            from mail.config import load_config  # noqa: PLC0415  # pydantic only when used
            from mail.db import open_store  # noqa: PLC0415  # asyncpg only with PostgreSQL

            _store = await open_store(load_config().database)
        return _store


async def close_pool() -> None:
    """Close the store :func:`get_pool` opened (a later call opens it again)."""
    global _store
    async with _lock:
        store, _store = _store, None
    if store is not None:
        await store.close()


def _key(swarm_name: str, caller_role: str, caller_id: str) -> CallerKey:
    return CallerKey(swarm=swarm_name, role=caller_role, id=caller_id)


def _state(is_running: bool, completed: bool) -> str:
    if completed:
        return "completed"
    return "running" if is_running else "interrupted"


async def create_agent_histories_table() -> None:
    """Create every table of the store (its migrations), as ``mail db-init`` does."""
    await get_pool()


async def create_agent_history(
    swarm_name: str,
    caller_role: str,
    caller_id: str,
    tool_format: str,
    task_id: str,
    agent_name: str,
    history: list[dict[str, Any]],
) -> None:
    """Store the history of ``agent_name`` in ``task_id`` (replacing an earlier one)."""
    store = await get_pool()
    key = _key(swarm_name, caller_role, caller_id)
    await store.save_history(key, task_id, agent_name, history, tool_format)


async def load_agent_histories(
    swarm_name: str, caller_role: str, caller_id: str
) -> dict[str, list[dict[str, Any]]]:
    """Every stored history of the caller, keyed ``"{task_id}::{agent_name}"`` as v1.3.6."""
    store = await get_pool()
    key = _key(swarm_name, caller_role, caller_id)
    tasks = [row.task_id for row in await store.load_tasks(key)]
    result: dict[str, list[dict[str, Any]]] = {}
    for task_id, details in (await store.load_details(key, tasks)).items():
        for agent, history in details.histories.items():
            result[f"{task_id}::{agent}"] = history
    return result


async def create_task(  # noqa: PLR0917  # v1.3.6 signature
    task_id: str,
    swarm_name: str,
    caller_role: str,
    caller_id: str,
    task_owner: str,
    task_contributors: list[str],
    remote_swarms: list[str],
    start_time: datetime,
    is_running: bool = True,
    completed: bool = False,
    title: str | None = None,
) -> None:
    """Store a new task record; one already stored for the caller is left as it is."""
    store = await get_pool()
    key = _key(swarm_name, caller_role, caller_id)
    if await store.load_task(key, task_id) is not None:
        return
    row = TaskRow(
        task_id=task_id,
        task_owner=task_owner,
        task_contributors=list(task_contributors),
        remote_swarms=list(remote_swarms),
        state=_state(is_running, completed),
        title=title,
        start_time=start_time,
        updated_at=datetime.now(UTC),
    )
    await store.save_task(key, row)


async def update_task(  # noqa: PLR0917  # v1.3.6 signature
    task_id: str,
    swarm_name: str,
    caller_role: str,
    caller_id: str,
    is_running: bool | None = None,
    completed: bool | None = None,
    task_contributors: list[str] | None = None,
    remote_swarms: list[str] | None = None,
    title: str | None = None,
) -> None:
    """Change the given fields of a stored task (an unknown task is ignored, as in v1.3.6)."""
    store = await get_pool()
    key = _key(swarm_name, caller_role, caller_id)
    row = await store.load_task(key, task_id)
    if row is None:
        return
    if is_running is not None or completed is not None:
        running = row.state == "running" if is_running is None else is_running
        done = row.state == "completed" if completed is None else completed
        row.state = _state(running, done)
    if task_contributors is not None:
        row.task_contributors = list(task_contributors)
    if remote_swarms is not None:
        row.remote_swarms = list(remote_swarms)
    if title is not None:
        row.title = title
    row.updated_at = datetime.now(UTC)
    await store.save_task(key, row)


def _task_dict(key: CallerKey, row: TaskRow) -> TaskDB:
    return TaskDB(
        task_id=row.task_id,
        swarm_name=key.swarm,
        caller_role=key.role,
        caller_id=key.id,
        task_owner=row.task_owner,
        task_contributors=row.task_contributors,
        remote_swarms=row.remote_swarms,
        is_running=row.state in ("running", "waiting_breakpoint"),
        completed=row.state == "completed",
        title=row.title,
        start_time=row.start_time,
        updated_at=row.updated_at,
    )


async def load_tasks(swarm_name: str, caller_role: str, caller_id: str) -> list[TaskDB]:
    """The caller's task records, oldest ``start_time`` first."""
    store = await get_pool()
    key = _key(swarm_name, caller_role, caller_id)
    return [_task_dict(key, row) for row in await store.load_tasks(key)]


async def create_task_event(
    task_id: str,
    swarm_name: str,
    caller_role: str,
    caller_id: str,
    event_type: str,
    event_data: str | dict[str, Any],
    event_id: str | None,
) -> None:
    """Append an event to ``task_id`` (``event_data``: the data object or its JSON string)."""
    store = await get_pool()
    key = _key(swarm_name, caller_role, caller_id)
    data = loads(event_data) if isinstance(event_data, str | bytes) else event_data
    if not isinstance(data, dict):
        data = {"description": data}
    async with _lock:  # the sequence number: read, then write
        seq = len(await store.load_events(key, task_id)) + 1
        await store.append_events(
            key, [EventRow(task_id=task_id, seq=seq, event=event_type, data=data)]
        )


async def load_task_events(
    task_id: str, swarm_name: str, caller_role: str, caller_id: str
) -> list[TaskEventDB]:
    """The events of ``task_id`` in order (``event_data`` as the JSON string, as stored by
    v1.3.6)."""
    store = await get_pool()
    key = _key(swarm_name, caller_role, caller_id)
    return [
        TaskEventDB(
            task_id=task_id,
            swarm_name=swarm_name,
            caller_role=caller_role,
            caller_id=caller_id,
            event_type=row.event,
            event_data=dumps(row.data),
            event_id=str(row.seq),
        )
        for row in await store.load_events(key, task_id)
    ]


async def create_task_response(
    task_id: str,
    swarm_name: str,
    caller_role: str,
    caller_id: str,
    response: dict[str, Any],
) -> None:
    """Store (or replace) the final response message of ``task_id``."""
    store = await get_pool()
    await store.save_response(_key(swarm_name, caller_role, caller_id), task_id, response)


async def load_task_responses(
    swarm_name: str, caller_role: str, caller_id: str
) -> dict[str, dict[str, Any]]:
    """The final responses of the caller's tasks, by task id."""
    store = await get_pool()
    key = _key(swarm_name, caller_role, caller_id)
    tasks = [row.task_id for row in await store.load_tasks(key)]
    details = await store.load_details(key, tasks)
    return {tid: d.response for tid, d in details.items() if d.response is not None}
