"""The registry's HTTP calls to peers: ``GET /``, ``GET /health``, ``GET /swarms``.

Every failure becomes :class:`~mail.errors.RemoteSwarmUnavailableError` naming the URL;
a peer that cannot be reached is only said to be unreachable (the socket's words, which
would let a caller probe ports, go to the log). An address the session's policy refuses
raises :class:`~mail.errors.AddressRefusedError` instead, naming the rule. Each request
has a timeout, reads at most 1 MiB and follows no redirect (a peer is asked at the URL it
was given; a redirect answer is a failure).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mail._limits import loads
from mail.errors import AddressRefusedError, RemoteSwarmUnavailableError
from mail.net._endpoint import SwarmEndpoint, is_legacy_version, utc_now
from mail.net._session import SessionSource

if TYPE_CHECKING:
    import aiohttp

__all__ = ["PeerClient", "PeerInfo", "is_http_url"]

logger = logging.getLogger("mail.net.registry")

#: Largest response body read from a peer.
MAX_BODY = 1_048_576


def is_http_url(value: str) -> bool:
    """True for an ``http``/``https`` URL with a host."""
    try:
        parts = urlsplit(value)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def describe(error: BaseException) -> str:
    """The error's text, or its type when it has none (timeouts)."""
    return str(error) or type(error).__name__


