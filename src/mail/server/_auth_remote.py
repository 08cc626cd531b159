"""API keys checked by an external auth service: login, then token info."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from mail.errors import (
    AuthenticationError,
    AuthServiceError,
)
from mail.net import SessionSource
from mail.server._auth_types import ROLES, Caller, key_digest, key_fingerprint

if TYPE_CHECKING:
    import aiohttp

__all__ = ["RemoteAuth"]

logger = logging.getLogger("mail.server.auth")

# --- remote --------------------------------------------------------------------------------

_LOGIN_FAILED = "failed to authenticate user or agent with API key"
_INFO_FAILED = "failed to get token info"


class RemoteAuth:
    """The original's two-step exchange against an external auth service, made cheap.

    ``POST auth_endpoint`` with ``Authorization: Bearer <api key>`` must answer 200
    ``{"token": ...}``; ``GET token_info_endpoint`` with ``Bearer <token>`` must answer 200
    ``{"role": "admin"|"user"|"agent", "id": ..., "api_key": ...}``. Each call is bounded by
    ``timeout`` seconds over one shared ``aiohttp.ClientSession`` (``session`` if given, else
    created lazily and closed by :meth:`aclose`). Successful lookups are cached for
    ``cache_seconds`` (by the key's SHA-256, at most ``max_cache_entries``, oldest evicted
    first; 0 disables the cache); failures are never cached. Concurrent lookups of one
    uncached key share a single exchange. ``clock`` is the monotonic time source (tests
    inject a fake one).
    """

    def __init__(
        self,
        auth_endpoint: str,
        token_info_endpoint: str,
        *,
        timeout: float = 10.0,
        cache_seconds: float = 30.0,
        session: aiohttp.ClientSession | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_cache_entries: int = 10_000,
    ) -> None:
        self._auth_endpoint = auth_endpoint
        self._token_info_endpoint = token_info_endpoint
        self._timeout = timeout
        self._cache_seconds = cache_seconds
        self._sessions = SessionSource(session)
        self._clock = clock
        self._max_cache_entries = max(1, max_cache_entries)
        self._cache: OrderedDict[bytes, tuple[float, Caller]] = OrderedDict()
        self._inflight: dict[bytes, asyncio.Task[Caller]] = {}
        self._closed = False

    async def authenticate(self, api_key: str) -> Caller:
        """Return the caller the auth service says owns ``api_key`` (cached briefly).

        Raises :class:`~mail.errors.AuthenticationError` (``"invalid API key"`` when login
        answers 401, ``"invalid token"`` when token info does) and
        :class:`~mail.errors.AuthServiceError` for any other status, a network error, a
        timeout, a malformed answer, or after :meth:`aclose`: its message is one of the two
        the contract documents (``"failed to authenticate user or agent with API key"``
        for the login step, ``"failed to get token info"`` for the token-info step); the
        cause goes to the log.
        """
        if self._closed:
            logger.warning("auth lookup after the authenticator was closed")
            raise AuthServiceError(_LOGIN_FAILED)
        if not api_key:
            raise AuthenticationError("invalid API key")
        digest = key_digest(api_key)
        hit = self._cache.get(digest)
        if hit is not None:
            expires, caller = hit
            if self._clock() < expires:
                return caller
            del self._cache[digest]
        task = self._inflight.get(digest)
        if task is None:
            task = asyncio.create_task(
                self._exchange(api_key, digest), name=f"auth-exchange:{key_fingerprint(api_key)}"
            )
            self._inflight[digest] = task
            task.add_done_callback(partial(self._exchange_done, digest))
        # Shielded: a caller that goes away must not cancel the lookup others are awaiting.
        return await asyncio.shield(task)

    async def aclose(self) -> None:
        """Cancel in-flight lookups and close the session if this instance created it."""
        self._closed = True
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._cache.clear()
        await self._sessions.aclose()

    def _exchange_done(self, digest: bytes, task: asyncio.Task[Caller]) -> None:
        if self._inflight.get(digest) is task:
            del self._inflight[digest]
        if not task.cancelled():
            task.exception()  # retrieved here so an unawaited failure is not reported as lost

    async def _exchange(self, api_key: str, digest: bytes) -> Caller:
        login = await self._call(
            self._auth_endpoint, "POST", api_key, "invalid API key", _LOGIN_FAILED
        )
        token = login.get("token")
        if not isinstance(token, str) or not token:
            logger.warning("auth service login answer has no token (%s)", self._auth_endpoint)
            raise AuthServiceError(_LOGIN_FAILED)
        info = await self._call(
            self._token_info_endpoint, "GET", token, "invalid token", _INFO_FAILED
        )
        caller = self._caller_from(info, api_key)
        if self._cache_seconds > 0:
            self._cache[digest] = (self._clock() + self._cache_seconds, caller)
            self._cache.move_to_end(digest)
            while len(self._cache) > self._max_cache_entries:
                self._cache.popitem(last=False)
        return caller

    async def _call(
        self, url: str, method: str, bearer: str, invalid: str, failure: str
    ) -> dict[str, Any]:
        """One request to the auth service; the JSON object it answered with 200."""
        import aiohttp  # noqa: PLC0415  # remote auth only: no aiohttp import at start-up

        timeout = aiohttp.ClientTimeout(total=self._timeout)
        try:
            async with self._sessions.get().request(
                method, url, headers={"Authorization": f"Bearer {bearer}"}, timeout=timeout
            ) as response:
                status = response.status
                body = await response.read() if status == HTTPStatus.OK else b""
        except (aiohttp.ClientError, TimeoutError) as e:
            logger.warning("auth service %s %s failed: %s %s", method, url, type(e).__name__, e)
            raise AuthServiceError(failure) from e
        if status == HTTPStatus.UNAUTHORIZED:
            logger.info(
                "auth service %s %s rejected sha256 %s", method, url, key_fingerprint(bearer)
            )
            raise AuthenticationError(invalid)
        if status != HTTPStatus.OK:
            logger.warning("auth service %s %s answered HTTP %d", method, url, status)
            raise AuthServiceError(failure)
        try:
            data = json.loads(body)
        except ValueError as e:
            logger.warning("auth service %s %s answered with invalid JSON", method, url)
            raise AuthServiceError(failure) from e
        if not isinstance(data, dict):
            logger.warning("auth service %s %s answered with a non-object", method, url)
            raise AuthServiceError(failure)
        return data

    def _caller_from(self, info: dict[str, Any], api_key: str) -> Caller:
        role, id_, key = info.get("role"), info.get("id"), info.get("api_key")
        if role not in ROLES or not isinstance(id_, str) or not id_:
            logger.warning(
                "auth service token info (%s) lacks a valid role or id", self._token_info_endpoint
            )
            raise AuthServiceError(_INFO_FAILED)
        return Caller(role=role, id=id_, api_key=key if isinstance(key, str) and key else api_key)
