"""The address guard for ``httpx`` clients, blocking (:func:`guarded_client`) and async
(:func:`guarded_async_client`): every connection, redirects included, goes only to
addresses an :class:`~mail.net._guard.AddressPolicy` allows.

The transport's network backend resolves the host itself, checks every address, then
connects to a checked address (the TLS handshake still names the host), so a name cannot
resolve differently between the check and the connection. Environment proxies are not used:
they would make the guard check the proxy instead of the target.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, cast

import httpcore
import httpx

from mail.net._guard import AddressPolicy, AddrInfo, resolve, resolve_sync

__all__ = ["guarded_async_client", "guarded_async_client2", "guarded_client"]

_CONNECT_ERRORS = (httpcore.ConnectError, httpcore.ConnectTimeout)
# httpcore's errors as the async client raises them (the types httpx's own transport uses)
_HTTPX_ERRORS: dict[type[Exception], type[httpx.TransportError]] = {
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.TimeoutException: httpx.TimeoutException,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
    httpcore.NetworkError: httpx.NetworkError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError,
    httpcore.LocalProtocolError: httpx.LocalProtocolError,
    httpcore.ProtocolError: httpx.ProtocolError,
    httpcore.UnsupportedProtocol: httpx.UnsupportedProtocol,
}


@contextmanager
def _httpx_errors() -> Iterator[None]:
    try:
        yield
    except tuple(_HTTPX_ERRORS) as e:
        mapped = next(_HTTPX_ERRORS[kind] for kind in type(e).__mro__ if kind in _HTTPX_ERRORS)
        raise mapped(str(e)) from e


def _addresses(infos: Iterable[AddrInfo]) -> list[str]:
    """The checked addresses to connect to, in the resolver's order, each once."""
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _no_connection(host: str, error: Exception | None) -> Exception:
    return error or httpcore.ConnectError(f"{host} has no address")


class _GuardedBackend(httpcore.SyncBackend):
    def __init__(self, policy: AddressPolicy) -> None:
        self._policy = policy

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        error: Exception | None = None
        # raises AddressRefusedError before any connection when a rule refuses
        for address in _addresses(resolve_sync(host, port, self._policy)):
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except _CONNECT_ERRORS as e:
                error = e
        raise _no_connection(host, error)


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


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors():
            async for chunk in self._stream:
                yield chunk

    async def aclose(self) -> None:
        aclose = getattr(self._stream, "aclose", None)
        if aclose is not None:
            await aclose()


def _core_request(request: httpx.Request, content: Any) -> httpcore.Request:
    return httpcore.Request(
        method=request.method,
        url=httpcore.URL(
            scheme=request.url.raw_scheme,
            host=request.url.raw_host,
            port=request.url.port,
            target=request.url.raw_path,
        ),
        headers=request.headers.raw,
        content=content,
        extensions=request.extensions,
    )


def _response(response: httpcore.Response, stream: Any) -> httpx.Response:
    return httpx.Response(
        status_code=response.status,
        headers=response.headers,
        stream=stream,
        extensions=response.extensions,
    )


class _GuardedTransport(httpx.BaseTransport):
    def __init__(self, policy: AddressPolicy) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl.create_default_context(), network_backend=_GuardedBackend(policy)
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)  # noqa: S101  # a sync client's
        response = self._pool.handle_request(_core_request(request, request.stream))
        assert isinstance(response.stream, Iterable)  # noqa: S101  # a sync pool's
        return _response(response, _Body(response.stream))

    def close(self) -> None:
        self._pool.close()


class _AsyncGuardedTransport(httpx.AsyncBaseTransport):
    def __init__(self, policy: AddressPolicy) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl.create_default_context(),
            network_backend=_AsyncGuardedBackend(policy, httpcore.AnyIOBackend()),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)  # noqa: S101  # an async client's
        with _httpx_errors():
            response = await self._pool.handle_async_request(_core_request(request, request.stream))
        assert isinstance(response.stream, AsyncIterable)  # noqa: S101  # an async pool's
        return _response(response, _AsyncBody(response.stream))

    async def aclose(self) -> None:
        await self._pool.aclose()


def guarded_client(policy: AddressPolicy, *, timeout: float) -> httpx.Client:
    """An ``httpx.Client`` whose connections reach only what ``policy`` allows.

    It follows no redirect (the caller checks each one) and ignores proxy variables. A
    refused address raises :class:`~mail.errors.AddressRefusedError` from the request;
    connection failures raise ``httpcore`` errors (``httpcore.ConnectError``, ...).
    """
    return httpx.Client(
        transport=_GuardedTransport(policy),
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
    )


def guarded_async_client(policy: AddressPolicy, *, timeout: float) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose connections reach only what ``policy`` allows.

    Names are resolved off the event loop (:func:`mail.net._guard.resolve`) and the
    connection is made to a checked address. It follows no redirect (the caller checks
    each one) and ignores proxy variables. A refused address raises
    :class:`~mail.errors.AddressRefusedError` from the request; connection failures raise
    ``httpx`` errors (``httpx.ConnectError``, ``httpx.ConnectTimeout``, ...).
    """
    return httpx.AsyncClient(
        transport=_AsyncGuardedTransport(policy),
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
    )


def guarded_async_client2(
    policy: AddressPolicy, *, timeout: Any, headers: dict[str, str] | None = None
) -> Any:
    """:func:`guarded_async_client` for ``httpx2`` (the fork of httpx the ``mcp`` SDK
    uses): an ``httpx2.AsyncClient`` whose connections reach only what ``policy`` allows,
    following no redirect and ignoring proxy variables. ``timeout`` is an ``httpx2``
    timeout (or seconds). Raises ``ImportError`` without ``httpx2``."""
    import httpcore2  # noqa: PLC0415  # installed with the mcp extra
    import httpx2  # noqa: PLC0415

    transport = httpx2.AsyncHTTPTransport(trust_env=False)
    # httpx2 takes no network backend: its pool is replaced by one built on the guard
    transport._pool = httpcore2.AsyncConnectionPool(
        ssl_context=ssl.create_default_context(),
        network_backend=cast(
            "httpcore2.AsyncNetworkBackend",  # duck-typed: httpcore2's interface is httpcore's
            _AsyncGuardedBackend(
                policy,
                httpcore2.AnyIOBackend(),
                (httpcore2.ConnectError, httpcore2.ConnectTimeout),
            ),
        ),
    )
    return httpx2.AsyncClient(
        transport=transport,
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
        headers=headers,
    )
