"""Outgoing HTTP requests of the stdlib actions (private): :func:`mail.net.fetch` with the
``[stdlib.http]`` settings.

Only absolute ``http``/``https`` URLs; every connection, redirects included, under the
address policy of the settings; redirects followed up to ``max_redirects``, each checked
again; ``timeout`` for the whole call; the body read up to ``max_response_bytes``. Every
failure raises :class:`~mail.stdlib._kit.ActionFailed` with the text the agent sees, naming
the setting that refused it.
"""

from __future__ import annotations

from typing import Any

from mail.config import StdlibHTTPConfig
from mail.errors import AddressRefusedError
from mail.net import (
    Fetched,
    FetchError,
    FetchPolicy,
    FetchTimeoutError,
    ResponseTooLargeError,
    TooManyRedirectsError,
)
from mail.net import fetch as guarded_fetch
from mail.stdlib._kit import ActionFailed
from mail.stdlib._settings import SECTION, policy

__all__ = ["fetch"]

# the setting behind each limit, named in its message
_SETTINGS: dict[type[FetchError], str] = {
    FetchTimeoutError: "timeout",
    ResponseTooLargeError: "max_response_bytes",
}


async def fetch(
    method: str,
    url: str,
    settings: StdlibHTTPConfig,
    *,
    headers: dict[str, str] | None = None,
    json_body: Any = None,
) -> Fetched:
    """Send ``method url`` (with ``headers`` and ``json_body`` as JSON, if not ``None``),
    following redirects; return the final response, whatever its status.

    Raises:
        ActionFailed: the URL, a redirect or an address is refused, the call timed out or
            failed, the body is larger than ``max_response_bytes``.
    """
    limits = FetchPolicy(
        addresses=policy(settings),
        timeout=settings.timeout,
        max_bytes=settings.max_response_bytes,
        max_redirects=settings.max_redirects,
        schemes=("http", "https"),
    )
    try:
        return await guarded_fetch(url, limits, method=method, headers=headers, json_body=json_body)
    except AddressRefusedError as e:
        raise ActionFailed(_refusal(e)) from None
    except FetchError as e:
        raise ActionFailed(_worded(e)) from None


def _refusal(error: AddressRefusedError) -> str:
    if error.rule in ("loopback", "private"):
        return f"{error}; or set allow_{error.rule} = true in {SECTION}"
    return str(error)


def _worded(error: FetchError) -> str:
    if isinstance(error, TooManyRedirectsError):
        return (
            f"more than {error.max_redirects} redirects (max_redirects in {SECTION}); "
            f"the last one was to {error.last}"
        )
    setting = _SETTINGS.get(type(error))
    return str(error) if setting is None else f"{error} ({setting} in {SECTION})"
