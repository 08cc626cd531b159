"""When ``mail server`` traces, and with which exporter: read from the configuration and
the ``OTEL_*`` variables, without importing OpenTelemetry."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from mail.errors import ConfigurationError

if TYPE_CHECKING:
    from mail.config import MAILConfig

__all__ = ["EXPORTERS", "PROTOCOL_VARIABLES", "exporter_name", "telemetry_wanted"]

_TRUE = frozenset({"1", "true", "yes", "on"})
#: the exporters ``mail server`` makes (``OTEL_TRACES_EXPORTER``)
EXPORTERS = ("otlp", "console")
_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")


def telemetry_wanted(config: MAILConfig, env: Mapping[str, str] | None = None) -> bool:
    """Whether ``mail server`` traces: ``[server.telemetry] enabled``, or an ``OTEL_*``
    variable that chooses an exporter; ``OTEL_SDK_DISABLED=true`` and
    ``OTEL_TRACES_EXPORTER=none`` turn them off."""
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() in _TRUE:
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    if config.server.telemetry.enabled:
        return True
    return bool(exporter) or any(env.get(name, "").strip() for name in _ENDPOINT_VARIABLES)


def exporter_name(env: Mapping[str, str] | None = None) -> str:
    """The exporter ``OTEL_TRACES_EXPORTER`` names (``otlp`` by default);
    :class:`ConfigurationError` for one ``mail server`` does not make."""
    env = os.environ if env is None else env
    names = [n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",")]
    names = [n for n in names if n] or ["otlp"]
    if len(names) > 1 or names[0] not in EXPORTERS:
        raise ConfigurationError(
            f"OTEL_TRACES_EXPORTER={env.get('OTEL_TRACES_EXPORTER')!s}: mail server exports "
            f"traces with one of {', '.join(EXPORTERS)} (or none)"
        )
    return names[0]