class _PeerCallError(Exception):
    """A failed ``GET`` (connection error or timeout); ``cause`` is the original error."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


@dataclass(slots=True, kw_only=True)
class PeerInfo:
    """What a peer's ``GET /`` says about it.

    ``protocol_version`` is ``None`` when the peer reported none (a protocol 1.1 server);
    ``version`` is that field, else the legacy ``version`` field.
    """

    version: str
    protocol_version: str | None = None
    name: str | None = None
    description: str = ""
    keywords: list[str] = field(default_factory=list)
    public: bool = False
    latency: float = 0.0

    @property
    def legacy(self) -> bool:
        """True when the peer speaks protocol 1.1: no ``protocol_version``, or one below 1.2."""
        return self.protocol_version is None or is_legacy_version(self.protocol_version)

    def entry(
        self,
        swarm_name: str,
        base_url: str,
        *,
        volatile: bool,
        next_check: float,
        metadata: dict[str, Any] | None = None,
        auth_token_ref: str | None = None,
        memory_token: str | None = None,
    ) -> SwarmEndpoint:
        """The registry entry of this peer, just contacted: active, ``last_seen`` now."""
        return SwarmEndpoint(
            swarm_name=swarm_name,
            base_url=base_url,
            version=self.version,
            auth_token_ref=auth_token_ref,
            memory_token=memory_token,
            last_seen=utc_now(),
            is_active=True,
            latency=self.latency,
            swarm_description=self.description,
            keywords=list(self.keywords),
            metadata=metadata,
            public=self.public,
            volatile=volatile,
            legacy=self.legacy,
            next_check=next_check,
        )


class PeerClient:
    """One ``aiohttp`` session (see :class:`SessionSource`) and a per-request timeout."""

    def __init__(
        self, session: aiohttp.ClientSession | SessionSource | None, timeout: float
    ) -> None:
        self._source, self._closes_source = SessionSource.of(session)
        self._timeout_seconds = timeout

    async def _get(self, url: str) -> tuple[int, bytes]:
        """Status and (at most ``MAX_BODY + 1`` bytes of) body of ``GET url``."""
        import aiohttp  # noqa: PLC0415  # imported once the first peer call is made

        try:
            timeout = aiohttp.ClientTimeout(total=self._timeout_seconds)
            async with self._source.get().get(
                url, timeout=timeout, allow_redirects=False
            ) as response:
                return response.status, await response.content.read(MAX_BODY + 1)
        except (aiohttp.ClientError, TimeoutError) as e:
            raise _PeerCallError(e) from e

    async def get_json(self, url: str) -> tuple[Any, float]:
        """The decoded JSON body of ``GET url`` and the round trip in seconds.

        Raises :class:`AddressRefusedError` when the policy refuses the URL's host, and
        :class:`RemoteSwarmUnavailableError` when the request fails (without the socket's
        words, which are logged), the status is not 200, or the body is not JSON or larger
        than 1 MiB.
        """
        started = time.perf_counter()
        try:
            status, body = await self._get(url)
        except _PeerCallError as e:
            cause = e.cause
            logger.warning("GET %s failed: %s", url, describe(cause))
            if isinstance(cause, TimeoutError):
                problem = f"did not answer within {self._timeout_seconds:g} s"
            else:
                problem = "is unreachable"
            raise RemoteSwarmUnavailableError(f"swarm at {url} {problem}") from cause
        elapsed = time.perf_counter() - started
        if status != HTTPStatus.OK:
            raise RemoteSwarmUnavailableError(f"GET {url} answered HTTP {status}")
        if len(body) > MAX_BODY:
            raise RemoteSwarmUnavailableError(f"GET {url} answered more than {MAX_BODY} bytes")
        try:
            return loads(body), elapsed
        except ValueError as e:
            raise RemoteSwarmUnavailableError(f"GET {url} did not answer JSON") from e

    async def probe(self, url: str) -> tuple[bool, str, float]:
        """``GET url``: (answered 200, what went wrong, round trip in seconds). Never raises."""
        started = time.perf_counter()
        try:
            status, _ = await self._get(url)
        except _PeerCallError as e:
            return False, describe(e.cause), time.perf_counter() - started
        except AddressRefusedError as e:
            return False, str(e), time.perf_counter() - started
        return status == HTTPStatus.OK, f"HTTP {status}", time.perf_counter() - started

    async def read_root(self, base_url: str) -> PeerInfo:
        """Read a MAIL server's ``GET {base_url}/``.

        Raises :class:`AddressRefusedError` when the policy refuses its address, and
        :class:`RemoteSwarmUnavailableError` when ``base_url`` is not an http(s) URL,
        the peer cannot be reached, or it does not answer like a MAIL server (a JSON object
        with ``protocol_version``, or the legacy ``version``, and ``name`` "mail" if any).
        """
        if not is_http_url(base_url):
            raise RemoteSwarmUnavailableError(f"base_url must be an http(s) URL, got {base_url!r}")
        url = f"{base_url}/"
        try:
            info, latency = await self.get_json(url)
        except RemoteSwarmUnavailableError as e:
            # the reference server's wording, which clients may match on
            raise RemoteSwarmUnavailableError(
                f"failed to get remote swarm info from {base_url}: {e}"
            ) from e
        if not isinstance(info, dict) or info.get("name", "mail") != "mail":
            raise RemoteSwarmUnavailableError(f"{url} is not a MAIL server")
        protocol = info.get("protocol_version")
        protocol = protocol if isinstance(protocol, str) and protocol else None
        version = protocol or info.get("version")
        if not isinstance(version, str) or not version:
            raise RemoteSwarmUnavailableError(f"{url} did not report a MAIL protocol version")
        swarm = info.get("swarm")
        swarm = swarm if isinstance(swarm, dict) else {}
        name, description, keywords = (
            swarm.get("name"),
            swarm.get("description"),
            swarm.get("keywords"),
        )
        return PeerInfo(
            version=version,
            protocol_version=protocol,
            name=name if isinstance(name, str) else None,
            description=description if isinstance(description, str) else "",
            keywords=[k for k in keywords if isinstance(k, str)]
            if isinstance(keywords, list)
            else [],
            public=swarm.get("public") is True,
            latency=latency,
        )

    async def list_swarms(self, url: str) -> list[tuple[str, str, dict[str, Any] | None]]:
        """``(name, base_url, metadata)`` of each item of ``GET {url}/swarms``.

        Items are named by ``swarm_name`` (what peers send), or ``name`` for old peers;
        malformed items are skipped. Raises :class:`AddressRefusedError` when the policy
        refuses the URL's address, :class:`RemoteSwarmUnavailableError` when the URL cannot
        be read or the answer has no ``swarms`` list.
        """
        if not is_http_url(url):
            raise RemoteSwarmUnavailableError(f"discovery URL must be http(s), got {url!r}")
        data, _ = await self.get_json(f"{url}/swarms")
        items = data.get("swarms") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise RemoteSwarmUnavailableError(f"GET {url}/swarms answered no 'swarms' list")
        found: list[tuple[str, str, dict[str, Any] | None]] = []
        for item in items:
            if not isinstance(item, dict):
                continue
            name, base_url = item.get("swarm_name") or item.get("name"), item.get("base_url")
            if isinstance(name, str) and name and isinstance(base_url, str):
                metadata = item.get("metadata")
                found.append((name, base_url, metadata if isinstance(metadata, dict) else None))
        return found

    async def aclose(self) -> None:
        """Close the session if this client made its source and the source created it."""
        if self._closes_source:
            await self._source.aclose()
