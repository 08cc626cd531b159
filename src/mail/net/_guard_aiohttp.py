"""An :class:`~mail.net._guard.AddressPolicy` applied to every connection of an ``aiohttp``
session, redirects included (imported with ``aiohttp``, on the first peer call).

``aiohttp`` asks the connector's resolver for every host name it connects to, and never
for an IP address written in the URL. So the policy is applied three times: a middleware
judges each request's host by its name before ``aiohttp`` reads it (:func:`host_check`:
``aiohttp`` refuses a numeric spelling of an IPv4 address such as ``2852039166`` as a
URL error of its own, and the policy's answer is the one that names the rule); the
resolver refuses a name, or any address it resolves to, before anything is connected (the
message names the host); the socket factory refuses an address when its socket is about to
be made, which covers addresses written in URLs (and in ``Location`` headers).
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

if TYPE_CHECKING:
    from aiohappyeyeballs import AddrInfoType
    from aiohttp import ClientHandlerType, ClientMiddlewareType, ClientRequest, ClientResponse

    from mail.net._guard import AddressPolicy

__all__ = ["guarded_connector", "host_check"]


class _GuardedResolver(AbstractResolver):
    """The threaded resolver (``getaddrinfo``, as the OS resolves), then the policy."""

    def __init__(self, policy: AddressPolicy, exempt: set[str]) -> None:
        self._policy = policy
        self._inner = aiohttp.ThreadedResolver()
        self._exempt = exempt

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self._policy.check_host(host)
        results = await self._inner.resolve(host, port, family)
        addresses = [result["host"] for result in results]
        self._policy.check(host, addresses)
        if self._policy.host_allowed(host):
            # an allowed name may resolve where the address rules would not go
            self._exempt.update(addresses)
        return results

    async def close(self) -> None:
        await self._inner.close()


def guarded_connector(policy: AddressPolicy) -> aiohttp.TCPConnector:
    """A connector whose every connection ``policy`` allows; a refusal raises
    :class:`~mail.errors.AddressRefusedError` from the request."""
    exempt: set[str] = set()

    def make_socket(info: AddrInfoType) -> socket.socket:
        family, kind, proto, _, sockaddr = info
        if sockaddr[0] not in exempt:
            policy.check_address(sockaddr[0])
        return socket.socket(family, kind, proto)

    return aiohttp.TCPConnector(
        resolver=_GuardedResolver(policy, exempt), socket_factory=make_socket
    )


def host_check(policy: AddressPolicy) -> ClientMiddlewareType:
    """A client middleware that refuses each request (redirects included) whose host
    ``policy`` refuses by its name alone (:meth:`~mail.net._guard.AddressPolicy.check_host`:
    denied names, metadata names, numeric spellings of refused addresses); raises
    :class:`~mail.errors.AddressRefusedError` before ``aiohttp`` reads the host."""

    async def check(request: ClientRequest, handler: ClientHandlerType) -> ClientResponse:
        host = request.url.raw_host
        if host is not None:
            policy.check_host(host)
        return await handler(request)

    return check
