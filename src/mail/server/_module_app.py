"""``mail.server:app``: the module-level app, built on first access (``module_app()``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mail.server._app import create_app

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["module_app"]

_built: list[FastAPI] = []


def module_app() -> FastAPI:
    """The app served as ``mail.server:app``; built once, on the first call."""
    if not _built:
        _built.append(create_app())
    return _built[0]
