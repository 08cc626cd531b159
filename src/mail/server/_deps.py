"""Request-time helpers shared by the routes: the caller, the state, JSON bodies."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from fastapi import Depends, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.responses import Response
from starlette.routing import request_response

from mail.errors import InvalidMessageError
from mail.server._state import ServerState
from mail.server.auth import Caller

__all__ = [
    "BEARER_SECURITY",
    "DirectRoute",
    "as_bool",
    "as_str",
    "authorize",
    "caller_with",
    "read_json",
    "state_of",
    "ui_caller",
]

# Declares the bearer scheme in the OpenAPI document; the gate does the checking.
_bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer <key>`")


class DirectRoute(APIRoute):
    """A route whose endpoint takes the ``Request`` and returns a ``Response`` itself.

    Such an endpoint leaves FastAPI's request handler (solving dependencies, reading the
    body, serializing a return value) nothing to do, so the endpoint serves as the handler
    (FastAPI's documented ``get_route_handler`` override). As one of the app's own routes
    it is served as a Starlette route is (``request_response``: the app's exception
    handlers, without the exit stacks FastAPI opens for dependencies with ``yield``, which
    it has none of). The OpenAPI operation is built from the route as for any other. The
    busiest routes use it.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        self.app = request_response(self.get_route_handler())

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        d = self.dependant
        if (
            d.dependencies
            or d.path_params
            or d.query_params
            or d.header_params
            or d.cookie_params
            or d.body_params
            or d.request_param_name is None
        ):
            raise TypeError(f"{self.path}: a DirectRoute endpoint takes only the Request")
        handler: Callable[[Request], Coroutine[Any, Any, Response]] = self.endpoint
        return handler


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.mail
    return state


#: What a route that calls :func:`authorize` itself adds to its OpenAPI operation, as the
#: ``_bearer`` dependency would.
BEARER_SECURITY: dict[str, Any] = {"security": [{"HTTPBearer": []}]}

_UI = ("ui",)


async def authorize(request: Request, roles: tuple[str, ...]) -> Caller:
    """Authenticate the request and require one of ``roles`` (``("ui",)``: the ``/ui/*``
    rule: in debug mode, loopback clients may omit the key).

    The busiest routes call this directly instead of through a dependency: FastAPI's
    dependency resolution costs more per request than the check itself.
    """
    state = state_of(request)
    check = state.dependencies.get(roles)
    if check is None:
        check = state.dependencies[roles] = (
            state.gate.require_ui() if roles == _UI else state.gate.require(*roles)  # type: ignore[arg-type]
        )
    caller: Caller = await check(request)
    return caller


def caller_with(*roles: str) -> Callable[..., Awaitable[Caller]]:
    """A dependency that authenticates the request and requires one of ``roles``."""

    async def dependency(
        request: Request, _credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)
    ) -> Caller:
        return await authorize(request, roles)

    return dependency


async def ui_caller(
    request: Request, _credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)
) -> Caller:
    """Bearer auth for ``/ui/*``; in debug mode, loopback clients may omit it."""
    return await authorize(request, _UI)


async def read_json(request: Request) -> dict[str, Any]:
    """The request body as a JSON object. Raises :class:`InvalidMessageError` (400)."""
    raw = await request.body()
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError as e:
        raise InvalidMessageError(f"error parsing request: {e}") from None
    if not isinstance(data, dict):
        raise InvalidMessageError(
            f"error parsing request: expected a JSON object, got {type(data).__name__}"
        )
    return data


def as_str(data: dict[str, Any], name: str, default: str = "") -> str:
    value = data.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise InvalidMessageError(f"{name} must be a string, got {type(value).__name__}")
    return value


def as_bool(data: dict[str, Any], name: str, default: bool = False) -> bool:
    value = data.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidMessageError(f"{name} must be true or false, got {json.dumps(value)}")
    return value
