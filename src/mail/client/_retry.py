"""Sending ``POST /message`` again when its answer was lost (docs/client.md, "Retries").

A repeated ``POST /message`` is answered by the server as the first one was and never runs
twice, as long as the repeat carries the same idempotency handle: the ``task_id`` of a new
task, the ``Idempotency-Key`` header of a follow-up (docs/http-api.md, "Retries"). So
:class:`~mail.client.MAILClient` draws both once per call (:func:`new_task_id`,
:func:`new_idempotency_key`) and sends them with every attempt. This module decides which
failures are worth another attempt (:func:`retryable`), how long to wait first
(:func:`retry_delay`), and whether a request that failed may still have reached the
server (:func:`may_have_arrived`), in which case the client cancels its task when it gives up.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import TYPE_CHECKING, Literal, TypeVar

import aiohttp

from mail.errors import MAILClientError

if TYPE_CHECKING:
    from mail.config import ClientConfig

__all__ = [
    "IDEMPOTENCY_HEADER",
    "MAX_RETRY_AFTER",
    "TRANSIENT_STATUSES",
    "identify",
    "may_have_arrived",
    "new_idempotency_key",
    "new_task_id",
    "parse_retry_after",
    "retry_delay",
    "retryable",
    "with_retries",
]

logger = logging.getLogger("mail.client")

T = TypeVar("T")

#: The header that marks a follow-up's repeats as one request (the server's name for it).
IDEMPOTENCY_HEADER = "Idempotency-Key"
#: Statuses of a gateway or a server that may answer differently a moment later.
TRANSIENT_STATUSES = frozenset(
    {HTTPStatus.BAD_GATEWAY, HTTPStatus.SERVICE_UNAVAILABLE, HTTPStatus.GATEWAY_TIMEOUT}
)
#: The longest ``Retry-After`` honoured, in seconds (a longer one waits this long).
MAX_RETRY_AFTER = 60.0


def new_task_id() -> str:
    """A task id as the server makes them (``mail.core.message.new_task_id``, not imported:
    the client loads no runtime): a version 4 uuid that starts with the time in
    milliseconds, so the stores' indexes grow at their end."""
    value = (time.time_ns() // 1_000_000 & 0xFFFF_FFFF_FFFF) << 80 | secrets.randbits(80)
    return str(uuid.UUID(int=value, version=4))


def new_idempotency_key() -> str:
    """A fresh ``Idempotency-Key`` for one follow-up (a random uuid)."""
    return str(uuid.uuid4())


def identify(
    task_id: str | None, resume_from: Literal["user_response", "breakpoint_tool_call"] | None
) -> tuple[str | None, dict[str, str] | None]:
    """A call's idempotency handles, drawn once and sent with every attempt: the id of a
    new task (drawn when none is given) and, for a follow-up, an ``Idempotency-Key``
    header."""
    if resume_from is not None:
        return task_id, {IDEMPOTENCY_HEADER: new_idempotency_key()}
    return task_id if task_id is not None else new_task_id(), None


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    task_id: str | None,
    config: ClientConfig,
    abandon: Callable[[str], Awaitable[None]],
) -> T:
    """``await attempt()``, again after a lost connection or a 502/503/504 (at most
    ``config.retries`` more times, ``config.retry_backoff`` apart, doubled each time);
    when it fails for good and may have reached the server, ``await abandon(task_id)``
    (which cancels the task) before raising the :class:`MAILClientError`."""
    tries = 0
    while True:
        try:
            return await attempt()
        except MAILClientError as e:
            tries += 1
            if tries <= config.retries and retryable(e, idempotent=task_id is not None):
                delay = retry_delay(e, tries, config.retry_backoff)
                logger.info(
                    "POST /message of task %s failed (%s); sent again in %g s (retry %d of %d)",
                    task_id,
                    e,
                    delay,
                    tries,
                    config.retries,
                )
                await asyncio.sleep(delay)
                continue
            if task_id is not None and may_have_arrived(e):
                await abandon(task_id)
            raise


def _lost(error: MAILClientError) -> bool:
    # the connection failed (reset, closed before the answer, refused, a cut body), as
    # opposed to a timeout: the call's time budget is spent, so it is not tried again
    cause = error.__cause__
    return isinstance(cause, aiohttp.ClientError) and not isinstance(cause, TimeoutError)


def _never_sent(error: MAILClientError) -> bool:
    # no connection was made: the server cannot have seen the request
    return isinstance(error.__cause__, aiohttp.ClientConnectorError) and not isinstance(
        error.__cause__, TimeoutError
    )


def retryable(error: MAILClientError, *, idempotent: bool) -> bool:
    """Whether ``error`` is worth sending the request again: a lost connection or a
    502/503/504 answer. Without an idempotency handle (``idempotent`` false) only when the
    request surely never reached the server (no connection was made)."""
    if not idempotent:
        return error.status is None and _never_sent(error)
    if error.status is None:
        return _lost(error)
    return error.status in TRANSIENT_STATUSES


def may_have_arrived(error: MAILClientError) -> bool:
    """Whether the server may have taken the request that failed with ``error``: no answer
    came (a dropped connection, a timeout) or a gateway's 502/503/504 came instead."""
    if error.status is None:
        return not _never_sent(error)
    return error.status in TRANSIENT_STATUSES


def retry_delay(error: MAILClientError, attempt: int, backoff: float) -> float:
    """Seconds to wait before attempt number ``attempt + 1``: the server's ``Retry-After``
    (at most :data:`MAX_RETRY_AFTER`), else ``backoff * 2**(attempt - 1)``."""
    if error.retry_after is not None:
        return min(error.retry_after, MAX_RETRY_AFTER)
    return backoff * 2.0 ** (attempt - 1)


def parse_retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` header as seconds from now (delay seconds or an HTTP date);
    ``None`` when absent or unreadable."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    seconds: float = when.timestamp() - time.time()
    return max(0.0, seconds)
