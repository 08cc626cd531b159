"""What an agent's ``discover_swarms`` may make this server fetch (DESIGN.md decision 7).

The tool makes the server GET URLs an agent chose and add what they list to the one
registry every caller shares, so it is bounded:

* only ``http``/``https`` URLs whose host is allowed: a host of ``hosts`` (by default the
  loopback names ``localhost``, ``127.0.0.1`` and ``::1``, any port; an entry
  ``host:port`` allows that port only) or the origin (host and port) of a swarm already
  in the registry, i.e. a peer the operator registered;
* the same rule for the ``base_url`` of every swarm a listing names (others are skipped);
* every fetch times out, reads at most 1 MiB and follows no redirect
  (``mail.net._peer_http``), and at most ``MAX_LISTED`` swarms of one listing are added;
* every connection is checked by the session's address policy (``mail.net._guard``):
  a listing cannot send the server to a link-local or metadata address;
* ``enabled = False`` refuses every call.

The server builds its policy from ``[server.interswarm]`` (``agent_discovery``,
``discovery_hosts``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from mail.errors import AddressRefusedError, ConfigurationError, RemoteSwarmUnavailableError

__all__ = ["LOOPBACK_HOSTS", "MAX_LISTED", "DiscoveryPolicy", "discover"]

logger = logging.getLogger("mail.net.registry")

#: The hosts an agent may discover from unless configured otherwise.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
#: Most swarms registered from one ``GET /swarms`` listing.
MAX_LISTED = 64

_DEFAULT_PORTS = {"http": 80, "https": 443}

Origin = tuple[str, int | None]


def _host(name: str) -> str:
    """``name`` lower-cased; an IP address in its canonical form."""
    name = name.strip().lower()
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


def _parse_entry(entry: str) -> Origin:
    text = entry.strip()
    bad = ConfigurationError(
        f"discovery host {entry!r} must be a host name or address, optionally with :port"
    )
    if not text or any(c in text for c in "/@?# \t"):
        raise bad
    if text.count(":") > 1 and not text.startswith("["):
        return _host(text), None  # a bare IPv6 address
    try:
        parts = urlsplit(f"//{text}")
        host, port = parts.hostname, parts.port
    except ValueError:
        raise bad from None
    if not host:
        raise bad
    return _host(host), port


def _origin(url: str) -> tuple[str, Origin] | str:
    """``(scheme, (host, port))`` of an http(s) URL, or why it is refused."""
    try:
        parts = urlsplit(url.strip())
        scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
    except ValueError:
        return "not a valid URL"
    if scheme not in _DEFAULT_PORTS or not host:
        return "only http:// and https:// URLs are allowed"
    return scheme, (_host(host), port or _DEFAULT_PORTS[scheme])


@dataclass(frozen=True, slots=True)
class DiscoveryPolicy:
    """Which URLs ``discover_swarms`` may fetch (module docstring).

    ``enabled``: False refuses every discovery. ``hosts``: host names or IP addresses,
    optionally ``host:port``, an agent may discover from besides the registered peers.
    Raises :class:`~mail.errors.ConfigurationError` for an entry that is not a host.
    """

    enabled: bool = True
    hosts: tuple[str, ...] = LOOPBACK_HOSTS
    _allowed: frozenset[Origin] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        allowed = frozenset(_parse_entry(entry) for entry in self.hosts)
        object.__setattr__(self, "_allowed", allowed)  # frozen: set once, here

    def refusal(self, url: str, peer_urls: Iterable[str]) -> str | None:
        """Why ``url`` may not be fetched (``None``: it may).

        ``peer_urls`` are the base URLs of the registered swarms, whose origins are allowed.
        """
        if not self.enabled:
            return "swarm discovery is disabled on this server"
        found = _origin(url)
        if isinstance(found, str):
            return found
        _, (host, port) = found
        if (host, None) in self._allowed or (host, port) in self._allowed:
            return None
        for peer in peer_urls:
            known = _origin(peer)
            if not isinstance(known, str) and known[1] == (host, port):
                return None
        return f"host {host}:{port} is neither a registered swarm nor an allowed discovery host"


Listing = list[tuple[str, str, dict[str, Any] | None]]


async def discover(
    urls: Iterable[str],
    *,
    list_swarms: Callable[[str], Awaitable[Listing]],
    is_known: Callable[[str], bool],
    register: Callable[[str, str, dict[str, Any] | None], Awaitable[object]],
    allow_url: Callable[[str], bool] | None,
) -> list[str]:
    """The registry's discovery walk (see ``SwarmRegistry.discover_swarms``)."""
    claimed: set[str] = set()

    async def from_url(url: str) -> list[str]:
        if allow_url is not None and not allow_url(url):
            logger.warning("swarm discovery from %s refused: the URL is not allowed", url)
            return []
        try:
            items = await list_swarms(url)
        except (RemoteSwarmUnavailableError, AddressRefusedError) as e:
            logger.warning("swarm discovery from %s failed: %s", url, e)
            return []
        wanted: Listing = []
        for name, base_url, metadata in items:
            if is_known(name) or name in claimed:
                continue
            if allow_url is not None and not allow_url(base_url):
                logger.warning("discovered swarm %r skipped: %s is not allowed", name, base_url)
                continue
            if len(wanted) == MAX_LISTED:
                logger.warning("%s lists over %d new swarms; the rest skipped", url, MAX_LISTED)
                break
            claimed.add(name)
            wanted.append((name, base_url, metadata))
        added = await asyncio.gather(*(add(*item) for item in wanted))
        names = [name for name in added if name is not None]
        logger.info("discovered %d swarm(s) from %s", len(names), url)
        return names

    async def add(name: str, base_url: str, metadata: dict[str, Any] | None) -> str | None:
        try:
            await register(name, base_url, metadata)
        except (RemoteSwarmUnavailableError, AddressRefusedError) as e:
            logger.warning("discovered swarm %r not registered: %s", name, e)
            return None
        return name

    found = await asyncio.gather(*(from_url(url.strip().rstrip("/")) for url in urls))
    return [name for names in found for name in names]
