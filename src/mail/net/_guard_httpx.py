"""The address guard for blocking ``httpx`` clients: every connection, redirects included,
goes only to addresses an :class:`~mail.net._guard.AddressPolicy` allows.

The transport's network backend resolves the host itself, checks every address, then
connects to a checked address (the TLS handshake still names the host), so a name cannot
resolve differently between the check and the connection. Environment proxies are not used:
they would make the guard check the proxy instead of the target.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore
import httpx

from mail.net._guard import AddressPolicy, resolve_sync

__all__ = ["guarded_client"]


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
        for *_, sockaddr in resolve_sync(host, port, self._policy):
            try:
                return super().connect_tcp(
                    str(sockaddr[0]), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as e:
                error = e
        raise error or httpcore.ConnectError(f"{host} has no address")


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class _GuardedTransport(httpx.BaseTransport):
    def __init__(self, policy: AddressPolicy) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl.create_default_context(), network_backend=_GuardedBackend(policy)
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)  # noqa: S101  # a sync client's
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        response = self._pool.handle_request(core)
        assert isinstance(response.stream, Iterable)  # noqa: S101  # a sync pool's
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response.stream),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()


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
