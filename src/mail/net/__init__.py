"""Federation: the swarm registry and the interswarm router.

``SwarmRegistry`` knows the local swarm and its peers, persists the persistent ones with
tokens as ``${SWARM_AUTH_TOKEN_<NAME>}`` references, checks their health and discovers
more from peers' ``GET /swarms`` (see ``docs/registry.md``). ``InterswarmRouter`` delivers
messages addressed to ``agent@other-swarm`` over HTTP and reports failures to the agent
that sent them (see ``docs/interswarm.md``); its ``DiscoveryPolicy`` bounds what an agent's
``discover_swarms`` may make the server fetch. An ``AddressPolicy`` given to a
``SessionSource`` decides which addresses peers may have (``docs/security.md``); the
``httpx`` clients :func:`guarded_async_client` and :func:`guarded_async_client2` connect
only where an ``AddressPolicy`` allows (they load ``httpx`` on first access, not with this
package).

:func:`fetch` (async) and :func:`fetch_blocking` fetch a URL someone else chose under a
:class:`FetchPolicy`: allowed schemes, every redirect checked again, every connection
under an ``AddressPolicy``, one deadline and a size cap; failures are :class:`FetchError`
subclasses (and ``mail.errors.AddressRefusedError``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mail.net._discovery import DiscoveryPolicy
from mail.net._fetch import (
    Fetched,
    FetchError,
    FetchFailedError,
    FetchPolicy,
    FetchTimeoutError,
    InvalidURLError,
    ResponseTooLargeError,
    TooManyRedirectsError,
    URLRefusedError,
    fetch,
    fetch_blocking,
)
from mail.net._guard import AddressPolicy
from mail.net._session import SessionSource
from mail.net.registry import SwarmEndpoint, SwarmRegistry
from mail.net.router import InterswarmRouter, RouterSettings

if TYPE_CHECKING:
    from mail.net._guard_httpx import guarded_async_client, guarded_async_client2

__all__ = [
    "AddressPolicy",
    "DiscoveryPolicy",
    "FetchError",
    "FetchFailedError",
    "FetchPolicy",
    "FetchTimeoutError",
    "Fetched",
    "InterswarmRouter",
    "InvalidURLError",
    "ResponseTooLargeError",
    "RouterSettings",
    "SessionSource",
    "SwarmEndpoint",
    "SwarmRegistry",
    "TooManyRedirectsError",
    "URLRefusedError",
    "fetch",
    "fetch_blocking",
    "guarded_async_client",
    "guarded_async_client2",
]

# Loaded on first access: they import httpx.
_LAZY = {
    "guarded_async_client": "mail.net._guard_httpx",
    "guarded_async_client2": "mail.net._guard_httpx",
}

# Hidden from type checkers, which see the TYPE_CHECKING import above instead.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'mail.net' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
