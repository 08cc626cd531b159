"""``create_app``: the FastAPI application, its lifespan and its error handling."""

from __future__ import annotations

import asyncio
import copy
import gc
import json
import logging
import math
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mail._limits import loads
from mail.api import MAILSwarmTemplate
from mail.config.server import DEFAULT_CORS_ORIGINS
from mail.errors import (
    AuthError,
    AuthServiceError,
    MAILError,
    StorageError,
    TaskNotStoredError,
)
from mail.net import (
    AddressPolicy,
    DiscoveryPolicy,
    InterswarmRouter,
    RouterSettings,
    SessionSource,
)
from mail.server import (
    _routes_core,
    _routes_interswarm,
    _routes_keys,
    _routes_map,
    _routes_message,
    _routes_metrics,
    _routes_responses,
    _routes_tasks,
)
from mail.server._a2a_setup import close_a2a, open_a2a
from mail.server._cluster import Cluster, preflight
from mail.server._cluster_setup import (
    authenticator_for,
    follow_cluster,
    open_cluster,
    registry_class,
    store_pool,
    task_service,
)
from mail.server._cors import ConfiguredCORS
from mail.server._deps import check_gates
from mail.server._listen import check_port, recorded
from mail.server._map_setup import open_conversations
from mail.server._metrics import Metrics, StreamCounter, check_metrics
from mail.server._reload import APP, reload_environment, uvicorn_options, worker_config
from mail.server._routes_ui_page import mount_ui
from mail.server._shutdown import serve
from mail.server._state import ServerState, every
from mail.server._statuses import server_status
from mail.server._task_service import RelayedError, TurnCutShortError
from mail.server.models import PATTERN_RULES, not_an_object
from mail.stdlib import configure as configure_stdlib
from mail.telemetry import check_telemetry
from mail.version import PROTOCOL_VERSION, __version__

if TYPE_CHECKING:
    from mail.config import MAILConfig
    from mail.server.auth import Authenticator

__all__ = ["create_app", "run_server"]

logger = logging.getLogger("mail.server")

# Inside the server, bad input is a plain 400 like the protocol's documented errors. A
# failing auth service is the documented 500 (CONTRACT 1.2) of the status table, with one of
# the two fixed details RemoteAuth raises (the cause is in its log).
#: The body limit before the configuration is loaded (``create_app(None)``).
_DEFAULT_BODY_LIMIT = 1_048_576


