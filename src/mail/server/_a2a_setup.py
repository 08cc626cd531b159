"""The A2A façade: the swarm served as an A2A agent with ``a2a-sdk``'s server components.

Mounted by the lifespan when the ``a2a`` extra is installed (else one log line names it):

- ``GET /.well-known/agent-card.json``: the card (:mod:`mail.server._a2a_card`), public;
- ``POST /a2a``: the JSON-RPC binding; ``/a2a/message:send``, ``/a2a/tasks/{id}``, ...:
  the HTTP+JSON binding; both behind our API keys (:mod:`mail.server._a2a_routes`);
- the SDK's ``DefaultRequestHandler`` (as
  :class:`~mail.server._a2a_executor.SwarmRequestHandler`, whose ``CancelTask`` cancels
  the MAIL task first) over :class:`~mail.server._a2a_executor.SwarmExecutor` (turns of
  MAIL tasks through the task service) and :class:`~mail.server._a2a_store.RecordTaskStore`
  (A2A tasks in our store).

The routes are mounted once per app, bound to the state of the lifespan that mounted them
(an app is served once). The SDK (a second of imports on a small machine, a third of the
server's start) is imported when the first A2A request comes, not at start: until then
placeholder routes hold the A2A paths; the first request imports the SDK off the event
loop, puts the SDK's routes in their place and is answered by them.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib.util
import logging
from typing import TYPE_CHECKING

from mail.errors import ConfigurationError
from mail.server._a2a_paths import CARD_PATH, JSONRPC_PATH, REST_PATH

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute
    from starlette.types import Receive, Scope, Send

    from mail.conversations.store import ConversationStore
    from mail.server._a2a_routes import Endpoint
    from mail.server._state import ServerState

__all__ = ["close_a2a", "open_a2a", "require_sdk"]

logger = logging.getLogger("mail.server")

MISSING = "A2A needs the a2a-sdk package: pip install 'mail-swarms[a2a]'"

#: the base URL the card's interfaces are given for the request being answered
_BASE: contextvars.ContextVar[str] = contextvars.ContextVar("a2a_base")


def require_sdk() -> None:
    """Raise :class:`ConfigurationError` naming the extra when ``a2a-sdk`` is missing."""
    try:
        import a2a.server.routes  # noqa: F401, PLC0415  # the optional SDK
    except ImportError as e:
        raise ConfigurationError(MISSING) from e


def open_a2a(app: FastAPI, state: ServerState) -> None:
    """Serve the swarm as an A2A agent on ``app`` (once per app: the routes read the
    running state), its SDK imported at the first A2A request. Without the SDK, logs
    :data:`MISSING` and serves no A2A."""
    if getattr(app.state, "a2a", None) is not None:
        return
    if importlib.util.find_spec("a2a") is None:
        logger.info("%s (the swarm is not served as an A2A agent)", MISSING)
        return
    app.state.a2a = _Deferred(app, state)


async def close_a2a(app: FastAPI) -> None:
    """Stop the A2A requests under way (their MAIL tasks go on)."""
    deferred = getattr(app.state, "a2a", None)
    if deferred is not None:
        await deferred.aclose()


class _Deferred:
    """The A2A paths until the first A2A request: that request mounts the SDK's routes
    (:func:`_mount`) in place of these, then is answered by them."""

    def __init__(self, app: FastAPI, state: ServerState) -> None:
        from starlette.routing import Route  # noqa: PLC0415

        self.app = app
        self.state = state
        self.handler: object | None = None
        self._lock = asyncio.Lock()
        paths = (CARD_PATH, JSONRPC_PATH, REST_PATH + "/{rest:path}")
        self.routes: list[BaseRoute] = [Route(path, self) for path in dict.fromkeys(paths)]
        app.router.routes[:0] = self.routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with self._lock:
            if self.handler is None:
                await asyncio.to_thread(require_sdk)  # the imports, off the event loop
                self.handler = _mount(self.app, self.state)
                routes = self.app.router.routes
                routes[:] = [r for r in routes if r not in self.routes]
        await self.app.router(scope, receive, send)  # now the SDK's routes answer

    async def aclose(self) -> None:
        if self.handler is not None:
            await self.handler.aclose()  # type: ignore[attr-defined]


def _mount(app: FastAPI, state: ServerState) -> object:
    from a2a.server.routes import (  # noqa: PLC0415
        create_agent_card_routes,
        create_jsonrpc_routes,
        create_rest_routes,
    )
    from a2a.types import AgentCard  # noqa: PLC0415
    from starlette.routing import Route  # noqa: PLC0415

    from mail.server._a2a_card import agent_card  # noqa: PLC0415
    from mail.server._a2a_executor import SwarmRequestHandler  # noqa: PLC0415
    from mail.server._a2a_routes import CallerContext, CheckedParts, guarded  # noqa: PLC0415
    from mail.server._a2a_store import RecordTaskStore  # noqa: PLC0415
    from mail.server._deps import caller_with  # noqa: PLC0415

    def records() -> ConversationStore:
        conversations = state.conversations
        assert conversations is not None  # noqa: S101  # opened by the lifespan first
        return conversations.store

    card = agent_card(state.template, state.base_url)
    handler = SwarmRequestHandler(
        state,
        RecordTaskStore(records, state.template.name),
        agent_card=card,
        request_context_builder=CheckedParts(),
    )
    configured = state.config.server.base_url

    async def card_for_request(_card: AgentCard) -> AgentCard:
        return agent_card(state.template, configured or _BASE.get())

    authorize = caller_with("admin", "user")
    context = CallerContext()
    card_routes = [
        Route(r.path, _with_base(r.endpoint), methods=sorted(r.methods or ()))
        for r in create_agent_card_routes(card, card_modifier=card_for_request)
    ]
    # The SDK's routes as they are, not re-registered as FastAPI routes: the OpenAPI
    # document stays the MAIL API's (spec/openapi.yaml); the card describes these. They
    # go first: a path matched against FastAPI's included routers costs a quarter of a
    # millisecond, a plain route's regular expression about a microsecond.
    app.router.routes[:0] = [
        *card_routes,
        *guarded(
            create_jsonrpc_routes(handler, rpc_url=JSONRPC_PATH, context_builder=context),
            authorize,
        ),
        *guarded(
            create_rest_routes(handler, context_builder=context, path_prefix=REST_PATH),
            authorize,
        ),
    ]
    return handler


def _with_base(endpoint: Endpoint) -> Endpoint:
    async def with_base(request: Request) -> Response:
        _BASE.set(str(request.base_url).rstrip("/"))
        return await endpoint(request)

    return with_base
