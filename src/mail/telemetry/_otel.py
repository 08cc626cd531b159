"""The spans of tasks, agent turns, model calls, actions and hops, with OpenTelemetry.

The one module of the package that imports OpenTelemetry (imported only when traces are
on). :class:`Tracing` is the runtime's :class:`~mail.core.tasks.TurnTracer`: it follows
each caller's tasks (a span per task turn, from the task's start to its end) and opens the
spans the runtime asks for around agent turns, model calls, actions and calls to other
servers, whose ``traceparent`` it writes (W3C, through the propagator API).
:class:`ServerTracing` is what ``mail server`` adds: its tracer provider and exporter, and
the HTTP server spans of FastAPI's instrumentation. docs/observability.md lists the spans.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import context, propagate, trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from mail import _log_format
from mail.core import current_turn
from mail.core.tasks import turn_status
from mail.telemetry._settings import exporter_name
from mail.version import __version__

if TYPE_CHECKING:
    from fastapi import FastAPI

    from mail.config import MAILConfig
    from mail.core.runtime import MAILRuntime
    from mail.core.tasks import ActionRun, MAILTask, ModelCall

__all__ = ["ServerTracing", "Tracing", "current_ids"]

logger = logging.getLogger("mail.server")

#: the instrumentation scope of every span
SCOPE = "mail"
_USAGE = (
    ("input_tokens", "gen_ai.usage.input_tokens"),
    ("output_tokens", "gen_ai.usage.output_tokens"),
)
_CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_TRUE = frozenset({"1", "true", "yes", "on"})


class Tracing:
    """The spans of the tasks of the runtimes it is attached to (:meth:`attach`), made by
    ``tracer_provider`` (``None``: the global one); ``capture_content`` records model
    calls' messages and answers."""

    def __init__(
        self, *, tracer_provider: Any = None, capture_content: bool = False, swarm: str
    ) -> None:
        self.tracer = trace.get_tracer(SCOPE, __version__, tracer_provider=tracer_provider)
        self.capture_content = capture_content
        self.swarm = swarm
        # id(task) -> (task, its turn's span, a context holding that span)
        self._turns: dict[int, tuple[MAILTask, trace.Span, context.Context]] = {}
        _log_format.trace_ids = current_ids

    def attach(self, runtime: MAILRuntime) -> None:
        """Trace the tasks of ``runtime`` from now on."""
        runtime.tasks.observe_tasks(self._task_changed)
        runtime.tasks.trace_turns(self)

    # --- task turns (told by the runtime's task table) ---------------------------------

    def _task_changed(self, task: MAILTask) -> None:
        key = id(task)
        entry = self._turns.get(key)
        if task.is_running:
            if entry is None:
                # the caller's context: the HTTP request that started or continued the
                # task (its server span, itself the child of a peer's traceparent)
                span = self.tracer.start_span(
                    "mail task",
                    kind=SpanKind.INTERNAL,
                    attributes={
                        "mail.swarm": self.swarm,
                        "mail.task.id": task.task_id,
                        "mail.task.turn": task.turn_number,
                    },
                )
                self._turns[key] = (task, span, trace.set_span_in_context(span))
            return
        if entry is None:
            return
        del self._turns[key]
        span = entry[1]
        status = turn_status(task)
        span.set_attribute("mail.task.status", status)
        if status == "failed":
            span.set_status(Status(StatusCode.ERROR, "the task failed"))
        span.end()

    def close(self) -> None:
        """End the spans of the task turns still running (the server or the program
        stops): ``mail.task.status`` ``stopped``, so that they are exported."""
        turns, self._turns = self._turns, {}
        for _task, span, _context in turns.values():
            span.set_attribute("mail.task.status", "stopped")
            span.end()

    def _parent(self, task: MAILTask) -> context.Context | None:
        """The context a span of ``task`` starts in: the current one within one of its
        agent turns (whose span is current, for its model call and actions), else the
        task turn's (a delivery the router runs on its own)."""
        entry = self._turns.get(id(task))
        turn = current_turn()
        if entry is None or (turn is not None and turn[0] == task.task_id):
            return None
        return entry[2]

    # --- what the runtime opens (mail.core.tasks.TurnTracer) ---------------------------

    @contextmanager
    def agent_turn(self, task: MAILTask, agent: str) -> Iterator[object]:
        entry = self._turns.get(id(task))
        span = self.tracer.start_span(
            f"invoke_agent {agent}",
            context=None if entry is None else entry[2],
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                "mail.task.id": task.task_id,
            },
        )
        with _current(span):
            yield span

    @contextmanager
    def model_call(self, task: MAILTask, agent: str, call: ModelCall) -> Iterator[object]:
        model = call.model or "unknown"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.agent.name": agent,
        }
        if call.system:
            attributes["gen_ai.system"] = call.system
        span = self.tracer.start_span(
            f"chat {model}", context=self._parent(task), kind=SpanKind.CLIENT, attributes=attributes
        )
        with _current(span):
            yield span
            self._model_answered(span, call)

    def _model_answered(self, span: trace.Span, call: ModelCall) -> None:
        usage = call.usage or {}
        for key, name in _USAGE:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                span.set_attribute(name, value)
        if call.finish_reasons:
            span.set_attribute("gen_ai.response.finish_reasons", list(call.finish_reasons))
        if self.capture_content:
            if call.messages is not None:
                span.set_attribute("gen_ai.input.messages", _json(call.messages))
            if call.output is not None:
                span.set_attribute("gen_ai.output.messages", _json(call.output))

    @contextmanager
    def action(self, task: MAILTask, agent: str, call: ActionRun) -> Iterator[object]:
        span = self.tracer.start_span(
            f"execute_tool {call.name}",
            context=self._parent(task),
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.call_id,
                "gen_ai.agent.name": agent,
            },
        )
        with _current(span):
            yield span
            if call.status is not None:
                span.set_attribute("mail.action.status", call.status)
            if call.status == "error":
                span.set_status(Status(StatusCode.ERROR, "the action failed"))

    @contextmanager
    def hop(self, task: MAILTask, kind: str, peer: str, operation: str) -> Iterator[dict[str, str]]:
        span = self.tracer.start_span(
            operation,
            context=self._parent(task),
            kind=SpanKind.CLIENT,
            attributes={"mail.hop": kind, "mail.peer": peer, "mail.task.id": task.task_id},
        )
        headers: dict[str, str] = {}
        with _current(span):
            propagate.inject(headers)
            yield headers

    def headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        propagate.inject(headers)
        return headers

    def turn_failed(self, reason: str) -> None:
        # the agent turn's span is the current one: its model call and actions are over
        span = trace.get_current_span()
        span.set_status(Status(StatusCode.ERROR, reason))


