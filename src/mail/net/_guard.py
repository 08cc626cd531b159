"""Which addresses an outgoing connection may reach: the guard against server-side request
forgery (a caller making the server connect to its cloud metadata service or to a port
of its choosing).

An :class:`AddressPolicy` judges a host by its name, then by **every** address the name
resolves to (an IPv4-mapped IPv6 address counts as its IPv4 address). A host that spells
an IPv4 address in one of the numeric forms ``inet_aton`` reads (decimal, octal with a
leading ``0``, hex with ``0x``, and the short forms ``a``, ``a.b``, ``a.b.c`` whose last
part fills the bytes left: :func:`numeric_ipv4`) is judged as that address before any
lookup, so ``2852039166``, ``0xA9FEA9FE``, ``0251.0376.0251.0376`` and ``169.254.43518``
are ``169.254.169.254`` whatever the system's resolver makes of them. The first rule that
matches decides:

1. ``deny_hosts`` (a name, or ``*.domain`` for its subdomains): refused;
2. ``allow_hosts``: allowed, whatever the name resolves to;
3. the cloud metadata names (``metadata.google.internal``, ``metadata.goog``): refused;
4. then, for each address: ``deny_networks`` refuses; ``allow_networks`` allows; the
   built-in rules refuse unspecified (``0.0.0.0/8``, ``::``), link-local
   (``169.254.0.0/16``, ``fe80::/10``: the metadata services live there), other
   metadata addresses and multicast addresses, and loopback and private addresses when
   the policy's flags say so (peers allow both by default).

A refusal raises :class:`~mail.errors.AddressRefusedError`, whose message names the host,
the address and the rule. :func:`resolve` and :func:`resolve_sync` check a host before any
connection is made; ``mail.net._guard_aiohttp`` applies the same policy to every
connection of an ``aiohttp`` session, redirects included, and
:func:`guarded_create_connection` to ``http.client`` connections.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mail.errors import AddressRefusedError

__all__ = [
    "DEFAULT_POLICY",
    "METADATA_HOSTS",
    "AddressPolicy",
    "guarded_create_connection",
    "normalize",
    "numeric_ipv4",
    "resolve",
    "resolve_sync",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
AddrInfo = tuple[socket.AddressFamily, socket.SocketKind, int, str, tuple[Any, ...]]

#: Names of cloud metadata services, refused unless in ``allow_hosts``.
METADATA_HOSTS = ("metadata.google.internal", "metadata.goog")


def _nets(*texts: str) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(text) for text in texts)


# (rule, networks, what an address of them is); always applied unless allow_networks says
_ALWAYS: tuple[tuple[str, tuple[IPNetwork, ...], str], ...] = (
    ("unspecified", _nets("0.0.0.0/8", "::/128"), "an unspecified address"),
    ("link-local", _nets("169.254.0.0/16", "fe80::/10"), "a link-local (metadata) address"),
    ("metadata", _nets("fd00:ec2::254/128", "100.100.100.200/32"), "a cloud metadata address"),
    ("multicast", _nets("224.0.0.0/4", "ff00::/8"), "a multicast address"),
)
_LOOPBACK = ("loopback", _nets("127.0.0.0/8", "::1/128"), "a loopback address")
_PRIVATE = (
    "private",
    _nets("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7"),
    "a private address",
)


def normalize(text: str) -> IPAddress:
    """The address ``text`` names, an IPv4-mapped IPv6 address as IPv4, without zone.

    Raises ``ValueError`` when ``text`` is not an IP address.
    """
    address = ipaddress.ip_address(text.partition("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


#: what C's ``isspace`` calls white space: where ``inet_aton`` stops reading
_C_SPACE = frozenset(" \t\n\v\f\r")
_DECIMAL = frozenset("0123456789")
_OCTAL = frozenset("01234567")
_HEX = frozenset("0123456789abcdefABCDEF")
#: the largest last part after 0, 1, 2 and 3 dotted parts (it fills the bytes left)
_LAST_MAX = (0xFFFFFFFF, 0xFFFFFF, 0xFFFF, 0xFF)
_BYTE_MAX = 0xFF
#: more significant digits than any 32-bit number has in any base (octal: 11)
_DIGITS_MAX = 11


def numeric_ipv4(text: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address ``text`` spells as ``inet_aton`` reads it, or ``None`` when it is
    not such a spelling (then it is a name, to be resolved).

    ``inet_aton`` (and so do many resolvers) reads one to four parts separated by dots, each
    a number in C's notation: ``0x`` or ``0X`` then hex digits, ``0`` then octal digits,
    or decimal; every part but the last is one byte, and the last fills the bytes left
    (``2852039166``, ``169.254.43518``, ``0xa9.0376.43518`` and ``0251.0376.0251.0376``
    are all ``169.254.169.254``). Reading stops at white space, as C's does. Nothing
    else is a number: ``1.2.3.4.5``, ``0x``, ``08`` and ``1.`` are names.
    """
    parts: list[int] = []
    at = 0
    while True:
        value, at = _c_number(text, at)
        if value is None:
            return None
        if text[at : at + 1] != ".":
            break
        if len(parts) == len(_LAST_MAX) - 1 or value > _BYTE_MAX:
            return None
        parts.append(value)
        at += 1
    if at < len(text) and text[at] not in _C_SPACE:
        return None
    if value > _LAST_MAX[len(parts)]:
        return None
    word = value
    for index, part in enumerate(parts):
        word |= part << (24 - 8 * index)
    return ipaddress.IPv4Address(word)


