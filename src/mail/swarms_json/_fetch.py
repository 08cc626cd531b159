"""Fetching the document of a ``url::`` reference, within bounds.

The fetch uses ``httpx`` (a blocking client, in a worker thread) and follows redirects
itself, so every hop passes the same checks:

* **Schemes** are checked on the URL and on every redirect: a ``https://`` reference may
  not be redirected to ``http://`` (nor to ``ftp://`` or ``file://``) unless plain HTTP is
  allowed, and even then only to ``http(s)://``; at most five redirects are followed.
* **One deadline** covers the whole fetch (name lookup, connection, redirects and the
  body): a server that trickles bytes cannot stretch it, as it could a per-read timeout.
  The fetch runs in a worker thread; when the deadline passes the caller gets its error at
  once, and the thread stops at its next read (each read also times out).
* **Size**: a body larger than the cap is refused without reading the rest.
* **Addresses** are checked by an :class:`~mail.net.AddressPolicy` on every
  connection, redirects included: the name is resolved, every address checked, and the
  connection made to a checked address (link-local and metadata addresses are refused by
  default; see docs/security.md).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

from mail.errors import AddressRefusedError
from mail.net import AddressPolicy

if TYPE_CHECKING:
    import httpx

__all__ = ["FetchError", "fetch", "next_url", "schemes_for"]

_MAX_REDIRECTS = 5
_REDIRECTS = frozenset((301, 302, 303, 307, 308))


class FetchError(Exception):
    """Why a fetch failed, worded for the reference's error message."""


def schemes_for(allow_http: bool) -> tuple[str, ...]:
    """The URL prefixes a fetch may use."""
    return ("https://", "http://") if allow_http else ("https://",)


def _allowed(url: str, schemes: tuple[str, ...]) -> bool:
    return url.lower().startswith(schemes)


def next_url(current: str, code: int, location: str, schemes: tuple[str, ...]) -> str:
    """Where a redirect (``code``, ``Location: location``) from ``current`` leads.

    Raises :class:`FetchError` when it leads to a scheme not in ``schemes``.
    """
    import httpx  # noqa: PLC0415  # only url:: fetches need it

    target = str(httpx.URL(current).join(location))
    if not _allowed(target, schemes):
        raise FetchError(
            f"being redirected ({code}) to {location!r} is not allowed: only "
            f"{' and '.join(schemes)} URLs are allowed"
        )
    return target


def fetch(
    url: str,
    *,
    allow_http: bool,
    timeout: float,
    max_bytes: int,
    policy: AddressPolicy | None = None,
) -> bytes:
    """GET ``url`` and return its body, all within ``timeout`` seconds.

    ``policy`` decides which addresses may be connected to (default ``AddressPolicy()``).

    Raises :class:`FetchError` when the scheme (of the URL or of a redirect) is not
    allowed, ``policy`` refuses an address (the message names the rule), the fetch
    fails, the deadline passes, or the body exceeds ``max_bytes``.
    """
    schemes = schemes_for(allow_http)
    if not _allowed(url, schemes):
        raise FetchError(f"only {' and '.join(schemes)} URLs are allowed")
    if policy is None:
        policy = AddressPolicy()
    deadline = time.monotonic() + timeout
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mail-url-fetch")
    try:
        future = pool.submit(_get, url, schemes, policy, timeout, max_bytes, deadline)
    finally:
        pool.shutdown(wait=False)
    done, _ = wait([future], timeout=timeout)
    if not done:
        raise FetchError(f"fetch failed: no complete answer within {timeout:g} s")
    return future.result()


def _get(
    url: str,
    schemes: tuple[str, ...],
    policy: AddressPolicy,
    timeout: float,
    max_bytes: int,
    deadline: float,
) -> bytes:
    import httpx  # noqa: PLC0415  # only url:: fetches need it

    from mail.net import guarded_client  # noqa: PLC0415  # imports httpx

    failures = (
        httpx.HTTPError,
        httpx.InvalidURL,
        OSError,
        ValueError,
    )
    try:
        with guarded_client(policy, timeout=timeout) as client:
            return _follow(client, url, schemes, max_bytes, deadline, timeout)
    except FetchError:
        raise
    except AddressRefusedError as e:
        raise FetchError(str(e)) from None
    except failures as e:
        raise FetchError(f"fetch failed: {e or type(e).__name__}") from e


def _follow(
    client: httpx.Client,
    url: str,
    schemes: tuple[str, ...],
    max_bytes: int,
    deadline: float,
    timeout: float,
) -> bytes:
    for _ in range(_MAX_REDIRECTS + 1):
        with client.stream("GET", url, headers={"Accept": "application/json"}) as response:
            location = response.headers.get("location")
            if response.status_code in _REDIRECTS and location:
                url = next_url(url, response.status_code, location, schemes)
                continue
            if response.status_code >= 400:  # noqa: PLR2004  # HTTP error statuses
                raise FetchError(
                    f"fetch failed: HTTP Error {response.status_code}: {response.reason_phrase}"
                )
            return _read(response, max_bytes, deadline, timeout)
    raise FetchError(f"fetch failed: more than {_MAX_REDIRECTS} redirects")


def _read(response: httpx.Response, max_bytes: int, deadline: float, timeout: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():  # each network read, as it arrives
        if time.monotonic() > deadline:
            raise FetchError(f"fetch failed: no complete answer within {timeout:g} s")
        size += len(chunk)
        if size > max_bytes:
            raise FetchError(f"response is larger than {max_bytes} bytes")
        chunks.append(chunk)
    if time.monotonic() > deadline:
        raise FetchError(f"fetch failed: no complete answer within {timeout:g} s")
    return b"".join(chunks)
