"""The MAIL HTTP server.

``create_app(config)`` builds the FastAPI application; ``run_server(config)`` serves it
with uvicorn. ``mail.server:app`` exists for ``uvicorn mail.server:app``: it is built on first
access and reads its configuration when it starts, not at import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mail.server._app import create_app, run_server_with_template
from mail.server._app import run_server as _run_server

if TYPE_CHECKING:
    from fastapi import FastAPI

    from mail.config import MAILConfig

    app: FastAPI

__all__ = ["app", "create_app", "run_server", "run_server_with_template"]


def run_server(cfg: MAILConfig) -> None:
    """Serve ``cfg``'s swarm with uvicorn until interrupted (blocks); v1.3.6's parameter
    name. See :func:`mail.server._app.run_server` for what it raises."""
    _run_server(cfg)


# not ``_app``: that name is the submodule mail.server._app
_built_app: Any = None


def __getattr__(name: str) -> Any:
    global _built_app  # noqa: PLW0603  # the module-level app is built once, on first access
    if name == "app":
        if _built_app is None:
            _built_app = create_app()
        return _built_app
    raise AttributeError(f"module 'mail.server' has no attribute {name!r}")