def _c_number(text: str, at: int) -> tuple[int | None, int]:
    """The number (at most 32 bits) at ``text[at]`` as ``strtoul(..., 0)`` reads one that
    starts with a digit, and where it ends; ``None`` when there is none."""
    if text[at : at + 1] not in _DECIMAL:
        return None, at
    if text[at] == "0" and text[at + 1 : at + 2] in ("x", "X") and text[at + 2 : at + 3] in _HEX:
        start, digits, base = at + 2, _HEX, 16
    elif text[at] == "0":
        start, digits, base = at, _OCTAL, 8
    else:
        start, digits, base = at, _DECIMAL, 10
    end = start
    while end < len(text) and text[end] in digits:
        end += 1
    significant = text[start:end].lstrip("0") or "0"
    if len(significant) > _DIGITS_MAX:  # too large (and too long to convert: no limit)
        return None, at
    value = int(significant, base)
    return (value, end) if value <= _LAST_MAX[0] else (None, at)


def _host_name(host: str) -> str:
    return host.strip().rstrip(".").lower()


def _matches(name: str, patterns: Iterable[str]) -> str | None:
    for pattern in patterns:
        wanted = _host_name(pattern)
        if wanted.startswith("*."):
            if name.endswith(wanted[1:]):
                return pattern
        elif name == wanted:
            return pattern
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class AddressPolicy:
    """The rules of the module docstring.

    ``allow_networks``/``deny_networks``: CIDR networks (``10.0.0.0/8``, ``fd00::/8``) or
    single addresses; ``allow_hosts``/``deny_hosts``: host names, ``*.example.com`` for
    every subdomain. ``allow_loopback``/``allow_private``: whether those ranges are
    allowed when no list names them. ``where``: where an operator changes the lists, for
    the messages. Raises ``ValueError`` for an entry that is not a network.
    """

    allow_networks: tuple[str, ...] = ()
    deny_networks: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    deny_hosts: tuple[str, ...] = ()
    allow_loopback: bool = True
    allow_private: bool = True
    where: str = "the address policy"
    _allow: tuple[IPNetwork, ...] = field(init=False, repr=False, compare=False)
    _deny: tuple[IPNetwork, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # frozen: the parsed networks are set once, here
        object.__setattr__(self, "_allow", _parse(self.allow_networks))
        object.__setattr__(self, "_deny", _parse(self.deny_networks))

    def host_allowed(self, host: str) -> bool:
        """True when ``host`` is in ``allow_hosts`` (and not in ``deny_hosts``)."""
        name = _host_name(host)
        return _matches(name, self.deny_hosts) is None and (
            _matches(name, self.allow_hosts) is not None
        )

    def check_host(self, host: str) -> None:
        """Refuse ``host`` by its name (rules 1 and 3), and a host that spells an IPv4
        address in numbers (:func:`numeric_ipv4`: ``2852039166``, ``0xA9FEA9FE``) by the
        address it spells (rule 4, unless ``allow_hosts`` names it), without looking
        anything up. Raises :class:`AddressRefusedError`."""
        name = _host_name(host)
        denied = _matches(name, self.deny_hosts)
        if denied is not None:
            raise AddressRefusedError(
                f"connection to {host} refused: the host matches {denied!r} of deny_hosts "
                f"in {self.where}",
                host=host,
                rule="deny_hosts",
            )
        if name in METADATA_HOSTS and _matches(name, self.allow_hosts) is None:
            raise AddressRefusedError(
                f"connection to {host} refused by the rule 'metadata': it names a cloud "
                f"metadata service (add it to allow_hosts in {self.where} to allow it)",
                host=host,
                rule="metadata",
            )
        spelled = numeric_ipv4(name)
        if spelled is not None and _matches(name, self.allow_hosts) is None:
            self.check_address(spelled, host)

    def check_address(self, address: str | IPAddress, host: str | None = None) -> None:
        """Refuse ``address`` (of ``host``, for the message) by rule 4; raises
        :class:`AddressRefusedError`."""
        ip = normalize(address) if isinstance(address, str) else address
        target = str(ip) if host is None or host.strip("[]") == str(address) else host
        for network in self._deny:
            if ip.version == network.version and ip in network:
                raise AddressRefusedError(
                    f"connection to {target} refused: {ip} is in {network} of deny_networks "
                    f"in {self.where}",
                    host=target,
                    address=str(ip),
                    rule="deny_networks",
                )
        if any(ip.version == n.version and ip in n for n in self._allow):
            return
        for rule, networks, what in self._rules():
            if any(ip.version == n.version and ip in n for n in networks):
                raise AddressRefusedError(
                    f"connection to {target} refused by the rule {rule!r}: {ip} is {what} "
                    f"(add its network to allow_networks in {self.where} to allow it)",
                    host=target,
                    address=str(ip),
                    rule=rule,
                )

    def check(self, host: str, addresses: Iterable[str]) -> None:
        """Refuse ``host`` by its name, else by any of the ``addresses`` it resolved to.

        Raises :class:`AddressRefusedError` naming the rule.
        """
        self.check_host(host)
        if self.host_allowed(host):
            return
        for address in addresses:
            self.check_address(address, host)

    def _rules(self) -> Iterable[tuple[str, tuple[IPNetwork, ...], str]]:
        yield from _ALWAYS
        if not self.allow_loopback:
            yield _LOOPBACK
        if not self.allow_private:
            yield _PRIVATE


def _parse(entries: Iterable[str]) -> tuple[IPNetwork, ...]:
    networks: list[IPNetwork] = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ValueError(f"expected an IP network such as 10.0.0.0/8, got {entry!r}") from None
    return tuple(networks)


#: Peers' policy unless configured: loopback and private allowed.
DEFAULT_POLICY = AddressPolicy()


def _checked(host: str, infos: Sequence[AddrInfo], policy: AddressPolicy) -> list[AddrInfo]:
    policy.check(host, (str(info[4][0]) for info in infos))
    return list(infos)


async def resolve(host: str, port: int, policy: AddressPolicy) -> list[AddrInfo]:
    """Every ``getaddrinfo`` result of ``host`` (resolved off the loop), once the policy
    allows the name and all of its addresses.

    Raises :class:`AddressRefusedError` naming the rule, or ``OSError`` when the name does
    not resolve.
    """
    policy.check_host(host)
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return _checked(host, infos, policy)


def resolve_sync(host: str, port: int, policy: AddressPolicy) -> list[AddrInfo]:
    """:func:`resolve` for blocking code (it blocks while the name is looked up)."""
    policy.check_host(host)
    return _checked(host, socket.getaddrinfo(host, port, type=socket.SOCK_STREAM), policy)


CreateConnection = Callable[..., socket.socket]


def guarded_create_connection(policy: AddressPolicy) -> CreateConnection:
    """A ``socket.create_connection`` that connects only to addresses ``policy`` allows.

    Meant for ``http.client.HTTPConnection._create_connection``: the checked addresses are
    the ones connected to, so a name cannot resolve differently between check and use.
    """

    def create_connection(
        address: tuple[str, int],
        timeout: object = None,
        source_address: tuple[str, int] | None = None,
    ) -> socket.socket:
        host, port = address
        error: OSError | None = None
        for family, kind, proto, _, sockaddr in resolve_sync(host, port, policy):
            sock = socket.socket(family, kind, proto)
            try:
                if isinstance(timeout, int | float):  # else http.client's "default" marker
                    sock.settimeout(timeout)
                if source_address is not None:
                    sock.bind(source_address)
                sock.connect(sockaddr)
            except OSError as e:
                sock.close()
                error = e
                continue
            return sock
        raise error or OSError(f"{host} resolved to no address")

    return create_connection
