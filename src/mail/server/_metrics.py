"""The server's Prometheus metrics (``[server.metrics]``, the ``mail[metrics]`` extra).

One :class:`Metrics` per server, with a registry of its own (never prometheus_client's
process-wide one). It observes what already happens rather than being called from the
runtime: each caller's runtime tells it of task changes, appended events, agent turns and
model calls (:meth:`Metrics.attach`), the store of each write it makes, the interswarm
router of each delivery, and :class:`StreamCounter` of the event streams and WebSockets
the server holds open. docs/observability.md lists every metric.

prometheus_client is imported here only, when metrics are enabled.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mail.core.budget import LIMITS
from mail.core.events import EventLog, EventName
from mail.core.tasks import MAILTask, turn_status
from mail.errors import ConfigurationError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from mail.config import MAILConfig
    from mail.config.server import MetricsConfig
    from mail.core.runtime import MAILRuntime
    from mail.db import TaskStore
    from mail.db.store import CallerKey
    from mail.net import InterswarmRouter

__all__ = ["Metrics", "StreamCounter", "check_metrics", "load_prometheus"]

logger = logging.getLogger("mail.server")

#: The token counts of a task's ``usage``, as the ``kind`` label of ``mail_llm_tokens_total``.
_TOKEN_KINDS = {
    "input_tokens": "input",
    "output_tokens": "output",
    "reasoning_tokens": "reasoning",
    "cached_input_tokens": "cached_input",
}
#: Buckets (seconds) of the turn and agent-turn durations: agents take seconds to minutes.
_TURN_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, float("inf"))
#: Buckets (seconds) of the store's writes.
_WRITE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, float("inf"))
#: The ``action`` label of an action this server's swarm does not define (names an agent
#: invented would make a label value each)
_UNKNOWN = "(unknown)"
#: How long a scrape on the separate listener waits for the event loop's figures.
_SCRAPE_TIMEOUT = 5.0


def load_prometheus() -> Any:
    """The ``prometheus_client`` module; :class:`ConfigurationError` naming the extra when
    it is not installed."""
    try:
        import prometheus_client  # noqa: PLC0415  # only with metrics enabled
    except ImportError as e:
        raise ConfigurationError(
            "[server.metrics] enabled needs prometheus-client: install mail-swarms[metrics]"
        ) from e
    return prometheus_client


def check_metrics(config: MAILConfig) -> None:
    """Before the server starts: the extra is installed and the separate listener's
    address is free (:class:`ConfigurationError`, one line, otherwise)."""
    from mail.server._listen import check_port  # noqa: PLC0415

    metrics = config.server.metrics
    if metrics.enabled:
        load_prometheus()
        if metrics.port is not None:
            try:
                check_port(metrics.host, metrics.port)
            except ConfigurationError as e:
                raise ConfigurationError(
                    f"[server.metrics] cannot listen on {metrics.host}:{metrics.port} (in use, "
                    "or not an address of this machine): choose another port or host "
                    "(MAIL_METRICS_PORT)"
                ) from e


class Metrics:
    """The counters of one server (``swarm`` labels them); ``unsaved`` counts the tasks
    that wait to be stored and ``queued`` the messages that wait to be routed, read at each
    scrape on the event loop ``loop``."""

    def __init__(
        self,
        swarm: str,
        *,
        unsaved: Callable[[], int],
        queued: Callable[[], int],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        prometheus = load_prometheus()
        self.swarm = swarm
        self.registry = prometheus.CollectorRegistry()
        self._prometheus = prometheus
        self._loop = loop
        self._unsaved = unsaved
        self._queued = queued
        # (role, caller id, task id) -> when its running turn started
        self._running: dict[tuple[str, str, str], float] = {}
        self._listener: Any = None
        self._define(prometheus)

    def _define(self, p: Any) -> None:
        r = self.registry
        self.started = p.Counter("mail_tasks_started", "Task turns started", ["swarm"], registry=r)
        self.finished = p.Counter(
            "mail_tasks_finished", "Task turns ended, by status", ["swarm", "status"], registry=r
        )
        self.turn_seconds = p.Histogram(
            "mail_task_duration_seconds",
            "Seconds from a task turn's start to its end",
            ["swarm", "status"],
            buckets=_TURN_BUCKETS,
            registry=r,
        )
        self.running = p.Gauge(
            "mail_tasks_running", "Tasks with a turn running", ["swarm"], registry=r
        )
        self.agent_seconds = p.Histogram(
            "mail_agent_turn_duration_seconds",
            "Seconds an agent function took for one turn",
            ["swarm", "agent"],
            buckets=_TURN_BUCKETS,
            registry=r,
        )
        self.llm_calls = p.Counter(
            "mail_llm_calls", "Model calls that reported token usage", ["model"], registry=r
        )
        self.llm_tokens = p.Counter(
            "mail_llm_tokens", "Tokens reported by model calls", ["model", "kind"], registry=r
        )
        self.actions = p.Counter(
            "mail_action_calls", "Action calls run", ["swarm", "action"], registry=r
        )
        self.action_errors = p.Counter(
            "mail_action_errors",
            "Action calls refused or whose action raised",
            ["swarm", "action"],
            registry=r,
        )
        self.streams = p.Gauge(
            "mail_streams_open", "Event streams and WebSockets open", ["kind"], registry=r
        )
        self.store_seconds = p.Histogram(
            "mail_store_commit_seconds",
            "Seconds each write of task changes to the store took",
            buckets=_WRITE_BUCKETS,
            registry=r,
        )
        unsaved = p.Gauge("mail_tasks_unsaved", "Tasks with changes not stored yet", registry=r)
        unsaved.set_function(lambda: self._read(self._unsaved))
        queued = p.Gauge(
            "mail_queue_depth", "Messages waiting in the runtimes' queues to be routed", registry=r
        )
        queued.set_function(lambda: self._read(self._queued))
        self.deliveries = p.Counter(
            "mail_interswarm_deliveries",
            "Messages sent to peer swarms, by peer and outcome",
            ["peer", "outcome"],
            registry=r,
        )
        self.budget_stops = p.Counter(
            "mail_budget_stops",
            "Tasks stopped for spending past a limit of their budget, by limit",
            ["swarm", "limit"],
            registry=r,
        )
        for kind in ("sse", "websocket"):
            self.streams.labels(kind)
        # the children updated on every task and turn, looked up once (labels() takes a lock)
        self._started_here = self.started.labels(self.swarm)
        self._running_here = self.running.labels(self.swarm)
        self._agent_turns: dict[str, Any] = {}

    # --- what the server hands over ---------------------------------------------------

    def attach(self, runtime: MAILRuntime, key: CallerKey) -> None:
        """Observe the tasks of ``runtime``, the caller ``key``'s."""
        known = frozenset(runtime.actions)
        runtime.tasks.observe_tasks(lambda task: self._task_changed(runtime, key, task))
        runtime.tasks.observe(lambda log: self._event(known, log))
        runtime.tasks.observe_turns(self)

    def watch_store(self, store: TaskStore) -> None:
        store.on_write = self.store_seconds.observe

    def watch_router(self, router: InterswarmRouter) -> None:
        def delivered(peer: str, outcome: str) -> None:
            # an address an agent wrote names no peer of its own unless it is registered
            known = router.registry.get_swarm_endpoint(peer) is not None
            self.deliveries.labels(peer if known else _UNKNOWN, outcome).inc()

        router.on_delivery = delivered

    def exposition(self) -> bytes:
        """The metrics in the Prometheus text format."""
        return bytes(self._prometheus.generate_latest(self.registry))

    @property
    def content_type(self) -> str:
        return str(self._prometheus.CONTENT_TYPE_LATEST)

    # --- observers (on the event loop; cheap, never raising) ---------------------------

    def _task_changed(self, runtime: MAILRuntime, key: CallerKey, task: MAILTask) -> None:
        ident = (key.role, key.id, task.task_id)
        started = self._running.get(ident)
        if task.is_running:
            if started is None:
                self._running[ident] = time.monotonic()
                self._started_here.inc()
                self._running_here.inc()
            return
        if started is None:
            return
        del self._running[ident]
        self._running_here.dec()
        if runtime.stopping:  # the server stops: the turn is not over, nor counted
            return
        status = turn_status(task)
        self.finished.labels(self.swarm, status).inc()
        self.turn_seconds.labels(self.swarm, status).observe(time.monotonic() - started)

    def _event(self, known: frozenset[str], log: EventLog) -> None:
        event = log.since(log.last_seq - 1)[0]
        name = event.event
        if name == EventName.ACTION_CALL:
            self.actions.labels(self.swarm, _action(known, event.extra_data)).inc()
        elif name == EventName.ACTION_ERROR or (
            name == EventName.ACTION_COMPLETE and event.extra_data.get("status") == "error"
        ):
            self.action_errors.labels(self.swarm, _action(known, event.extra_data)).inc()
        elif name == EventName.TASK_ERROR and "budget" in event.extra_data:
            limit = event.extra_data["budget"].get("limit")
            if limit in LIMITS:  # a label value per limit, never one a payload invented
                self.budget_stops.labels(self.swarm, limit).inc()

    def agent_turn(self, task: MAILTask, agent: str, seconds: float) -> None:
        child = self._agent_turns.get(agent)
        if child is None:
            child = self._agent_turns[agent] = self.agent_seconds.labels(self.swarm, agent)
        child.observe(seconds)

    def model_call(
        self, task: MAILTask, agent: str, model: str | None, usage: Mapping[str, object]
    ) -> None:
        label = model or "(unknown)"
        self.llm_calls.labels(label).inc()
        for key, kind in _TOKEN_KINDS.items():
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                self.llm_tokens.labels(label, kind).inc(value)

    def _read(self, count: Callable[[], int]) -> float:
        """``count()`` of the runtimes, read on the event loop (a scrape of the separate
        listener runs in its thread)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            return float(count())
        if self._loop.is_closed():
            return 0.0
        future = asyncio.run_coroutine_threadsafe(_now(count), self._loop)
        return float(future.result(timeout=_SCRAPE_TIMEOUT))

    # --- the separate listener ---------------------------------------------------------

    def listen(self, config: MetricsConfig) -> None:
        """Serve the metrics without a key at ``config.host:config.port`` (a thread of
        prometheus_client's); :class:`ConfigurationError` when the address is taken."""
        if config.port is None:
            return
        try:
            self._listener = self._prometheus.start_http_server(
                config.port, addr=config.host, registry=self.registry
            )
        except OSError as e:
            raise ConfigurationError(
                f"[server.metrics] cannot listen on {config.host}:{config.port}: {e.strerror}"
            ) from e
        logger.info("serving metrics at http://%s:%d/metrics", config.host, config.port)

    async def close(self) -> None:
        """Stop the separate listener, if any, and wait for its thread."""
        listener, self._listener = self._listener, None
        if listener is not None:
            server, thread = listener
            await asyncio.to_thread(_stop, server, thread)


async def _now(count: Callable[[], int]) -> int:
    return count()


def _stop(server: Any, thread: threading.Thread) -> None:
    server.shutdown()
    server.server_close()
    thread.join()


def _action(known: frozenset[str], extra: Mapping[str, Any]) -> str:
    name = extra.get("tool_name")
    return name if isinstance(name, str) and name in known else _UNKNOWN


class StreamCounter:
    """ASGI middleware counting the event streams (``text/event-stream`` responses) and
    WebSockets open, in the metrics ``metrics()`` returns (``None``: metrics are off)."""

    def __init__(self, app: ASGIApp, metrics: Callable[[], Metrics | None]) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        metrics = self.metrics() if scope["type"] in ("http", "websocket") else None
        if metrics is None:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            sockets = metrics.streams.labels("websocket")
            sockets.inc()
            try:
                await self.app(scope, receive, send)
            finally:
                sockets.dec()
            return
        streaming = False

        async def sending(message: Message) -> None:
            nonlocal streaming
            if message["type"] == "http.response.start" and _is_stream(message):
                streaming = True
                metrics.streams.labels("sse").inc()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            if streaming:
                metrics.streams.labels("sse").dec()


def _is_stream(message: Message) -> bool:
    return any(
        name == b"content-type" and value.startswith(b"text/event-stream")
        for name, value in message.get("headers", ())
    )