@contextmanager
def _current(span: trace.Span) -> Iterator[None]:
    """``span`` is the current span in the block, and ends with it; an exception that
    leaves the block is recorded on it (error status). OpenTelemetry's ``use_span``, for
    the spans of every agent turn: a little less work."""
    token = context.attach(trace.set_span_in_context(span))
    try:
        yield
    except Exception as e:
        span.record_exception(e)
        span.set_status(Status(StatusCode.ERROR, f"{type(e).__name__}: {e}"))
        raise
    finally:
        context.detach(token)
        span.end()


def current_ids() -> tuple[str, str] | None:
    """The trace and span ids (hex) of the current span, for log lines."""
    span_context = trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return None
    return format(span_context.trace_id, "032x"), format(span_context.span_id, "016x")


def _json(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


class ServerTracing:
    """The traces of a ``mail server`` process: its provider (the process's global one),
    batch span processor and exporter."""

    def __init__(self, provider: TracerProvider, capture_content: bool) -> None:
        self.provider = provider
        self.capture_content = capture_content

    @classmethod
    def start(cls, config: MAILConfig, env: Mapping[str, str]) -> ServerTracing:
        settings = config.server.telemetry
        attributes = (
            {}
            if "OTEL_SERVICE_NAME" in env
            else {SERVICE_NAME: settings.service_name or config.server.swarm.name}
        )
        provider = TracerProvider(resource=Resource.create(attributes))
        if exporter_name(env) == "console":
            exporter: Any = ConsoleSpanExporter()
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
                OTLPSpanExporter,
            )

            endpoint = settings.endpoint
            exporter = OTLPSpanExporter(
                endpoint=None if endpoint is None else endpoint.rstrip("/") + "/v1/traces"
            )
        provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        capture = settings.capture_content or env.get(_CAPTURE_VARIABLE, "").lower() in _TRUE
        return cls(provider, capture)

    def tracing(self, swarm: str) -> Tracing:
        """The tracer of a server's runtimes."""
        return Tracing(
            tracer_provider=self.provider, capture_content=self.capture_content, swarm=swarm
        )

    def instrument(self, app: FastAPI) -> None:
        """HTTP server spans for every request of ``app``, reading ``traceparent``."""
        from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor  # noqa: PLC0415

        # not the ASGI messages' own spans (``http receive``, ``http send``)
        FastAPIInstrumentor.instrument_app(
            app, tracer_provider=self.provider, exclude_spans=["receive", "send"]
        )

    def shutdown(self) -> None:
        """Export what is left, then stop."""
        self.provider.shutdown()
