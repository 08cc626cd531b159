"""The router's HTTP call to a peer: one JSON ``POST``, retried, every failure named.

Connection errors and 5xx answers are retried with exponential backoff (the receiver
deduplicates by message id, so a delivery that reached it before the connection dropped
runs once). A 4xx answer is final, and so is a timeout: a peer that is too slow does not
get faster by being asked again, and the sender's wait stays bounded by the timeout. An
address the session's policy refuses is final too, and says which rule refused it; a
connection error is told without the socket's words (they are logged).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from mail._limits import loads
from mail.errors import AddressRefusedError, RemoteSwarmUnavailableError
from mail.net._peer_http import MAX_BODY, describe
from mail.net._session import SessionSource

__all__ = ["DeliveryError", "JsonPoster"]

logger = logging.getLogger("mail.net.router")

_DETAIL_CHARS = 200


class DeliveryError(RemoteSwarmUnavailableError):
    """A POST to a peer failed; ``status`` is its HTTP status when it answered."""

    def __init__(self, problem: str, *, status: int | None = None, attempts: int = 1) -> None:
        self.status = status
        self.attempts = attempts
        super().__init__(problem)


def _detail(raw: bytes) -> str:
    try:
        data = loads(raw)
    except ValueError:
        text = raw.decode("utf-8", "replace").strip()
    else:
        detail = data.get("detail") if isinstance(data, dict) else None
        text = detail if isinstance(detail, str) else json.dumps(data)
    text = text[:_DETAIL_CHARS]
    return f": {text}" if text else ""


class JsonPoster:
    """POSTs JSON over the session of a source the caller provides (see :meth:`post_json`)."""

    def __init__(
        self,
        source: SessionSource,
        *,
        timeout: float,
        retries: int,
        backoff: float,
        user_agent: str,
    ) -> None:
        self.source = source
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.user_agent = user_agent

    async def _once(
        self, url: str, data: bytes, token: str, timeout: float, extra: Mapping[str, str]
    ) -> tuple[int, bytes]:
        import aiohttp  # noqa: PLC0415  # imported with the first peer call (see SessionSource)

        headers = {
            **extra,
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "User-Agent": self.user_agent,
        }
        async with self.source.get().post(
            url, data=data, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)
        ) as response:
            return response.status, await response.content.read(MAX_BODY + 1)

    async def post_json(
        self,
        url: str,
        body: Any,
        token: str,
        *,
        timeout: float | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """POST ``body`` as JSON with ``Authorization: Bearer <token>`` (and ``headers``,
        e.g. the trace's ``traceparent``); the decoded answer.

        Only HTTP 200 is success. Raises :class:`DeliveryError` naming the URL and what
        went wrong: an address the policy refuses, no connection (after the retries), a
        timeout, an error status, or an answer that is not JSON or larger than 1 MiB.
        """
        import aiohttp  # noqa: PLC0415  # imported with the first peer call (see SessionSource)

        limit = self.timeout if timeout is None else timeout
        data = json.dumps(body).encode()
        problem, status = "", None
        for attempt in range(1, self.retries + 2):
            try:
                status, raw = await self._once(url, data, token, limit, headers or {})
            except TimeoutError as e:
                raise DeliveryError(
                    f"{url} did not answer within {limit:g} s", attempts=attempt
                ) from e
            except AddressRefusedError as e:
                raise DeliveryError(str(e), attempts=attempt) from e
            except aiohttp.ClientError as e:
                logger.warning("POST %s failed: %s", url, describe(e))
                problem, status = f"cannot reach {url}", None
            else:
                if status == HTTPStatus.OK:
                    return self._decode(url, raw, attempt)
                problem = f"{url} answered HTTP {status}{_detail(raw)}"
                if status < HTTPStatus.INTERNAL_SERVER_ERROR:
                    raise DeliveryError(problem, status=status, attempts=attempt)
            if attempt <= self.retries:
                await asyncio.sleep(self.backoff * 2 ** (attempt - 1))
        attempts = self.retries + 1
        raise DeliveryError(f"{problem} ({attempts} attempts)", status=status, attempts=attempts)

    @staticmethod
    def _decode(url: str, raw: bytes, attempt: int) -> Any:
        if len(raw) > MAX_BODY:
            raise DeliveryError(f"{url} answered more than {MAX_BODY} bytes", attempts=attempt)
        try:
            return loads(raw)
        except ValueError as e:
            raise DeliveryError(f"{url} did not answer JSON", attempts=attempt) from e
