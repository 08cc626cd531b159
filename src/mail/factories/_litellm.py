"""LiteLLM, imported on first use and made to behave like a library: its bundled model-cost
map (no network at import), no "Give Feedback" banners, and its per-call INFO lines off.

LiteLLM attaches its own stream handler to its loggers and lets records propagate too, so
under an application that configures logging (``mail server``) every call was printed
twice, with blank lines, at INFO. Unless ``LITELLM_LOG`` asks for a level, its loggers are
set to WARNING before the first import (it logs while loading), and its own handler is
taken off after it (records reach the application's handlers once); the agents log one
DEBUG line per call instead.
"""

from __future__ import annotations

import importlib
import logging
import os
import socket
from typing import Any

from mail.errors import ConfigurationError

__all__ = ["import_litellm", "connection_url", "unreachable"]

_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
_configured = False


def import_litellm() -> Any:
    """Import LiteLLM (configured as the module docstring says, once per process).

    Raises :class:`ConfigurationError` when it is not installed."""
    global _configured  # noqa: PLW0603  # one process-wide import, configured once
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    explicit_level = "LITELLM_LOG" in os.environ
    if not _configured and not explicit_level:  # before the import: it logs while loading
        for name in _LITELLM_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)
    try:
        litellm: Any = importlib.import_module("litellm")
    except ImportError as e:
        raise ConfigurationError(
            "LLM agents need the 'litellm' package, a dependency of mail-swarms that is "
            "missing from this environment: pip install litellm"
        ) from e
    if not _configured:
        _configured = True
        litellm.suppress_debug_info = True
        _remove_own_handlers()
    return litellm


def _remove_own_handlers() -> None:
    for name in _LITELLM_LOGGERS:
        log = logging.getLogger(name)
        for handler in list(log.handlers):
            if type(handler).__module__.startswith("litellm"):
                log.removeHandler(handler)


def _request_url(error: BaseException) -> str | None:
    try:  # httpx raises RuntimeError when an exception carries no request
        request = getattr(error, "request", None)
    except RuntimeError:
        return None
    url = getattr(request, "url", None)
    return str(url) if url else None


def connection_url(error: BaseException) -> str | None:
    """The URL a failed connection tried, or None when ``error`` is no connection failure.

    LiteLLM's own exception names a placeholder URL; the cause chain holds the
    transport's error (httpx or openai) with the request that failed."""
    seen: set[int] = set()
    current: BaseException | None = error
    found: str | None = None
    connection = False
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionError) or "Connect" in type(current).__name__:
            connection = True
            found = found or _request_url(current)
        current = current.__cause__ or current.__context__
    return found if connection else None


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the address cannot be reached at all: its cause chain holds a
    refused connection or a host name that does not resolve (not a timeout, a reset or an
    HTTP status, which may pass)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError | socket.gaierror):
            return True
        current = current.__cause__ or current.__context__
    return False
