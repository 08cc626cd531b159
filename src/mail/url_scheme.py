"""``swarm://`` links (v1.3.6's ``mail.url_scheme``): ``swarm://connect?server=HOST&token=KEY``
and ``swarm://invite?...``, as ``mail client`` and the registered URL handler read them."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

__all__ = ["SWARM_SCHEME", "SwarmURL", "is_loopback", "parse_swarm_url"]

SWARM_SCHEME = "swarm"
_LINK_KINDS = ("connect", "invite")


@dataclass(frozen=True, slots=True)
class SwarmURL:
    """A parsed ``swarm://`` link: ``action`` (``connect`` or ``invite``), the ``server`` as
    given, the ``token`` (``None``: none) and the ``base_url`` to connect to."""

    action: str
    server: str
    token: str | None
    base_url: str


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` names this machine (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    if not host:
        return False
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_swarm_url(url: str) -> SwarmURL:
    """``swarm://connect?server=HOST[:PORT]&token=KEY`` (or ``swarm://invite?...``) as a
    :class:`SwarmURL` whose ``base_url`` is ``https://HOST[:PORT]``, or ``http://`` for a
    loopback host.

    A ``server`` that already has a scheme (``http://...``) is kept as it is.
    Raises ``ValueError`` for another kind of link or a missing ``server``.
    """
    parts = urlsplit(url)
    kind = parts.netloc or parts.path.strip("/")
    if parts.scheme.lower() != SWARM_SCHEME or kind.lower() not in _LINK_KINDS:
        raise ValueError(f"not a swarm link: {url!r} (expected swarm://connect?server=HOST)")
    query = parse_qs(parts.query)
    server = (query.get("server") or [""])[0].strip()
    if not server:
        raise ValueError(f"swarm link without server=HOST: {url!r}")
    token = next(iter(query.get("token", [])), None) or None
    if "://" in server:
        base = server.rstrip("/")
    else:
        host = urlsplit(f"//{server}").hostname
        scheme = "http" if is_loopback(host) else "https"
        base = f"{scheme}://{server}".rstrip("/")
    return SwarmURL(action=kind.lower(), server=server, token=token, base_url=base)
