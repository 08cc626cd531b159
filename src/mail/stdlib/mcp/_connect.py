"""Connecting to MCP servers with the ``mcp`` SDK (loaded here, on first use).

Every HTTP client of the MCP code is made by :func:`http_client`: the URLs come from
LLMs and swarm definitions, so that one function is where the outbound guard applies.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from mail.core import trace_headers
from mail.errors import ConfigurationError

if TYPE_CHECKING:
    import httpx2
    from mcp.client.client import Client

    from mail.net import AddressPolicy

__all__ = [
    "describe_error",
    "http_client",
    "open_client",
    "require_sdk",
    "stdio_command",
    "trace_meta",
]

_MISSING = "the MCP support needs the mcp package: pip install 'mail-swarms[mcp]'"


def require_sdk() -> None:
    """Raise :class:`ConfigurationError` naming the extra when ``mcp`` is not installed."""
    try:
        import mcp.client.client  # noqa: F401, PLC0415  # the optional SDK
    except ImportError as e:
        raise ConfigurationError(_MISSING) from e


def http_client(
    *,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    policy: AddressPolicy | None = None,
) -> httpx2.AsyncClient:
    """The HTTP client of one MCP connection: ``timeout`` seconds, no redirects followed
    (the SDK itself follows same-origin ones only), ``headers`` on every request. With a
    ``policy`` (URLs an LLM chose), every connection goes only to addresses it allows
    (:func:`mail.net.guarded_async_client2`)."""
    import httpx2  # noqa: PLC0415  # the SDK's HTTP library

    from mail.net import guarded_async_client2  # noqa: PLC0415  # imports httpx

    limits = httpx2.Timeout(timeout, read=max(timeout, 60.0))
    if policy is not None:
        client: httpx2.AsyncClient = guarded_async_client2(
            policy, timeout=limits, headers=dict(headers or {})
        )
        return client
    return httpx2.AsyncClient(timeout=limits, follow_redirects=False, headers=dict(headers or {}))


def stdio_command(command: str) -> str:
    """``python``/``python3`` mean this process's interpreter (a demo works in any venv)."""
    return sys.executable if command in ("python", "python3") else command


@asynccontextmanager
async def open_client(
    *,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    command: str | None = None,
    args: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    timeout: float = 30.0,
    policy: AddressPolicy | None = None,
) -> AsyncIterator[Client]:
    """A connected, initialised ``mcp.Client``: over streamable HTTP to ``url`` (through
    the address ``policy`` when given), or over stdio to ``command``. Raises :class:`ConfigurationError` without the SDK; the SDK's
    and the transports' errors otherwise (see :func:`describe_error`)."""
    require_sdk()
    from mcp.client.client import Client  # noqa: PLC0415
    from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: PLC0415
    from mcp.client.streamable_http import streamable_http_client  # noqa: PLC0415

    transport: Any
    if url is not None:
        async with http_client(timeout=timeout, headers=headers, policy=policy) as client:
            transport = streamable_http_client(url, http_client=client)
            async with Client(transport, read_timeout_seconds=timeout, cache=None) as session:
                yield session
        return
    if command is None:
        raise ConfigurationError("an MCP server needs a url or a command")
    params = StdioServerParameters(
        command=stdio_command(command), args=list(args), env=dict(env or {}) or None, cwd=cwd
    )
    transport = stdio_client(params)
    async with Client(transport, read_timeout_seconds=timeout, cache=None) as session:
        yield session


def describe_error(error: BaseException) -> str:
    """One line for an error of the SDK or a transport (an exception group's first leaf)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = " ".join(str(error).split())
    if isinstance(error, TimeoutError):
        return "timed out"
    name = type(error).__name__
    if not text:
        return name
    if name in ("MCPError", "McpError"):
        return text
    return f"{name}: {text}"


def trace_meta() -> dict[str, Any]:
    """``call_tool``'s keyword for a traced turn: the current span's ``traceparent`` in the
    request's ``_meta`` (MCP carries trace context there); nothing otherwise."""
    headers = trace_headers()
    return {"meta": headers} if headers else {}
