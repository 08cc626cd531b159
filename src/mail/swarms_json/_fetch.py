"""Fetching the document of a ``url::`` reference: :func:`mail.net.fetch_blocking` with the
reference policy's limits, its failures worded for the reference's error message.

``https://`` only unless plain HTTP is allowed (then ``http://`` too), on the URL and on
every redirect; at most five redirects; one deadline for the whole fetch; a size cap; every
connection checked by an :class:`~mail.net.AddressPolicy` (link-local and metadata
addresses are refused by default; see docs/security.md). An HTTP error status is a failure.
"""

from __future__ import annotations

from mail.errors import AddressRefusedError
from mail.net import (
    AddressPolicy,
    FetchFailedError,
    FetchPolicy,
    FetchTimeoutError,
    InvalidURLError,
    ResponseTooLargeError,
    TooManyRedirectsError,
    URLRefusedError,
    fetch_blocking,
)
from mail.net import FetchError as _NetFetchError

__all__ = ["FetchError", "fetch"]

_MAX_REDIRECTS = 5
_HTTP_ERRORS = 400  # statuses from here on are failures


class FetchError(Exception):
    """Why a fetch failed, worded for the reference's error message."""


def fetch(
    url: str, *, allow_http: bool, timeout: float, max_bytes: int, policy: AddressPolicy
) -> bytes:
    """GET ``url`` (asking for JSON) and return its body, all within ``timeout`` seconds.

    Raises :class:`FetchError` when the scheme (of the URL or of a redirect) is not
    allowed, ``policy`` refuses an address (the message names the rule), the fetch
    fails or answers an HTTP error, the deadline passes, or the body exceeds
    ``max_bytes``.
    """
    schemes = ("https", "http") if allow_http else ("https",)
    limits = FetchPolicy(
        addresses=policy,
        timeout=timeout,
        max_bytes=max_bytes,
        max_redirects=_MAX_REDIRECTS,
        schemes=schemes,
    )
    try:
        response = fetch_blocking(url, limits, headers={"Accept": "application/json"})
    except AddressRefusedError as e:
        raise FetchError(str(e)) from None
    except _NetFetchError as e:
        raise FetchError(_worded(e)) from e
    if response.status >= _HTTP_ERRORS:
        raise FetchError(_http_error(response.status, response.reason))
    return response.body


def _http_error(status: int, reason: str) -> str:
    return f"fetch failed: HTTP Error {status}: {reason}"


def _worded(error: _NetFetchError) -> str:
    if isinstance(error, URLRefusedError):
        allowed = f"only {' and '.join(f'{s}://' for s in error.schemes)} URLs are allowed"
        if error.redirect is None:
            return allowed
        return (
            f"being redirected ({error.redirect}) to {error.location!r} is not allowed: {allowed}"
        )
    if isinstance(error, ResponseTooLargeError):
        if error.status >= _HTTP_ERRORS:  # the status says more than the size
            return _http_error(error.status, error.reason)
        return f"response is larger than {error.max_bytes} bytes"
    if isinstance(error, FetchTimeoutError):
        return f"fetch failed: no complete answer within {error.timeout:g} s"
    if isinstance(error, TooManyRedirectsError):
        return f"fetch failed: more than {error.max_redirects} redirects"
    if isinstance(error, FetchFailedError | InvalidURLError):
        return f"fetch failed: {error.detail}"
    return f"fetch failed: {error}"
