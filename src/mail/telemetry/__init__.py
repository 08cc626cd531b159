"""OpenTelemetry traces of tasks (the ``mail[otel]`` extra; docs/observability.md).

Off unless configured: ``[server.telemetry] enabled`` in mail.toml (``MAIL_TELEMETRY``), or
the standard ``OTEL_*`` variables that choose an exporter (``OTEL_TRACES_EXPORTER``,
``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``). This module
decides and checks without importing OpenTelemetry; :mod:`mail.telemetry._otel`, the one
module that knows it, is imported only when traces are on.

``mail server`` makes its own tracer provider (its process is the server's); a program that
embeds a runtime keeps its own and calls :func:`trace_runtime`, which uses the provider the
program set with ``opentelemetry.trace.set_tracer_provider`` (or the one it passes).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mail.errors import ConfigurationError
from mail.telemetry._settings import PROTOCOL_VARIABLES, exporter_name, telemetry_wanted

if TYPE_CHECKING:
    from mail.config import MAILConfig
    from mail.core.runtime import MAILRuntime
    from mail.telemetry._otel import ServerTracing, Tracing

__all__ = [
    "ServerTracing",
    "Tracing",
    "check_telemetry",
    "exporter_name",
    "start_server_tracing",
    "telemetry_wanted",
    "trace_runtime",
]


def load_otel() -> Any:
    """The module that knows OpenTelemetry; :class:`ConfigurationError` naming the extra
    when the SDK is not installed."""
    try:
        from mail.telemetry import _otel  # noqa: PLC0415  # only with traces on
    except ImportError as e:
        raise ConfigurationError(
            "traces ([server.telemetry] or OTEL_* variables) need the OpenTelemetry SDK: "
            "install mail-swarms[otel]"
        ) from e
    return _otel


def check_telemetry(config: MAILConfig, env: Mapping[str, str] | None = None) -> None:
    """Before the server starts: when traces are wanted, the extra is installed and the
    exporter is one ``mail server`` makes, over OTLP/HTTP (:class:`ConfigurationError`,
    one line, otherwise)."""
    env = os.environ if env is None else env
    if not telemetry_wanted(config, env):
        return
    exporter_name(env)
    for name in PROTOCOL_VARIABLES:
        protocol = env.get(name, "").strip().lower()
        if protocol and protocol != "http/protobuf":
            raise ConfigurationError(
                f"{name}={protocol}: mail server sends OTLP over HTTP only; "
                "set it to http/protobuf (collectors listen on port 4318 for it)"
            )
    load_otel()


def start_server_tracing(config: MAILConfig, env: Mapping[str, str] | None = None) -> ServerTracing:
    """The tracing of a ``mail server`` process: its provider, exporter and span
    processor (the process's global provider from then on). Call
    :func:`check_telemetry` first."""
    return load_otel().ServerTracing.start(config, os.environ if env is None else env)  # type: ignore[no-any-return]


def trace_runtime(
    runtime: MAILRuntime, *, tracer_provider: Any = None, capture_content: bool = False
) -> Tracing:
    """Trace the tasks of ``runtime`` (a runtime a program embeds) with
    ``tracer_provider``, by default the provider the program set through OpenTelemetry's
    API (none set: OpenTelemetry's no-op one). ``capture_content`` records the model calls'
    messages and answers on their spans. Needs the ``otel`` extra. The :class:`Tracing`
    returned ends the spans of the task turns still running when closed
    (``tracing.close()``, before the program shuts its provider down)."""
    tracing = load_otel().Tracing(
        tracer_provider=tracer_provider, capture_content=capture_content, swarm=runtime.swarm_name
    )
    tracing.attach(runtime)
    return tracing  # type: ignore[no-any-return]


def __getattr__(name: str) -> Any:
    """``Tracing`` and ``ServerTracing``, loaded with OpenTelemetry when first asked for."""
    if name in ("Tracing", "ServerTracing"):
        return getattr(load_otel(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
