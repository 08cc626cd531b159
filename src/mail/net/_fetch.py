"""One guarded fetch: a request to a URL someone else chose, under the address policy and
within bounds. ``url::`` references (``mail.swarms_json``) and the stdlib's HTTP actions
(``mail.stdlib``) both fetch through it.

:func:`fetch` sends one request with ``httpx`` and follows redirects itself, so every hop
passes the same checks; :func:`fetch_blocking` is the same fetch for blocking code. What a
fetch may do is a :class:`FetchPolicy`:

* **Schemes**: the URL and every redirect's target must be absolute URLs of one of
  ``schemes`` (``https`` or ``http`` unless narrowed), so an ``https`` page cannot send the
  fetch to ``http://`` when only ``https`` is allowed, nor anywhere to ``file://``. At most
  ``max_redirects`` redirects are followed. A 301, 302 or 303 turns the request into a
  ``GET`` without body (``HEAD`` stays ``HEAD``), as browsers do; 307 and 308 keep both.
  ``Authorization``, ``Cookie`` and ``Proxy-Authorization`` go to the first origin only.
* **Addresses**: every connection, redirects included, is made by
  :func:`~mail.net._guard_httpx.guarded_async_client`: the host is resolved, every address
  checked by ``addresses`` (an :class:`~mail.net.AddressPolicy`) and the connection made
  to a checked address. Proxy variables are ignored.
* **One deadline**: ``timeout`` seconds cover the whole fetch (name lookups, connections,
  redirects and the body), so a server that trickles bytes cannot stretch it.
* **Size**: a body larger than ``max_bytes`` is refused without reading the rest; the body
  of a redirect that is followed is not read.

A final response is returned whatever its status (:attr:`Fetched.ok` tells a 2xx).
Failures::

    MAILError
    ├── AddressRefusedError         (mail.errors) ``addresses`` refused a host or an address
    └── FetchError                  the fetch failed; ``url`` is the URL asked for
        ├── URLRefusedError         the URL or a redirect's target: not an allowed scheme
        ├── InvalidURLError         the URL or a redirect's target cannot be parsed
        ├── TooManyRedirectsError   more than ``max_redirects`` redirects
        ├── ResponseTooLargeError   the body is larger than ``max_bytes``
        ├── FetchTimeoutError       no complete answer within ``timeout`` seconds
        └── FetchFailedError        no answer: the connection or the protocol failed

Each message is complete English; the attributes let a caller word its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from mail.errors import MAILError
from mail.net._guard import AddressPolicy

if TYPE_CHECKING:
    import httpx

__all__ = [
    "FetchError",
    "FetchFailedError",
    "FetchPolicy",
    "FetchTimeoutError",
    "Fetched",
    "InvalidURLError",
    "ResponseTooLargeError",
    "TooManyRedirectsError",
    "URLRefusedError",
    "fetch",
    "fetch_blocking",
]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_SUCCESS = range(200, 300)
# sent to the first origin only: a redirect elsewhere must not carry the caller's secrets
_CREDENTIALS = frozenset({"authorization", "cookie", "proxy-authorization"})


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchPolicy:
    """What a fetch may do (see the module docstring).

    ``addresses``: the rules for every connection; ``timeout``: seconds for the whole
    fetch; ``max_bytes``: the largest body read; ``max_redirects``: how many redirects are
    followed; ``schemes``: the URL schemes allowed, in lower case, in the order messages
    name them.
    """

    addresses: AddressPolicy
    timeout: float
    max_bytes: int
    max_redirects: int = 5
    schemes: tuple[str, ...] = ("https", "http")


@dataclass(frozen=True, slots=True, kw_only=True)
class Fetched:
    """A final response: the ``url`` it answered (after redirects), ``status``, ``reason``,
    ``headers`` (name and value as sent, in order), ``body`` and its ``encoding`` (the
    charset of ``Content-Type`` when Python knows it, else UTF-8)."""

    url: str
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    encoding: str = "utf-8"

    @property
    def ok(self) -> bool:
        """True for a 2xx status."""
        return self.status in _SUCCESS

    @property
    def text(self) -> str:
        """The body decoded by :attr:`encoding` (undecodable bytes replaced)."""
        return self.body.decode(self.encoding, errors="replace")


class FetchError(MAILError):
    """A fetch failed; ``url`` is the URL asked for."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class URLRefusedError(FetchError):
    """``target`` is not an absolute URL of one of ``schemes``: the URL asked for, or where
    a redirect (``redirect``: its status, ``location``: its ``Location`` as sent; both
    ``None`` for the URL asked for) led."""

    def __init__(
        self,
        *,
        url: str,
        target: str,
        schemes: tuple[str, ...],
        redirect: int | None = None,
        location: str | None = None,
    ) -> None:
        allowed = " and ".join(f"{scheme}://" for scheme in schemes)
        what = repr(target) if redirect is None else f"a redirect to {target!r}"
        super().__init__(f"only absolute {allowed} URLs can be fetched; refused {what}", url=url)
        self.target = target
        self.schemes = schemes
        self.redirect = redirect
        self.location = location


