"""The routes' dependencies: the server state, the caller and its role, the debug gate.

A route's parameters say what it needs: ``state: AppState``; ``caller: AdminOrUser`` (or
``Admin``, ``Agent``, ``AnyCaller``, ``UICaller``: the ``/ui/*`` rule, see
:meth:`~mail.server.auth.AuthGate.require_ui`), which authenticates the request, refuses
other roles and declares the bearer scheme in the OpenAPI document; ``_debug: DebugOnly``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPBearer
from starlette.requests import HTTPConnection

from mail.server._state import ServerState
from mail.server.auth import Caller

__all__ = [
    "Admin",
    "AdminOrUser",
    "Agent",
    "AnyCaller",
    "AppState",
    "DebugOnly",
    "UICaller",
    "caller_with",
    "check_gates",
    "debug_only",
    "state_of",
    "ui_caller",
]

_UI = ("ui",)


def state_of(connection: HTTPConnection) -> ServerState:
    """What the app's lifespan keeps while it runs (for a request or a WebSocket)."""
    state: ServerState = connection.app.state.mail
    return state


async def _state(request: Request) -> ServerState:
    # async: FastAPI runs plain functions as dependencies in a worker thread
    return state_of(request)


AppState = Annotated[ServerState, Depends(_state)]


async def _authorize(request: Request, roles: tuple[str, ...]) -> Caller:
    # the gate's checks are built once per role set (the gate is the lifespan's)
    state = state_of(request)
    check = state.dependencies.get(roles)
    if check is None:
        check = state.dependencies[roles] = (
            state.gate.require_ui() if roles == _UI else state.gate.require(*roles)  # type: ignore[arg-type]
        )
    caller: Caller = await check(request)
    return caller


class _CallerWith(HTTPBearer):
    """A dependency that authenticates the request and requires one of ``roles``; as an
    ``HTTPBearer`` it declares the bearer scheme in the OpenAPI document."""

    def __init__(self, roles: tuple[str, ...]) -> None:
        super().__init__(
            auto_error=False,
            scheme_name="HTTPBearer",
            description="An API key: `Authorization: Bearer <key>`",
        )
        self.roles = roles

    async def __call__(self, request: Request) -> Caller:  # type: ignore[override]
        return await _authorize(request, self.roles)


def caller_with(*roles: str) -> Callable[..., Awaitable[Caller]]:
    """A dependency that authenticates the request and requires one of ``roles``."""
    return _CallerWith(roles)


#: Bearer auth for ``/ui/*``; in debug mode, loopback clients may omit it.
ui_caller = _CallerWith(_UI)


async def check_gates(request: Request) -> None:
    """Run the gates of ``request``'s route as its dependencies do: the caller and its
    role, debug mode.

    FastAPI parses a JSON body before it solves the route's dependencies; the app's
    validation handler calls this when the JSON does not parse, so that a request the
    route would refuse (no valid key, the wrong role, no debug mode) is still refused as
    such first (CONTRACT 1.5: auth, then the body). Raises as the dependencies do.
    """
    dependant = getattr(request.scope.get("route"), "dependant", None)
    for dependency in dependant.dependencies if dependant is not None else ():
        if dependency.call is debug_only:
            await debug_only(state_of(request))
        if isinstance(dependency.call, _CallerWith):
            await _authorize(request, dependency.call.roles)


Admin = Annotated[Caller, Depends(caller_with("admin"))]
AdminOrUser = Annotated[Caller, Depends(caller_with("admin", "user"))]
Agent = Annotated[Caller, Depends(caller_with("agent"))]
AnyCaller = Annotated[Caller, Depends(caller_with("admin", "user", "agent"))]
UICaller = Annotated[Caller, Depends(ui_caller)]


async def debug_only(state: AppState) -> None:
    """404 ``Not found`` unless the server runs in debug mode (CONTRACT 1.3)."""
    if not state.config.server.debug:
        raise HTTPException(status_code=404, detail="Not found")


#: A route served in debug mode only (after its caller is authenticated, when it has one).
DebugOnly = Annotated[None, Depends(debug_only)]
