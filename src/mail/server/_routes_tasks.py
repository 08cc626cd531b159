"""Routes that read a caller's tasks: ``/tasks``, ``/task``, ``/tasks/{id}/events``, ``/ui/*``."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Header, Query
from sse_starlette import EventSourceResponse

from mail.api import MAILSwarm
from mail.core.events import EventName
from mail.core.tasks import MAILTask, short_title
from mail.errors import InvalidMessageError, PermissionDeniedError
from mail.server._auth_types import wrong_role
from mail.server._deps import AdminOrUser, AppState, UICaller
from mail.server._routes_core import breakpoint_tool_specs
from mail.server._routing import StrictJSONRoute
from mail.server._sse import compact_json, event_response, stored_event
from mail.server._state import ServerState
from mail.server.models import (
    ERROR_RESPONSES,
    EVENT_STREAM,
    TASKS_PAGE_MAX,
    CancelResponse,
    JSONBody,
    TaskId,
    TaskQuery,
    UIAgentsResponse,
)

__all__ = ["router", "task_record"]

router = APIRouter(responses=ERROR_RESPONSES, route_class=StrictJSONRoute)


def task_record(
    task: MAILTask, *, events: bool = True, stored: bool | None = None
) -> dict[str, Any]:
    """A task as ``/tasks`` and ``/task`` return it (without ``events`` if not ``events``;
    ``stored``, when given: whether the store holds the task as shown)."""
    record = {
        "task_id": task.task_id,
        "task_owner": task.task_owner,
        "task_contributors": list(task.task_contributors),
        "start_time": task.start_time.isoformat(),
        "updated_at": task.updated_at.isoformat(),
        "events": [stored_event(e) for e in task.log.all()],
        "is_running": task.is_running,
        "state": str(task.state),
        "task_message_queue": [list(item) for item in task.stash],
        "remote_swarms": sorted(task.remote_swarms),
        "completed": task.completed,
        "title": task.title,
    }
    if task.usage is not None:
        record["usage"] = dict(task.usage)
    if task.budget is not None:
        record["budget"] = task.budget.view()
    if stored is not None:
        record["stored"] = stored
    if not events:
        del record["events"]
    return record


def stored(state: ServerState, swarm: MAILSwarm | None, task: MAILTask) -> bool | None:
    """Whether the store holds ``task`` as it is now (``None`` without a store; a copy
    another replica runs, read from the store, is stored)."""
    if state.store is None:
        return None
    if swarm is None or swarm.get_task_by_id(task.task_id) is not task:
        return True
    return swarm.runtime.recorder is None or swarm.runtime.recorder.outcome(task.task_id).committed


_TASKS_DOC = (
    "Without `limit` and `cursor`: an object keyed by task id (the v1.3.6 shape). With "
    "either: one page, newest first, `{tasks: [...], next_cursor}`; pass `next_cursor` "
    "back as `cursor` for the next page (null on the last). `events=false` leaves out "
    "each task's `events`."
)


@router.get(
    "/tasks",
    summary="The caller's tasks: all by id, or one page, newest first",
    description=_TASKS_DOC,
)
async def list_tasks(
    state: AppState,
    caller: AdminOrUser,
    limit: int | None = Query(
        None, ge=1, le=TASKS_PAGE_MAX, description="Page size: at most this many tasks"
    ),
    cursor: str | None = Query(
        None, max_length=512, description="`next_cursor` of the previous page"
    ),
    events: bool = Query(True, description="false: leave out each task's events"),
) -> dict[str, Any]:
    after = _decode_cursor(cursor) if cursor is not None else None
    tasks = await state.tasks.tasks(caller)
    swarm = state.swarms.find(caller)

    def record(task: MAILTask) -> dict[str, Any]:
        return task_record(task, events=events, stored=stored(state, swarm, task))

    if limit is None and cursor is None:
        return {t.task_id: record(t) for t in tasks}
    newest = sorted(tasks, key=_page_key, reverse=True)
    if after is not None:
        newest = [t for t in newest if _page_key(t) < after]
    page = newest[: limit or TASKS_PAGE_MAX]
    more = len(newest) > len(page)
    return {
        "tasks": [record(t) for t in page],
        "next_cursor": _encode_cursor(_page_key(page[-1])) if more else None,
    }


def _page_key(task: MAILTask) -> tuple[str, str]:
    return task.start_time.isoformat(), task.task_id


def _encode_cursor(key: tuple[str, str]) -> str:
    raw = json.dumps(list(key), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError:
        key = None
    match key:
        case [str(start), str(task_id)]:
            return start, task_id
    raise InvalidMessageError(
        "is not a cursor of GET /tasks (pass back the next_cursor of a page)", field="query.cursor"
    )


@router.post(
    "/tasks/{task_id}/cancel",
    response_model=CancelResponse,
    summary="Cancel a running or paused task of the caller",
    description=(
        "The agents' turns are cancelled, every open stream of the task ends with "
        "`task_error` (data `status: cancelled`) and the swarms that took part are told. "
        "404 for an unknown task (or another caller's), 409 for a finished one."
    ),
)
async def cancel_task(state: AppState, caller: AdminOrUser, task_id: TaskId) -> dict[str, Any]:
    await state.tasks.cancel(caller, task_id)
    return {"task_id": task_id, "status": "cancelled"}


@router.get(
    "/task",
    summary="One task of the caller (task_id as a query parameter, or in a JSON body)",
)
async def get_task(
    state: AppState,
    caller: AdminOrUser,
    body: JSONBody[TaskQuery],
    task_id: TaskId | None = None,
) -> dict[str, Any]:
    if task_id is None:
        task_id = body.task_id
    if task_id is None:
        raise InvalidMessageError("task_id is required")
    task = await state.tasks.task(caller, task_id)
    return task_record(task, stored=stored(state, state.swarms.find(caller), task))


@router.get(
    "/tasks/{task_id}/events",
    summary="The task's events as server-sent events: replay after a sequence number, then live",
    response_class=EventSourceResponse,
    responses={200: {"description": "The task's events", "content": EVENT_STREAM}},
)
async def task_events(
    state: AppState,
    caller: AdminOrUser,
    task_id: TaskId,
    after: int | None = Query(None, ge=0, description="Replay events after this sequence number"),
    last_event_id: str | None = Header(None),
) -> EventSourceResponse:
    cursor = after if after is not None else 0
    if after is None and last_event_id:
        if not last_event_id.isdigit():
            raise InvalidMessageError(
                f"Last-Event-ID must be a sequence number, got {last_event_id!r}"
            )
        cursor = int(last_event_id)
    # (an unknown task is a 404 before the stream starts)
    return event_response(await state.tasks.events(caller, task_id, cursor))


# --- /ui -------------------------------------------------------------------------------------


@router.get("/ui/agents", response_model=UIAgentsResponse, summary="The swarm's agents, for a UI")
async def ui_agents(state: AppState, caller: UICaller) -> dict[str, Any]:
    template = state.template
    admin = caller.role == "admin"
    return {
        "agents": [
            {
                "name": a.name,
                "comm_targets": a.comm_targets,
                "enable_entrypoint": a.enable_entrypoint,
                "can_complete_tasks": a.can_complete_tasks,
                "enable_interswarm": a.enable_interswarm,
                "actions": [{"name": x.name, "description": x.description} for x in a.actions],
                "prompt": a.system_prompt if admin else None,
            }
            for a in template.agents
        ],
        "entrypoint": template.entrypoint,
        "breakpoint_tools": breakpoint_tool_specs(template),
    }


def _title(task: MAILTask) -> str:
    if task.title:
        return task.title
    for event in task.log.all():
        message = (
            event.extra_data.get("full_message") if event.event == EventName.NEW_MESSAGE else None
        )
        if message and message["message"]["sender"]["address_type"] in ("user", "admin"):
            return short_title(message["message"]["body"])
    return "<no messages>"


def _summary(task: MAILTask) -> dict[str, Any]:
    return {
        "task_id": task.task_id,
        "task_owner": task.task_owner,
        "is_running": task.is_running,
        "completed": task.completed,
        "start_time": task.start_time.isoformat(),
        "event_count": len(task.log),
        "title": _title(task),
    }


@router.get("/ui/tasks", summary="The caller's tasks, newest first")
async def ui_tasks(state: AppState, caller: UICaller) -> list[dict[str, Any]]:
    tasks = sorted(await state.tasks.tasks(caller), key=lambda t: t.start_time, reverse=True)
    return [_summary(t) for t in tasks]


@router.get("/ui/task/{task_id}", summary="One task with its events")
async def ui_task(state: AppState, caller: UICaller, task_id: TaskId) -> dict[str, Any]:
    task = await state.tasks.task(caller, task_id)
    record = _summary(task)
    del record["event_count"]
    if task.budget is not None:
        record["budget"] = task.budget.view()
    record["events"] = [
        {"event": e.event, "data": e.data(), "id": str(e.seq)} for e in task.log.all()
    ]
    return record


@router.get("/ui/task-summary/{task_id}", summary="A short title for a task")
async def ui_task_summary(
    state: AppState,
    caller: UICaller,
    task_id: TaskId,
    force_regen: bool = False,
) -> dict[str, Any]:
    task = await state.tasks.task(caller, task_id)
    if force_regen:
        task.title = None
    task.title = _title(task)
    return {"task_id": task_id, "title": task.title}


@router.get(
    "/ui/dump-events",
    summary="Write the caller's events to a JSON-lines file in the data directory",
)
async def ui_dump_events(state: AppState, caller: UICaller) -> dict[str, Any]:
    # a file written on the server: only admins may ask for it in production (CONTRACT 1.3
    # gates the route behind debug mode; decision 5 keeps /ui/* closed in production)
    if caller.role != "admin" and not state.config.server.debug:
        raise PermissionDeniedError(wrong_role(["admin"]) + " (or a server in debug mode)")
    swarm = await state.swarms.resolve(caller)
    rows = [
        {"task_id": t.task_id, "event_type": e.event, "event_id": e.seq, "data": e.data()}
        for t in (swarm.runtime.tasks if swarm else [])
        for e in t.log.all()
    ]
    path = Path(state.config.server.data_dir) / "events_dump.jsonl"
    text = "".join(compact_json(r) + "\n" for r in rows)
    await asyncio.to_thread(_write, path, text)
    return {
        "message": f"Dumped {len(rows)} events to {path}",
        "event_count": len(rows),
        "events": rows,
    }


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