class InvalidURLError(FetchError):
    """The URL (or a redirect's target) cannot be parsed; ``detail`` says why."""

    def __init__(self, *, url: str, detail: str) -> None:
        super().__init__(f"invalid URL {url!r}: {detail}", url=url)
        self.detail = detail


class TooManyRedirectsError(FetchError):
    """More than ``max_redirects`` redirects; ``last`` is where the last one led."""

    def __init__(self, *, url: str, max_redirects: int, last: str) -> None:
        super().__init__(
            f"more than {max_redirects} redirects; the last one was to {last}", url=url
        )
        self.max_redirects = max_redirects
        self.last = last


class ResponseTooLargeError(FetchError):
    """The body of the response from ``at`` (``status``, ``reason``) is larger than
    ``max_bytes``; the rest was not read."""

    def __init__(self, *, url: str, at: str, max_bytes: int, status: int, reason: str) -> None:
        super().__init__(f"the response from {at} is larger than {max_bytes} bytes", url=url)
        self.at = at
        self.max_bytes = max_bytes
        self.status = status
        self.reason = reason


class FetchTimeoutError(FetchError):
    """No complete answer within ``timeout`` seconds."""

    def __init__(self, *, url: str, timeout: float) -> None:
        super().__init__(f"no complete answer from {url} within {timeout:g} s", url=url)
        self.timeout = timeout


class FetchFailedError(FetchError):
    """No answer: the connection or the protocol failed. ``cause`` is the error (also the
    ``__cause__``), ``detail`` its text (its type's name when it has none)."""

    def __init__(self, *, url: str, cause: Exception, connect: bool) -> None:
        self.cause = cause
        self.detail = str(cause) or type(cause).__name__
        kind = "could not connect" if connect else type(cause).__name__
        described = f"{kind} ({cause})" if str(cause) else kind
        super().__init__(f"request to {url} failed: {described}", url=url)


@dataclass(frozen=True, slots=True)
class _Hop:
    """One request of a fetch: the first, or one a redirect leads to."""

    method: str
    url: str
    headers: dict[str, str]
    body: Any


def _check(
    asked: str,
    target: str,
    schemes: tuple[str, ...],
    redirect: int | None = None,
    location: str | None = None,
) -> None:
    try:
        parts = urlsplit(target)
        scheme, host, _ = parts.scheme.lower(), parts.hostname, parts.port
    except ValueError as e:  # a bad IPv6 literal or port
        raise InvalidURLError(url=asked, detail=str(e)) from None
    if scheme not in schemes or not host:
        raise URLRefusedError(
            url=asked, target=target, schemes=schemes, redirect=redirect, location=location
        )


