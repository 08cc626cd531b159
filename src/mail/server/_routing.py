"""The route class of every router: request bodies are parsed by :func:`mail._limits.loads`.

FastAPI parses a JSON body with ``Request.json()`` (``json.loads``), which reads ``NaN``,
``Infinity`` and ``1e400`` as floats and raises ``RecursionError`` on deep nesting. Our
requests parse strictly instead: a refused document raises ``json.JSONDecodeError``, which
FastAPI reports as invalid JSON (400 ``error parsing request: ...``, once the route's gates
let the request through; see ``mail.server._app``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from mail._limits import loads

__all__ = ["StrictJSONRoute"]


class _StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = loads(await self.body())
        return self._json


class StrictJSONRoute(APIRoute):
    """An ``APIRoute`` whose handler reads JSON bodies with :func:`~mail._limits.loads`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(_StrictJSONRequest(request.scope, request.receive))

        return strict
