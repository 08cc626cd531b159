"""Fetching the document of a ``url::`` reference, within bounds.

* **Schemes** are checked on the URL and on every redirect: a ``https://`` reference may
  not be redirected to ``http://`` (nor to ``ftp://`` or ``file://``) unless plain HTTP is
  allowed, and even then only to ``http(s)://``; at most five redirects are followed.
* **One deadline** covers the whole fetch (name lookup, connection, redirects and the
  body): a server that trickles bytes cannot stretch it, as it could a per-read timeout.
  The fetch runs in a worker thread; when the deadline passes the caller gets its error at
  once, and the thread stops at its next read (each read also times out).
* **Size**: a body larger than the cap is refused without reading the rest.
* **Addresses** are checked by an :class:`~mail.net._guard.AddressPolicy` on every
  connection, redirects included: the name is resolved, every address checked, and the
  connection made to a checked address (link-local and metadata addresses are refused by
  default; see docs/security.md).
"""

from __future__ import annotations

import http.client
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor, wait
from typing import IO, Any

from mail.errors import AddressRefusedError
from mail.net._guard import DEFAULT_POLICY, AddressPolicy, guarded_create_connection

__all__ = ["FetchError", "fetch", "schemes_for"]

_CHUNK = 65536
_MAX_REDIRECTS = 5


class FetchError(Exception):
    """Why a fetch failed, worded for the reference's error message."""


def schemes_for(allow_http: bool) -> tuple[str, ...]:
    """The URL prefixes a fetch may use."""
    return ("https://", "http://") if allow_http else ("https://",)


def _allowed(url: str, schemes: tuple[str, ...]) -> bool:
    return url.lower().startswith(schemes)


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to an allowed scheme."""

    max_redirections = _MAX_REDIRECTS

    def __init__(self, schemes: tuple[str, ...]) -> None:
        self.schemes = schemes

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if not _allowed(newurl, self.schemes):
            fp.close()  # urllib closes it only when the redirect is followed
            raise FetchError(
                f"redirected ({code}) to {newurl!r}: only {' and '.join(self.schemes)} URLs "
                "are allowed"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _GuardedConnections(urllib.request.HTTPHandler, urllib.request.HTTPSHandler):
    """Opens ``http``/``https`` connections that reach only what ``policy`` allows."""

    def __init__(self, policy: AddressPolicy) -> None:
        urllib.request.HTTPHandler.__init__(self)
        urllib.request.HTTPSHandler.__init__(self)
        self._connect = guarded_create_connection(policy)

    def _guarded(self, kind: type[http.client.HTTPConnection]) -> Any:
        def make(host: str, **options: Any) -> http.client.HTTPConnection:
            connection = kind(host, **options)
            # http.client connects through this attribute (its documented test seam)
            connection._create_connection = self._connect  # type: ignore[attr-defined]
            return connection

        return make

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._guarded(http.client.HTTPConnection), req)

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        context = getattr(self, "_context", None)
        return self.do_open(self._guarded(http.client.HTTPSConnection), req, context=context)


def fetch(
    url: str,
    *,
    allow_http: bool,
    timeout: float,
    max_bytes: int,
    policy: AddressPolicy = DEFAULT_POLICY,
) -> bytes:
    """GET ``url`` and return its body, all within ``timeout`` seconds.

    Raises :class:`FetchError` when the scheme (of the URL or of a redirect) is not
    allowed, ``policy`` refuses an address (the message names the rule), the fetch
    fails, the deadline passes, or the body exceeds ``max_bytes``.
    """
    schemes = schemes_for(allow_http)
    if not _allowed(url, schemes):
        raise FetchError(f"only {' and '.join(schemes)} URLs are allowed")
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
    opener = urllib.request.build_opener(_CheckedRedirects(schemes), _GuardedConnections(policy))
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310  # scheme checked by fetch
    try:
        with opener.open(request, timeout=timeout) as response:
            return _read(response, max_bytes, deadline, timeout)
    except FetchError:
        raise
    except AddressRefusedError as e:
        raise FetchError(str(e)) from None
    except urllib.error.HTTPError as e:
        e.close()  # it holds the response (and its socket)
        raise FetchError(f"fetch failed: {e}") from None
    except urllib.error.URLError as e:
        if isinstance(e.reason, AddressRefusedError):
            raise FetchError(str(e.reason)) from None
        raise FetchError(f"fetch failed: {e}") from e
    except (http.client.HTTPException, OSError, ValueError) as e:
        raise FetchError(f"fetch failed: {e}") from e


def _read(response: Any, max_bytes: int, deadline: float, timeout: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise FetchError(f"fetch failed: no complete answer within {timeout:g} s")
        chunk: bytes = response.read1(_CHUNK)  # returns what one read brings
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise FetchError(f"response is larger than {max_bytes} bytes")
        chunks.append(chunk)
