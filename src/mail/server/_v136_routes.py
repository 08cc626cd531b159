"""v1.3.6's module-level route functions, as thin wrappers over our app.

v1.3.6 exposed each route of ``mail.server`` as a function of the request. Ours are
FastAPI handlers whose state and caller come from dependencies; each wrapper here sends its
route's request to the app in-process (``httpx.ASGITransport``) and returns what the HTTP
route answers: the JSON body as a dict or list, an event stream as a
:class:`~starlette.responses.Response` holding the whole stream, or
:class:`~fastapi.HTTPException` with the route's status and detail.

A wrapper given a ``request`` calls ``request.app`` with the request's headers (its bearer
key), query string, body and client address. One without (v1.3.6's ``root()``,
``health()``, the ``ui_*`` reads) calls ``mail.server:app``, which must be serving, as a
loopback client without a key: the ``/ui/*`` routes answer it in debug mode only.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import httpx
from fastapi import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from mail.server._auth_types import Caller
from mail.server._module_app import module_app

if TYPE_CHECKING:
    from fastapi import FastAPI

    from mail.api import MAILSwarm
    from mail.server._state import ServerState
    from mail.server.auth import Role

__all__ = [
    "dump_swarm",
    "get_or_create_mail_instance",
    "get_task",
    "get_tasks",
    "get_ui_agents",
    "health",
    "health_post",
    "lifespan",
    "list_swarms",
    "load_swarm_from_json",
    "logger",
    "message",
    "post_interswarm_message",
    "receive_interswarm_back",
    "receive_interswarm_forward",
    "register_swarm",
    "responses",
    "root",
    "status",
    "ui_dump_events",
    "ui_get_task",
    "ui_get_task_summary",
    "ui_get_tasks",
    "ui_message",
    "whoami",
]

logger = logging.getLogger("mail.server")

_LOOPBACK = ("127.0.0.1", 0)
# set by httpx from the content; the request's own would be wrong for the new one
_DROPPED = frozenset({"host", "content-length", "transfer-encoding", "connection"})


def _result(response: httpx.Response) -> Any:
    content_type = response.headers.get("content-type", "")
    if response.is_error:
        detail: Any = response.text
        if content_type.startswith("application/json"):
            body = response.json()
            detail = body.get("detail", body) if isinstance(body, dict) else body
        raise HTTPException(status_code=response.status_code, detail=detail)
    if content_type.startswith("application/json"):
        return response.json()
    return Response(response.content, response.status_code, media_type=content_type or None)


async def _call(
    method: str,
    path: str,
    request: Request | None = None,
    params: dict[str, Any] | None = None,
) -> Any:
    """Send ``method path`` to the request's app (or ``mail.server:app``) and return what
    the route answers (see the module)."""
    if request is None:
        app, headers, body, client, base = module_app(), [], b"", _LOOPBACK, "http://localhost"
    else:
        app, body, base = request.app, await request.body(), str(request.base_url)
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _DROPPED]
        client = (request.client.host, request.client.port) if request.client else _LOOPBACK
        params = dict(request.query_params) if params is None else params
    transport = httpx.ASGITransport(app=app, client=client)
    async with httpx.AsyncClient(transport=transport, base_url=base) as http:
        response = await http.request(method, path, headers=headers, content=body, params=params)
    return _result(response)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The app's lifespan: the server state exists (``app.state.mail``) inside it."""
    async with app.router.lifespan_context(app):
        yield


async def get_or_create_mail_instance(
    role: Role, id: str, api_key: str
) -> MAILSwarm:  # v1.3.6 names it id
    """The caller's swarm in the serving ``mail.server:app``, built and started on first use."""
    state: ServerState = module_app().state.mail
    return await state.swarms.get(Caller(role=role, id=id, api_key=api_key))


async def root() -> Any:
    """``GET /``: server and swarm information."""
    return await _call("GET", "/")


async def health() -> Any:
    """``GET /health``."""
    return await _call("GET", "/health")


async def health_post(request: Request) -> Any:
    """``POST /health`` (admin): set the health status."""
    return await _call("POST", "/health", request)


async def whoami(request: Request) -> Any:
    """``GET /whoami``: the caller's ``{id, role}``."""
    return await _call("GET", "/whoami", request)


async def status(request: Request) -> Any:
    """``GET /status``: the caller's runtime status."""
    return await _call("GET", "/status", request)


async def message(request: Request) -> Any:
    """``POST /message``: a task's answer, or its whole event stream when streamed."""
    return await _call("POST", "/message", request)


async def get_ui_agents() -> Any:
    """``GET /ui/agents``."""
    return await _call("GET", "/ui/agents")


async def ui_message(request: Request) -> Any:
    """``POST /ui/message`` (debug mode)."""
    return await _call("POST", "/ui/message", request)


async def ui_dump_events() -> Any:
    """``GET /ui/dump-events`` (debug mode)."""
    return await _call("GET", "/ui/dump-events")


async def ui_get_task_summary(task_id: str, force_regen: bool = False) -> Any:
    """``GET /ui/task-summary/{task_id}`` (debug mode)."""
    params = {"force_regen": "true"} if force_regen else None
    return await _call("GET", f"/ui/task-summary/{task_id}", params=params)


async def ui_get_tasks() -> Any:
    """``GET /ui/tasks`` (debug mode)."""
    return await _call("GET", "/ui/tasks")


async def ui_get_task(task_id: str) -> Any:
    """``GET /ui/task/{task_id}`` (debug mode)."""
    return await _call("GET", f"/ui/task/{task_id}")


async def list_swarms() -> Any:
    """``GET /swarms``: the public swarms this server knows."""
    return await _call("GET", "/swarms")


async def register_swarm(request: Request) -> Any:
    """``POST /swarms`` (admin)."""
    return await _call("POST", "/swarms", request)


async def dump_swarm(request: Request) -> Any:
    """``GET /swarms/dump`` (admin)."""
    return await _call("GET", "/swarms/dump", request)


async def load_swarm_from_json(request: Request) -> Any:
    """``POST /swarms/load`` (admin)."""
    return await _call("POST", "/swarms/load", request)


async def receive_interswarm_forward(request: Request) -> Any:
    """``POST /interswarm/forward`` (agent)."""
    return await _call("POST", "/interswarm/forward", request)


async def receive_interswarm_back(request: Request) -> Any:
    """``POST /interswarm/back`` (agent)."""
    return await _call("POST", "/interswarm/back", request)


async def post_interswarm_message(request: Request) -> Any:
    """``POST /interswarm/message`` (admin or user)."""
    return await _call("POST", "/interswarm/message", request)


async def responses(request: Request) -> Any:
    """``POST /responses`` (debug mode)."""
    return await _call("POST", "/responses", request)


async def get_tasks(request: Request) -> Any:
    """``GET /tasks``: the caller's tasks."""
    return await _call("GET", "/tasks", request)


async def get_task(request: Request) -> Any:
    """``GET /task`` with a JSON body ``{"task_id"}``."""
    return await _call("GET", "/task", request)
