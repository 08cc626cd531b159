"""The swarm viewer: ``GET /ui`` serves the page, ``/ui/assets/...`` its scripts and styles.

The files live in ``mail/server/ui/`` (plain ES modules, HTML and CSS: no build step). The
page is sent with a strict Content-Security-Policy: scripts, styles, images and requests
may only come from this server, and no inline script runs. The page tells whether this
browser may come in without a key (``<meta name="mail-keyless">``, debug mode on loopback),
so that it need not ask a route that would refuse it. These routes are not API operations,
so they stay out of the OpenAPI document. The ``/ui/*`` API routes
(``_routes_tasks.py``, ``_routes_message.py``) are unchanged.
"""

from __future__ import annotations

import os
from functools import cache
from os import PathLike
from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from mail.server._deps import state_of

__all__ = ["CONTENT_SECURITY_POLICY", "UI_DIR", "mount_ui", "router"]

UI_DIR = Path(__file__).parent / "ui"

#: Everything from this origin only; no inline script, no plugin, no framing by others.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
_PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

_KEYLESS = '<meta name="mail-keyless" content="false">'

router = APIRouter(include_in_schema=False)


@cache
def _page() -> str:
    return (UI_DIR / "index.html").read_text(encoding="utf-8")


@router.get("/ui")
@router.get("/ui/")
async def ui_page(request: Request) -> HTMLResponse:
    """The viewer's page (public: it holds no data; the page asks for a key)."""
    page = _page()
    if state_of(request).gate.keyless(request):
        page = page.replace(_KEYLESS, _KEYLESS.replace("false", "true"))
    return HTMLResponse(page, headers=_PAGE_HEADERS)


class _Assets(StaticFiles):
    """Static files, revalidated on each load (a new version of the package shows at once)."""

    def file_response(
        self,
        full_path: str | PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers["Cache-Control"] = "no-cache"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


def mount_ui(app: FastAPI) -> None:
    """Add the page's routes and its assets under ``/ui/assets`` to ``app``."""
    app.include_router(router)
    app.mount("/ui/assets", _Assets(directory=UI_DIR / "assets"), name="ui-assets")