async def _mail_error(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, MAILError)  # noqa: S101  # registered for MAILError only
    status = server_status(error)
    server_side = status >= HTTPStatus.INTERNAL_SERVER_ERROR
    if isinstance(error, TaskNotStoredError):
        logger.warning("answer held back: %s", error)
    elif isinstance(error, StorageError) and error.retry_after is not None:
        # new work refused while the store fails: the failure itself is logged once
        logger.debug("request refused: %s", error)
    elif isinstance(error, (TurnCutShortError, RelayedError)):
        # the server stops, or another replica answered (and logged) this error
        logger.info("request answered %d: %s", status, error)
    elif server_side and not isinstance(error, AuthError):
        logger.error("request failed: %s", error)
    # a 500 says nothing internal; gateway errors name the peer or service that failed
    internal = status == HTTPStatus.INTERNAL_SERVER_ERROR and not isinstance(
        error, AuthServiceError
    )
    detail = "internal server error" if internal else str(error)
    body: dict[str, Any] = {"detail": detail}
    headers: dict[str, str] = {}
    if isinstance(error, StorageError) and error.retry_after is not None:
        headers["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
    if isinstance(error, TaskNotStoredError):
        body["task_id"] = error.task_id
    return JSONResponse(body, status_code=status, headers=headers)


async def _validation_error(request: Request, error: Exception) -> Response:
    """A request that fails validation: 400 ``{"detail": ...}``, its problems joined by "; ".

    - JSON that does not parse: ``error parsing request: <what json says>``, once the
      route's gates let the request through (FastAPI parses the body before it solves the
      dependencies that authenticate the caller);
    - a body that is not a JSON object: ``error parsing request: expected a JSON object,
      got list``; a JSON object sent as another media type: ``error parsing request: send
      the body as application/json``;
    - a validator's ``ValueError``: its text as it is (the request models write the
      protocol's texts whole, naming their fields);
    - pydantic's own errors name the field by its path in the body (``kwargs.timeout``;
      query and header parameters as ``query.after``, ``header.last-event-id``):
      ``<field> is required``, ``<field> must be a string, got int``, ``... must be true or
      false, got "yes"``, ``... must be an object, got list``, ``... must be a list, got
      dict``, else ``<field>: <pydantic's message>``.
    """
    assert isinstance(error, RequestValidationError)  # noqa: S101  # registered for it only
    problems = error.errors()
    body = error.body
    if problems and problems[0].get("type") == "json_invalid":
        try:
            await check_gates(request)
        except MAILError as e:
            return await _mail_error(request, e)
        except HTTPException as e:
            return await http_exception_handler(request, e)
        first = problems[0]  # the only one
        parsed = json.JSONDecodeError(first["ctx"]["error"], body, first["loc"][-1])
        detail = f"error parsing request: {parsed}"
    elif isinstance(body, bytes):  # not sent as JSON: FastAPI did not parse it
        detail = _not_json(body)
    else:
        detail = "; ".join(_problem(p) for p in problems)
    return JSONResponse({"detail": detail}, status_code=400)


def _not_json(raw: bytes) -> str:
    try:
        value = loads(raw)
    except ValueError as e:
        return f"error parsing request: {e}"
    if not isinstance(value, dict):
        return not_an_object(value)
    return "error parsing request: send the body as application/json"


#: pydantic's type errors -> what the field must be, and how its value is shown
_MUST_BE: dict[str, tuple[str, Callable[[Any], str]]] = {
    "string_type": ("a string", lambda v: type(v).__name__),
    "bool_type": ("true or false", lambda v: json.dumps(v, default=repr)),
    "dict_type": ("an object", lambda v: type(v).__name__),
    "list_type": ("a list", lambda v: type(v).__name__),
}


def _problem(problem: Any) -> str:
    kind = problem.get("type")
    if kind == "value_error":
        return str(problem["ctx"]["error"])
    if kind in ("model_type", "model_attributes_type") and tuple(problem["loc"]) == ("body",):
        return not_an_object(problem.get("input"))
    field = _field(problem.get("loc", ()))
    if kind == "missing":
        return f"{field} is required"
    if kind in _MUST_BE:
        must_be, shown = _MUST_BE[kind]
        return f"{field} must be {must_be}, got {shown(problem.get('input'))}"
    limit = _limit(kind, problem.get("ctx") or {}, problem.get("input"))
    if limit is not None:
        return f"{field} {limit}"
    return f"{field or 'request'}: {problem.get('msg', 'invalid')}"


def _limit(kind: Any, ctx: dict[str, Any], value: Any) -> str | None:
    """A limit a string or number broke, in words (``None`` for other problems)."""
    if kind == "string_too_long":
        return f"must be at most {ctx['max_length']} characters, got {len(value)}"
    if kind == "string_pattern_mismatch":
        pattern = ctx["pattern"]
        rule = PATTERN_RULES.get(pattern, f"match {pattern}")
        return f"must be {rule}, got {str(value)[:80]!r}"
    if kind == "finite_number":
        return "must be a finite number"
    return None


def _field(loc: Sequence[str | int]) -> str:
    """``loc`` as a dotted path, without the ``body`` that starts those in the body."""
    parts = tuple(loc)
    return ".".join(str(part) for part in (parts[1:] if parts[:1] == ("body",) else parts))


async def _unexpected(_request: Request, error: Exception) -> JSONResponse:
    logger.exception("unexpected error", exc_info=error)
    return JSONResponse({"detail": "internal server error"}, status_code=500)


class _BodyLimit:
    """Answer 413 to request bodies larger than ``limit()`` bytes, declared or streamed
    (read per request: the configuration may be loaded only when the app starts)."""

    def __init__(self, app: ASGIApp, limit: Callable[[], int]) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit()
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                await _too_large(send, limit)
                return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLargeError(limit)
            return message

        try:
            await self.app(scope, limited, send)
        except _TooLargeError:
            await _too_large(send, limit)


class _TooLargeError(HTTPException):
    """A streamed body over the limit. An ``HTTPException``: FastAPI passes it on when it
    reads the body, and the app's handler for those answers 413 with its detail."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, _too_large_detail(limit))


def _too_large_detail(limit: int) -> str:
    return f"request body is larger than {limit} bytes"


async def _too_large(send: Send, limit: int) -> None:
    body = JSONResponse({"detail": _too_large_detail(limit)}, status_code=413).body
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


#: The route modules; /message first: requests are matched against the routes in this order.
_ROUTES = (
    _routes_message,
    _routes_core,
    _routes_keys,
    _routes_tasks,
    _routes_responses,
    _routes_interswarm,
    _routes_map,
    _routes_metrics,
)


def create_app(
    config: MAILConfig | None = None,
    *,
    template: MAILSwarmTemplate | None = None,
    authenticator: Authenticator | None = None,
    router_settings: RouterSettings | None = None,
    ping_interval: float = 15.0,
    map_auth_deadline: float = 10.0,
    map_max_pending: int = 32,
) -> FastAPI:
    """Build the MAIL HTTP application.

    ``config`` is loaded (``mail.config.load_config``, with the settings ``mail server
    --reload`` passes to its worker) when the app starts if not given; ``template``
    defaults to the configured swarm of the configured ``swarms.json``; ``authenticator``
    to the configured auth mode; ``router_settings`` (timeouts and retries of interswarm
    deliveries) to :class:`~mail.net.RouterSettings`'s defaults with the configured
    ``[server.interswarm] reply_timeout``; ``ping_interval`` is the
    seconds of silence after which event streams send a ``ping``; a ``/map`` WebSocket
    has ``map_auth_deadline`` seconds to authenticate and at most ``map_max_pending``
    requests pending (see :mod:`mail.server._map_socket`). The lifespan owns every
    resource: per-caller runtimes, the idle-runtime sweeper, the registry and the
    interswarm router with their one HTTP session.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = _start(config, template, authenticator, router_settings)
        state.ping_interval = ping_interval
        state.map_auth_deadline, state.map_max_pending = map_auth_deadline, map_max_pending
        state.loop = asyncio.get_running_loop()
        app.state.mail = state
        try:
            await open_cluster(state)
            await state.registry.load()
        except BaseException:
            # close what _start opened (the HTTP session); the unread file stays as it is
            await state.close(save_registry=False)
            raise
        try:
            await _open_store(state)
            _open_metrics(state)
            _open_telemetry(app, state)
            open_conversations(state)
            open_a2a(app, state)  # the swarm as an A2A agent, with the a2a extra
            # the MCP servers' sessions, shared by every caller (already open under
            # `mail server`, which reports a failure as one line: see _serve)
            await state.template.start_mcp()
        except BaseException:
            await state.close(save_registry=False)
            raise
        state.registry.start_health_checks()
        follow_cluster(state, server_status)
        idle = state.config.server.idle_runtime_seconds
        state.spawn(
            every(min(60.0, idle), lambda: state.swarms.evict_idle(idle), "evict-idle"),
            "mail-evict-idle",
        )
        server = state.config.server
        if server.port == 0 and server.base_url is None:
            # the socket is bound after the lifespan starts: uvicorn prints the real port
            logger.info(
                "serving swarm %s on a port the system picks; set BASE_URL for peers",
                state.template.name,
            )
        else:
            logger.info("serving swarm %s at %s", state.template.name, state.base_url)
        try:
            yield
        finally:
            await close_a2a(app)
            await state.close()

    app = FastAPI(
        title="MAIL",
        version=__version__,
        summary="Multi-Agent Interface Layer: send tasks to a swarm of agents and watch them work.",
        lifespan=lifespan,
        # a body without a Content-Type is read as JSON, as before; one declared as another
        # media type is not (see _validation_error)
        strict_content_type=False,
    )
    app.add_exception_handler(MAILError, _mail_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _unexpected)
    for module in _ROUTES:
        app.include_router(module.router)
    mount_ui(app)

    _add_middleware(app)
    return app


def _add_middleware(app: FastAPI) -> None:
    """CORS, the body limit and the stream counter, each reading the configuration the
    lifespan loads (``app.state.mail``)."""

    def server_state() -> ServerState | None:
        state: ServerState | None = getattr(app.state, "mail", None)
        return state

    def cors_origins() -> list[str]:
        state = server_state()
        return list(DEFAULT_CORS_ORIGINS) if state is None else state.config.server.cors_origins

    app.add_middleware(ConfiguredCORS, origins=cors_origins)

    def body_limit() -> int:
        state = server_state()
        return _DEFAULT_BODY_LIMIT if state is None else state.config.server.max_body_bytes

    app.add_middleware(_BodyLimit, limit=body_limit)

    def metrics() -> Metrics | None:
        state = server_state()
        return None if state is None else state.metrics

    app.add_middleware(StreamCounter, metrics=metrics)


def _start(
    config: MAILConfig | None,
    template: MAILSwarmTemplate | None,
    authenticator: Authenticator | None,
    router_settings: RouterSettings | None,
) -> ServerState:
    from mail.server.auth import AuthGate, build_authenticator  # noqa: PLC0415

    config = config or worker_config(os.environ)
    configure_stdlib(config.stdlib)  # the settings of mail.stdlib's actions
    swarm = config.server.swarm
    if template is None:
        template = MAILSwarmTemplate.from_swarm_json_file(
            swarm.name, swarm.source, config.server.settings.task_message_limit
        )
        template.validate()  # the wiring too: a broken swarm fails the start, not a caller
    base_url = config.server.advertised_url
    cluster = Cluster(config, base_url) if config.server.cluster.enabled else None
    if authenticator is None:
        authenticator = authenticator_for(config, cluster)
    if authenticator is None:
        authenticator, banner = build_authenticator(config.auth)
        if banner:
            sys.stderr.write(banner + "\n")
    # one session for every call to peers (registry and router), created by the first such
    # call (no aiohttp import at start-up); closed by the state
    interswarm = config.server.interswarm
    session = SessionSource(
        headers={"User-Agent": f"MAIL-Server/v{PROTOCOL_VERSION}/{template.name}"},
        policy=AddressPolicy(
            allow_networks=interswarm.allow_networks,
            deny_networks=interswarm.deny_networks,
            allow_hosts=interswarm.allow_hosts,
            deny_hosts=interswarm.deny_hosts,
            where="[server.interswarm]",
        ),
    )
    # its entry's version is the protocol's (CONTRACT 8.5)
    registry = registry_class(cluster, swarm.registry)(
        template.name,
        base_url,
        local_swarm_description=template.description,
        local_swarm_keywords=template.keywords,
        local_swarm_public=template.public,
        session=session,
        health_interval=interswarm.health_interval,
        max_backoff=interswarm.health_max_backoff,
    )
    discovery = DiscoveryPolicy(
        enabled=interswarm.agent_discovery, hosts=interswarm.discovery_hosts
    )
    state = ServerState(
        cluster=cluster,
        config=config,
        template=template,
        authenticator=authenticator,
        gate=AuthGate(authenticator, debug=config.server.debug),
        base_url=base_url,
        registry=registry,
        router=InterswarmRouter(
            registry,
            session=session,
            settings=router_settings or RouterSettings(reply_timeout=interswarm.reply_timeout),
            discovery=discovery,
        ),
        session=session,
    )
    state.tasks = task_service(state)  # the one place that picks the mode's task service
    return state


async def _open_store(state: ServerState) -> None:
    """Open the configured task store (none with ``persist = false``) and its prune job."""
    database = state.config.database
    if not database.persist:
        return
    from mail.db import RetentionJob, open_store  # noqa: PLC0415  # only with a store

    state.store = await open_store(database, pool=store_pool(state.cluster))
    logger.info("keeping tasks in the %s store", state.store.backend)
    every = database.prune_every
    if every is not None:
        state.retention = RetentionJob(
            state.store,
            every=every,
            older_than=database.retention_older_than,
            keep_last=database.retention_keep_last,
        )
        state.spawn(state.retention.run(), "mail-prune")


def _open_metrics(state: ServerState) -> None:
    """Start the server's metrics when ``[server.metrics]`` enables them."""
    config = state.config.server.metrics
    if not config.enabled:
        return
    metrics = Metrics(
        state.template.name,
        unsaved=state.swarms.unsaved_tasks,
        queued=state.swarms.queued_messages,
        loop=asyncio.get_running_loop(),
    )
    if state.store is not None:
        metrics.watch_store(state.store)
    metrics.watch_router(state.router)
    metrics.listen(config)
    state.metrics = metrics


def _open_telemetry(app: FastAPI, state: ServerState) -> None:
    """Start the server's traces when ``[server.telemetry]`` or the ``OTEL_*`` variables
    ask for them: the process's tracer provider, the spans of every caller's tasks, and
    the HTTP server spans of FastAPI's instrumentation (the middleware stack is built
    again, with it, for the first request)."""
    from mail.telemetry import check_telemetry, start_server_tracing, telemetry_wanted  # noqa: PLC0415

    if not telemetry_wanted(state.config):
        return
    check_telemetry(state.config)
    telemetry = start_server_tracing(state.config)
    state.telemetry = telemetry
    state.tracing = telemetry.tracing(state.template.name)
    telemetry.instrument(app)
    app.middleware_stack = None


def run_server(config: MAILConfig) -> None:
    """Serve ``config``'s swarm with uvicorn until interrupted (blocks).

    With ``config.server.reload``, uvicorn serves ``mail.server:app`` from a worker process
    it restarts when a Python file under the working directory changes; the worker loads
    the same configuration (see :mod:`mail.server._reload`). While it listens, its address
    is in ``<data_dir>/server.json`` for local clients. Raises
    :class:`~mail.errors.ConfigurationError` when the port is in use and
    :class:`~mail.errors.SwarmDefinitionError` when the configured swarm cannot be loaded.
    """
    server = config.server
    check_port(server.host, server.port)  # one line, before any start-up log
    check_metrics(config)
    check_telemetry(config)
    preflight(config)  # cluster mode: PostgreSQL store, Redis reachable (one line too)
    # Loaded here rather than in the lifespan, so a broken swarm is reported by the CLI
    # as one line instead of a failed startup.
    template = MAILSwarmTemplate.from_swarm_json_file(
        server.swarm.name, server.swarm.source, server.settings.task_message_limit
    )
    template.validate()  # its wiring too (entrypoint, comm targets, who completes tasks)
    _serve(config, template)


def run_server_with_template(  # v1.3.6's positional signature
    template: MAILSwarmTemplate,
    port: int = 8000,
    host: str = "0.0.0.0",  # noqa: S104  # v1.3.6's default, as [server] host's
    task_message_limit: int | None = None,
    print_llm_streams: bool = True,
    *,
    config: MAILConfig | None = None,
    base_url: str | None = None,
) -> None:
    """Serve ``template`` (instead of the configured ``swarms.json`` swarm) until
    interrupted (blocks), as v1.3.6's function of this name does.

    The rest of the configuration (auth, data directory, registry, database) is ``config``,
    else :func:`mail.config.load_config`'s; ``port``, ``host``, ``task_message_limit``
    and ``print_llm_streams`` override its ``[server]`` values (a given
    ``task_message_limit`` also replaces the template's own, on a copy), ``base_url`` its
    advertised URL, and the configured swarm name becomes the template's. ``--reload`` is not offered: a template in memory cannot be
    reloaded from a worker process, so ``server.reload`` is ignored here. Raises
    :class:`~mail.errors.ConfigurationError` when the port is in use and
    :class:`~mail.errors.SwarmDefinitionError` when the template's wiring is broken.
    """
    from mail.config import load_config  # noqa: PLC0415

    base = config or load_config()
    server = base.server
    if task_message_limit is not None:
        template = copy.copy(template)
        template.task_message_limit = task_message_limit
    settings = server.settings.model_copy(update={"print_llm_streams": print_llm_streams})
    if task_message_limit is not None:
        settings = settings.model_copy(update={"task_message_limit": task_message_limit})
    config = base.model_copy(
        update={
            "server": server.model_copy(
                update={
                    "port": port,
                    "host": host,
                    "reload": False,
                    "base_url": base_url if base_url is not None else server.base_url,
                    "settings": settings,
                    "swarm": server.swarm.model_copy(update={"name": template.name}),
                }
            )
        }
    )
    check_port(host, port)
    check_metrics(config)
    check_telemetry(config)
    preflight(config)
    template.validate()
    _serve(config, template)


def _serve(config: MAILConfig, template: MAILSwarmTemplate) -> None:
    import uvicorn  # noqa: PLC0415  # only the server process needs it

    server = config.server
    options = uvicorn_options(config)
    with recorded(server.data_dir, server.host) as listening:
        if server.reload:
            # the worker builds its own app: it inherits this process's environment
            os.environ.update(reload_environment(config))
            if server.port:  # this process holds the port; its workers come and go
                listening(server.port)
            uvicorn.run(APP, **options)
            return
        app = create_app(config, template=template)
        # The imported modules and the app (some 80,000 objects) live as long as the
        # process: frozen, Python's full collections stop walking them again (a full
        # collection every few hundred tasks took ~60 ms; see benchmarks/README.md).
        gc.freeze()
        stopped_by = serve(app, options, on_started=listening, prepare=template.start_mcp)
    if stopped_by is not None:  # server.json is gone: now end as SIGTERM's sender expects
        signal.raise_signal(stopped_by)
