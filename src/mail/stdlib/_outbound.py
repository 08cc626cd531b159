"""Outgoing HTTP requests of the stdlib actions (private), behind the outbound guard.

:func:`fetch` sends one request with the ``[stdlib.http]`` settings: only ``http``/``https``
URLs; every connection made by :func:`mail.net.guarded_async_client`, which
resolves the host, checks every address and connects to a checked one; redirects followed
here, up to ``max_redirects``, each URL checked again (scheme, then addresses on
connection); ``timeout`` for the whole call; the body read up to ``max_response_bytes``.
Every failure raises :class:`~mail.stdlib._kit.ActionFailed` with the text the agent sees.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from mail.config import StdlibHTTPConfig
from mail.errors import AddressRefusedError
from mail.net import guarded_async_client
from mail.stdlib._kit import ActionFailed
from mail.stdlib._settings import SECTION, policy

__all__ = ["Fetched", "fetch", "policy"]

_SUCCESS = range(200, 300)
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# sent to the first origin only: a redirect elsewhere must not carry the caller's secrets
_CREDENTIALS = ("authorization", "cookie", "proxy-authorization")


@dataclass(frozen=True, slots=True, kw_only=True)
class Fetched:
    """A response: status, reason, headers and the body's text (decoded by its charset)."""

    url: str
    status: int
    reason: str
    headers: list[tuple[str, str]]
    text: str

    @property
    def ok(self) -> bool:
        """True for a 2xx status."""
        return self.status in _SUCCESS


def check_url(url: str, *, redirect: bool = False) -> None:
    """Refuse anything but an absolute ``http``/``https`` URL; raises :class:`ActionFailed`."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        what = f"a redirect to {url!r}" if redirect else f"{url!r}"
        raise ActionFailed(
            f"only absolute http:// and https:// URLs can be fetched; refused {what}"
        )


async def fetch(
    method: str,
    url: str,
    settings: StdlibHTTPConfig,
    *,
    headers: dict[str, str] | None = None,
    json_body: Any = None,
) -> Fetched:
    """Send ``method url`` (with ``headers`` and ``json_body`` as JSON, if not ``None``),
    following redirects; return the final response.

    Raises:
        ActionFailed: the URL or a redirect is refused, the call timed out or failed, the
            body is larger than ``max_response_bytes``.
    """
    check_url(url)
    try:
        async with asyncio.timeout(settings.timeout):
            return await _follow(method, url, settings, dict(headers or {}), json_body)
    except (TimeoutError, httpx.TimeoutException):
        raise ActionFailed(
            f"no complete answer from {url} within {settings.timeout:g} s (timeout in {SECTION})"
        ) from None
    except AddressRefusedError as e:
        raise ActionFailed(_refusal(e)) from None
    except httpx.InvalidURL as e:
        raise ActionFailed(f"invalid URL {url!r}: {e}") from None
    except httpx.HTTPError as e:
        raise ActionFailed(f"request to {url} failed: {_describe(e)}") from None


async def _follow(
    method: str, url: str, settings: StdlibHTTPConfig, headers: dict[str, str], body: Any
) -> Fetched:
    async with guarded_async_client(policy(settings), timeout=settings.timeout) as client:
        for _ in range(settings.max_redirects + 1):
            kwargs: dict[str, Any] = {} if body is None else {"json": body}
            response = await _send(client, method, url, headers, kwargs, settings)
            location = _location(response)
            if location is None:
                return response
            next_url = urljoin(url, location)
            check_url(next_url, redirect=True)
            if response.status in (301, 302, 303) and method != "HEAD":
                method, body = "GET", None  # as browsers do; 307 and 308 keep both
            if _origin(next_url) != _origin(url):
                headers = {k: v for k, v in headers.items() if k.lower() not in _CREDENTIALS}
            url = next_url
    raise ActionFailed(
        f"more than {settings.max_redirects} redirects (max_redirects in {SECTION}); "
        f"the last one was to {url}"
    )


async def _send(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    headers: dict[str, str],
    kwargs: dict[str, Any],
    settings: StdlibHTTPConfig,
) -> Fetched:
    cap = settings.max_response_bytes
    async with client.stream(method, url, headers=headers, **kwargs) as response:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > cap:
                raise ActionFailed(
                    f"the response from {url} is larger than {cap} bytes "
                    f"(max_response_bytes in {SECTION})"
                )
        return Fetched(
            url=url,
            status=response.status_code,
            reason=response.reason_phrase,
            headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw],
            text=body.decode(response.encoding or "utf-8", errors="replace"),
        )


def _location(response: Fetched) -> str | None:
    if response.status not in _REDIRECTS:
        return None
    return next((v for k, v in response.headers if k.lower() == "location"), None)


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.hostname, parts.port


def _refusal(error: AddressRefusedError) -> str:
    if error.rule in ("loopback", "private"):
        return f"{error}; or set allow_{error.rule} = true in {SECTION}"
    return str(error)


def _describe(error: httpx.HTTPError) -> str:
    kind = "could not connect" if isinstance(error, httpx.ConnectError) else type(error).__name__
    detail = str(error)
    return f"{kind} ({detail})" if detail else kind
