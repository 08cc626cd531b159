"""CORS with the origins of the configuration the lifespan loaded (``[server] cors_origins``).

The app is built before its configuration is read, so the middleware asks for the origins
on each request and builds starlette's :class:`~starlette.middleware.cors.CORSMiddleware`
for them once (again only if they change).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["ConfiguredCORS"]


class ConfiguredCORS:
    """ASGI middleware: CORS for the origins ``origins()`` returns (credentials, any method
    and header allowed, as before)."""

    def __init__(self, app: ASGIApp, origins: Callable[[], Sequence[str]]) -> None:
        self.app = app
        self.origins = origins
        self._built: tuple[tuple[str, ...], CORSMiddleware] | None = None

    def _middleware(self) -> CORSMiddleware:
        origins = tuple(self.origins())
        if self._built is None or self._built[0] != origins:
            cors = CORSMiddleware(
                self.app,
                allow_origins=origins,
                allow_credentials=True,
                allow_methods=["*"],
                allow_headers=["*"],
            )
            self._built = (origins, cors)
        return self._built[1]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self._middleware()(scope, receive, send)
