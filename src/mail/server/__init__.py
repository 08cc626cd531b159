"""The MAIL HTTP server.

``create_app(config)`` builds the FastAPI application; ``run_server(config)`` serves it
with uvicorn; ``create_response(swarm, input, ...)`` answers an OpenAI Responses-style
call with a swarm of this process, as the debug ``POST /responses`` route does.
``mail.server:app`` exists for ``uvicorn mail.server:app``: it is built on first access
and reads its configuration when it starts, not at import. v1.3.6's module-level
route functions (``root``, ``message``, ``get_task``, ...) are wrappers that call the app
in-process, imported on first access (see :mod:`mail.server._v136_routes`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mail.server._app import create_app, run_server_with_template
from mail.server._app import run_server as _run_server
from mail.server._routes_responses import create_response

if TYPE_CHECKING:
    from fastapi import FastAPI

    from mail.config import MAILConfig
    from mail.server._v136_routes import (
        dump_swarm,
        get_or_create_mail_instance,
        get_task,
        get_tasks,
        get_ui_agents,
        health,
        health_post,
        lifespan,
        list_swarms,
        load_swarm_from_json,
        logger,
        message,
        post_interswarm_message,
        receive_interswarm_back,
        receive_interswarm_forward,
        register_swarm,
        responses,
        root,
        status,
        ui_dump_events,
        ui_get_task,
        ui_get_task_summary,
        ui_get_tasks,
        ui_message,
        whoami,
    )

    app: FastAPI

__all__ = [
    "app",
    "create_app",
    "create_response",
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
    "run_server",
    "run_server_with_template",
    "status",
    "ui_dump_events",
    "ui_get_task",
    "ui_get_task_summary",
    "ui_get_tasks",
    "ui_message",
    "whoami",
]


def run_server(cfg: MAILConfig) -> None:
    """Serve ``cfg``'s swarm with uvicorn until interrupted (blocks); v1.3.6's parameter
    name. See :func:`mail.server._app.run_server` for what it raises."""
    _run_server(cfg)


# v1.3.6's route functions (see mail.server._v136_routes), imported on first access: the
# names of __all__ this module does not define itself
_V136_ROUTES = frozenset(__all__) - {
    "app",
    "create_app",
    "create_response",
    "run_server",
    "run_server_with_template",
}


def __getattr__(name: str) -> Any:
    if name in _V136_ROUTES:
        from mail.server import _v136_routes  # noqa: PLC0415  # loaded on first use

        return getattr(_v136_routes, name)
    if name == "app":
        from mail.server._module_app import module_app  # noqa: PLC0415  # built on first access

        return module_app()
    raise AttributeError(f"module 'mail.server' has no attribute {name!r}")