async def fetch(
    url: str,
    policy: FetchPolicy,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    json_body: Any = None,
) -> Fetched:
    """Send ``method url`` with ``headers`` (and ``json_body`` as JSON unless ``None``),
    follow redirects and return the final response, whatever its status, all within
    ``policy``.

    Raises:
        URLRefusedError, InvalidURLError: the URL or a redirect's target is refused.
        AddressRefusedError: ``policy.addresses`` refused a host or an address (before
            connecting to it).
        TooManyRedirectsError, ResponseTooLargeError, FetchTimeoutError: a limit of
            ``policy`` was reached.
        FetchFailedError: the connection or the protocol failed.
    """
    import httpx  # noqa: PLC0415  # `import mail.net` stays cheap

    from mail.net._guard_httpx import guarded_async_client  # noqa: PLC0415  # imports httpx

    _check(url, url, policy.schemes)
    first = _Hop(method.upper(), url, dict(headers or {}), json_body)
    try:
        async with (
            asyncio.timeout(policy.timeout),
            guarded_async_client(policy.addresses, timeout=policy.timeout) as client,
        ):
            return await _follow(client, first, policy)
    except (TimeoutError, httpx.TimeoutException):
        raise FetchTimeoutError(url=url, timeout=policy.timeout) from None
    except httpx.InvalidURL as e:
        raise InvalidURLError(url=url, detail=str(e)) from None
    except (httpx.HTTPError, OSError, ValueError) as e:
        connect = isinstance(e, httpx.ConnectError | OSError)
        raise FetchFailedError(url=url, cause=e, connect=connect) from e


async def _follow(client: httpx.AsyncClient, hop: _Hop, policy: FetchPolicy) -> Fetched:
    asked = hop.url
    for _ in range(policy.max_redirects + 1):
        kwargs: dict[str, Any] = {} if hop.body is None else {"json": hop.body}
        async with client.stream(hop.method, hop.url, headers=hop.headers, **kwargs) as response:
            location = response.headers.get("location")
            if response.status_code not in _REDIRECTS or not location:
                return await _read(response, asked, hop.url, policy.max_bytes)
        hop = _redirected(hop, asked, response.status_code, location, policy.schemes)
    raise TooManyRedirectsError(url=asked, max_redirects=policy.max_redirects, last=hop.url)


def _redirected(
    hop: _Hop, asked: str, status: int, location: str, schemes: tuple[str, ...]
) -> _Hop:
    """The request a redirect (``status``, ``location``) of ``hop`` leads to, checked."""
    target = urljoin(hop.url, location)
    _check(asked, target, schemes, redirect=status, location=location)
    if status in (301, 302, 303) and hop.method != "HEAD":
        hop = replace(hop, method="GET", body=None)
    if _origin(target) != _origin(hop.url):
        kept = {k: v for k, v in hop.headers.items() if k.lower() not in _CREDENTIALS}
        hop = replace(hop, headers=kept)
    return replace(hop, url=target)


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.hostname, parts.port


async def _read(response: httpx.Response, asked: str, at: str, max_bytes: int) -> Fetched:
    body = bytearray()
    async for chunk in response.aiter_bytes():  # each network read, decoded, as it arrives
        body += chunk
        if len(body) > max_bytes:
            raise ResponseTooLargeError(
                url=asked,
                at=at,
                max_bytes=max_bytes,
                status=response.status_code,
                reason=response.reason_phrase,
            )
    return Fetched(
        url=at,
        status=response.status_code,
        reason=response.reason_phrase,
        headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw],
        body=bytes(body),
        encoding=response.encoding or "utf-8",
    )


def fetch_blocking(
    url: str,
    policy: FetchPolicy,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    json_body: Any = None,
) -> Fetched:
    """:func:`fetch` for blocking code (which may run inside an event loop's thread).

    The fetch runs in a worker thread, with its own event loop. The caller gets its answer
    or error within ``policy.timeout`` seconds even if that thread is stuck in a name
    lookup (which nothing can cancel); the thread then ends on its own. Raises what
    :func:`fetch` raises.
    """
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mail-fetch")
    try:
        future = pool.submit(_run, url, policy, method, headers, json_body)
    finally:
        pool.shutdown(wait=False)
    try:
        return future.result(timeout=policy.timeout)
    except TimeoutError:  # from the wait: fetch's own deadline maps its timeouts
        raise FetchTimeoutError(url=url, timeout=policy.timeout) from None


def _run(
    url: str,
    policy: FetchPolicy,
    method: str,
    headers: Mapping[str, str] | None,
    json_body: Any,
) -> Fetched:
    return asyncio.run(fetch(url, policy, method=method, headers=headers, json_body=json_body))
