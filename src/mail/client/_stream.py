"""Transport errors and resumable event streams for :mod:`mail.client`.

:func:`transport_error` is the one translation of an aiohttp failure into
:class:`~mail.errors.MAILClientError`. :class:`EventStream` reads one task's server-sent
events from an open response with :class:`~mail.client._sse.SSEParser`. When the
connection drops before the task's final ``task_complete``/``task_error`` event, it asks
its ``reopen`` callback for ``GET /tasks/{task_id}/events`` after the id of the last
stored event it yielded (``Last-Event-ID``), so each event is yielded exactly once.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from http import HTTPStatus
from types import TracebackType

import aiohttp

from mail.client._sse import ServerSentEvent, SSEParser
from mail.errors import MAILClientError

__all__ = ["DROPS", "FINAL_EVENTS", "EventStream", "Reopen", "new_task_id", "transport_error"]

logger = logging.getLogger("mail.client")

#: What a broken connection raises while a body is read (a read timeout included).
DROPS: tuple[type[BaseException], ...] = (
    aiohttp.ClientPayloadError,
    aiohttp.ClientConnectionError,
    TimeoutError,
)
#: Names of the event that ends a stream (sent without an ``id``).
FINAL_EVENTS = frozenset({"task_complete", "task_error"})
# Statuses a reconnect may meet while a server or proxy restarts: try again.
_TRANSIENT = frozenset(
    {HTTPStatus.BAD_GATEWAY, HTTPStatus.SERVICE_UNAVAILABLE, HTTPStatus.GATEWAY_TIMEOUT}
)

#: ``await reopen(last_event_id)`` opens the task's event stream after that event.
Reopen = Callable[[str], Awaitable[aiohttp.ClientResponse]]


def transport_error(error: BaseException, url: str, timeout: float | None) -> MAILClientError:
    """The :class:`MAILClientError` for an aiohttp failure talking to ``url`` (raise it ``from``)."""
    if isinstance(error, MAILClientError):
        return error
    if isinstance(error, aiohttp.ClientResponseError):  # a session with raise_for_status
        return MAILClientError(error.message or "request failed", status=error.status)
    if isinstance(error, TimeoutError):
        within = f" within {timeout:g} s" if timeout is not None else ""
        return MAILClientError(f"cannot reach {url}: no answer{within}")
    text = str(error) or type(error).__name__
    if isinstance(error, aiohttp.ClientConnectionError):
        return MAILClientError(f"cannot reach {url}: {text}")
    return MAILClientError(f"request to {url} failed: {text}")


def _transient(error: MAILClientError) -> bool:
    # a network failure (chained aiohttp error) or a gateway answer may pass; a refusal won't
    if error.status is None:
        return isinstance(error.__cause__, aiohttp.ClientError | TimeoutError)
    return error.status in _TRANSIENT


def _is_final(event: ServerSentEvent) -> bool:
    # a stored task_error has an id; only the stream's own closing event has none
    return event.event in FINAL_EVENTS and event.id is None


def _seq(event_id: str | None) -> int | None:
    return int(event_id) if event_id is not None and event_id.isdigit() else None


class EventStream:
    """The server-sent events of one task, as an async iterator of :class:`ServerSentEvent`.

    Returned by :meth:`MAILClient.post_message_stream` and :meth:`MAILClient.task_events`.
    Iterate it with ``async for``; it ends after the final ``task_complete`` or
    ``task_error`` event (kept in :attr:`final`). Use it as an async context manager, or
    call :meth:`aclose`, to stop early and close the connection.

    With resume on, a dropped connection (reset, cut body, read timeout) or a body that
    ends before the final event is reopened up to ``attempts`` times in a row (with
    backoff ``backoff * 2**n`` seconds) after :attr:`last_event_id`; stored events whose
    id is not above the last one yielded are skipped, so none repeats. Iterating raises
    :class:`~mail.errors.MAILClientError` when the connection drops without resume, when
    the attempts are used up, or when a reconnect is refused (e.g. 401, 404, or the client
    was closed); without resume, a body that ends before the final event just ends the
    iteration.

    Attributes:
        task_id: the task whose events these are (``None`` if unknown).
        last_event_id: id of the last stored event yielded (or where the stream started).
        final: the final event once it arrived, else ``None``.
        reconnects: how many times the stream was reopened.
    """

    def __init__(
        self,
        response: aiohttp.ClientResponse,
        *,
        url: str,
        timeout: float | None,
        task_id: str | None = None,
        last_event_id: str | None = None,
        reopen: Reopen | None = None,
        ignore_pings: bool = False,
        attempts: int = 5,
        backoff: float = 0.1,
    ) -> None:
        self.task_id = task_id
        self.last_event_id = last_event_id
        self.final: ServerSentEvent | None = None
        self.reconnects = 0
        self._response: aiohttp.ClientResponse | None = response
        self._url = url
        self._timeout = timeout
        self._reopen = reopen
        self._ignore_pings = ignore_pings
        self._attempts = attempts
        self._backoff = backoff
        self._last_seq = _seq(last_event_id)
        self._events = self._run()

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> ServerSentEvent:
        return await self._events.__anext__()

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop reading and close the connection (safe to call more than once)."""
        await self._events.aclose()
        self._drop()

    def _drop(self) -> None:
        if self._response is not None:
            self._response.close()
            self._response = None

    async def _run(self) -> AsyncGenerator[ServerSentEvent, None]:
        failures = 0
        while True:
            cause: BaseException | None = None
            try:
                async with aclosing(self._read()) as events:
                    async for event in events:
                        failures = 0
                        if _is_final(event):
                            self.final = event
                        if not (self._ignore_pings and event.event == "ping"):
                            yield event
                        if self.final is not None:
                            return
            except DROPS as e:
                cause = e
            finally:
                self._drop()
            if self._reopen is None:
                if cause is not None:
                    raise transport_error(cause, self._url, self._timeout) from cause
                return
            failures = await self._reconnect(self._reopen, failures, cause)

    async def _read(self) -> AsyncGenerator[ServerSentEvent, None]:
        response = self._response
        if response is None:
            return
        parser = SSEParser()
        chunks = response.content.iter_any()
        while True:
            try:
                chunk = await anext(chunks)
            except StopAsyncIteration:
                return
            except RuntimeError as e:
                # aiohttp's reader says "Connection closed." when the connection was closed
                # under it (its session closed); this is its only reader, so that is a drop
                raise aiohttp.ClientConnectionError(str(e)) from e
            for event in parser.feed(chunk):
                seq = _seq(event.id)
                if seq is not None:
                    if self._last_seq is not None and seq <= self._last_seq:
                        continue  # already yielded before a reconnect
                    self._last_seq = seq
                if event.id is not None:
                    self.last_event_id = event.id
                yield event

    async def _reconnect(self, reopen: Reopen, failures: int, cause: BaseException | None) -> int:
        """Reopen the stream after :attr:`last_event_id`; return the failures counted so far."""
        while True:
            failures += 1
            if self.last_event_id is None:
                raise MAILClientError(
                    f"the event stream of task {self.task_id!r} from {self._url} broke before "
                    "its first event; it cannot be resumed without repeating events"
                ) from cause
            if failures > self._attempts:
                reason = str(cause) if cause is not None else "the body ended early"
                raise MAILClientError(
                    f"the event stream of task {self.task_id!r} from {self._url} broke and "
                    f"{self._attempts} reconnects failed: {reason or type(cause).__name__}"
                ) from cause
            logger.info(
                "event stream of task %s dropped; reconnecting after event %s (attempt %d)",
                self.task_id,
                self.last_event_id,
                failures,
            )
            await asyncio.sleep(self._backoff * 2 ** (failures - 1))
            try:
                self._response = await reopen(self.last_event_id)
            except MAILClientError as e:
                if not _transient(e):
                    raise
                cause = e
                continue
            self.reconnects += 1
            return failures


def new_task_id() -> str:
    """A task id as the server makes them (``mail.core.message.new_task_id``, not imported:
    the client loads no runtime): a version 4 uuid that starts with the time in
    milliseconds, so the stores' indexes grow at their end."""
    value = (time.time_ns() // 1_000_000 & 0xFFFF_FFFF_FFFF) << 80 | secrets.randbits(80)
    return str(uuid.UUID(int=value, version=4))
