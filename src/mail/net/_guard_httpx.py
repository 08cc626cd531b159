"""The address guard for async ``httpx`` clients (:func:`guarded_async_client`, and
:func:`guarded_async_client2` for the ``httpx2`` fork): every connection, redirects
included, goes only to addresses an :class:`~mail.net._guard.AddressPolicy` allows.
:func:`mail.net.fetch` builds on it.

The transport's network backend resolves the host itself, checks every address, then
connects to a checked address (the TLS handshake still names the host), so a name cannot
resolve differently between the check and the connection. Environment proxies are not used:
they would make the guard check the proxy instead of the target.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from mail.net._guard import AddressPolicy, AddrInfo, resolve

__all__ = ["guarded_async_client", "guarded_async_client2"]

_CONNECT_ERRORS = (httpcore.ConnectError, httpcore.ConnectTimeout)


def _addresses(infos: Iterable[AddrInfo]) -> list[str]:
    """The checked addresses to connect to, in the resolver's order, each once."""
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _no_connection(host: str, error: Exception | None) -> Exception:
    return error or httpcore.ConnectError(f"{host} has no address")


class _AsyncGuardedBackend(httpcore.AsyncNetworkBackend):
    """An async network backend of ``httpcore`` (or its fork ``httpcore2``) that connects
    through ``inner`` only to checked addresses; ``connect_errors`` are ``inner``'s
    connection failures, after which the next address is tried."""

    def __init__(
        self,
        policy: AddressPolicy,
        inner: Any,
        connect_errors: tuple[type[Exception], ...] = _CONNECT_ERRORS,
    ) -> None:
        self._policy = policy
        self._inner = inner
        self._connect_errors = connect_errors

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> Any:
        error: Exception | None = None
        # raises AddressRefusedError before any connection when a rule refuses
        for address in _addresses(await resolve(host, port, self._policy)):
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except self._connect_errors as e:
                error = e
        raise _no_connection(host, error)

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
        return await self._inner.connect_unix_socket(*args, **kwargs)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _guarded(transport: Any, pool: Any) -> Any:
    """``transport`` (httpx's own, or its fork's) with its connection pool replaced by
    ``pool``, whose network backend is a guarded one: httpx takes no network backend, so
    the pool it would have built is swapped for one that does. The transport keeps
    mapping ``httpcore`` errors to ``httpx`` ones."""
    transport._pool = pool  # the one place httpx's pool is set
    return transport


def _guarded_async(
    httpx_module: Any, httpcore_module: Any, policy: AddressPolicy, **client: Any
) -> Any:
    """An async client of ``httpx_module`` (``httpx`` or ``httpx2``) over a pool of
    ``httpcore_module`` whose connections go through :class:`_AsyncGuardedBackend`."""
    backend = _AsyncGuardedBackend(
        policy,
        httpcore_module.AnyIOBackend(),
        (httpcore_module.ConnectError, httpcore_module.ConnectTimeout),
    )
    pool = httpcore_module.AsyncConnectionPool(
        ssl_context=ssl.create_default_context(), network_backend=backend
    )
    transport = _guarded(httpx_module.AsyncHTTPTransport(trust_env=False), pool)
    return httpx_module.AsyncClient(
        transport=transport, follow_redirects=False, trust_env=False, **client
    )


def guarded_async_client(policy: AddressPolicy, *, timeout: float) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose connections reach only what ``policy`` allows.

    Names are resolved off the event loop (:func:`mail.net._guard.resolve`) and the
    connection is made to a checked address. It follows no redirect (the caller checks
    each one) and ignores proxy variables. A refused address raises
    :class:`~mail.errors.AddressRefusedError` from the request; connection failures raise
    ``httpx`` errors (``httpx.ConnectError``, ``httpx.ConnectTimeout``, ...).
    """
    client: httpx.AsyncClient = _guarded_async(httpx, httpcore, policy, timeout=timeout)
    return client


def guarded_async_client2(
    policy: AddressPolicy, *, timeout: Any, headers: dict[str, str] | None = None
) -> Any:
    """:func:`guarded_async_client` for ``httpx2`` (the fork of httpx the ``mcp`` SDK
    uses): an ``httpx2.AsyncClient`` whose connections reach only what ``policy`` allows,
    following no redirect and ignoring proxy variables. ``timeout`` is an ``httpx2``
    timeout (or seconds). Raises ``ImportError`` without ``httpx2``."""
    import httpcore2  # noqa: PLC0415  # installed with the mcp extra
    import httpx2  # noqa: PLC0415

    return _guarded_async(httpx2, httpcore2, policy, timeout=timeout, headers=headers)
