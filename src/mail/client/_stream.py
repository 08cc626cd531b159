"""Transport errors and resumable event streams for :mod:`mail.client`.

:func:`transport_error` is the one translation of an aiohttp failure into
:class:`~mail.errors.MAILClientError`. :class:`EventStream` reads one task's server-sent
events from an open response with :class:`~mail.client._sse.SSEParser`. When the
connection drops before the task's final ``task_complete``/``task_error`` event, it asks
its ``reopen`` callback for ``GET /tasks/{task_id}/events`` after the id of the last
stored event it yielded (``Last-Event-ID``), so each event is yielded exactly once. A
stream that ends with a ``storage_error`` event without an ``id`` (the task's turn ended
but the server's store has not committed it: its closing event is held back) is reopened
the same way once the event's ``retry_after`` seconds have passed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from http import HTTPStatus
from types import TracebackType

import aiohttp

from mail.client._retry import MAX_RETRY_AFTER, TRANSIENT_STATUSES, parse_retry_after
from mail.client._sse import ServerSentEvent, SSEParser
from mail.errors import MAILClientError

__all__ = [
    "DROPS",
    "FINAL_EVENTS",
    "EventStream",
    "GiveUp",
    "Reopen",
    "held_for",
    "status_error",
    "transport_error",
]

logger = logging.getLogger("mail.client")

#: What a broken connection raises while a body is read (a read timeout included).
DROPS: tuple[type[BaseException], ...] = (
    aiohttp.ClientPayloadError,
    aiohttp.ClientConnectionError,
    TimeoutError,
)
#: Names of the event that ends a stream (sent without an ``id``).
FINAL_EVENTS = frozenset({"task_complete", "task_error"})
#: The event that, sent without an ``id``, says the closing event is held back.
_HELD = "storage_error"

#: ``await reopen(last_event_id)`` opens the task's event stream after that event.
Reopen = Callable[[str], Awaitable[aiohttp.ClientResponse]]
#: ``await give_up()`` runs once when a stream breaks for good (before the error is raised).
GiveUp = Callable[[], Awaitable[None]]


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


async def status_error(response: aiohttp.ClientResponse) -> MAILClientError:
    """The :class:`MAILClientError` for a non-2xx ``response``: its status, the server's
    ``{"detail"}`` (else the reason phrase) and its ``Retry-After``."""
    try:
        raw = await response.read()
    except (aiohttp.ClientError, TimeoutError):
        raw = b""
    detail: str | None = None
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and "detail" in body:
        value = body["detail"]
        detail = value if isinstance(value, str) else json.dumps(value)
    if not detail:
        detail = response.reason or _phrase(response.status)
    retry_after = parse_retry_after(response.headers.get("Retry-After"))
    return MAILClientError(detail, status=response.status, retry_after=retry_after)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "HTTP error"


def _transient(error: MAILClientError) -> bool:
    # a network failure (chained aiohttp error) or a gateway answer may pass; a refusal won't
    if error.status is None:
        return isinstance(error.__cause__, aiohttp.ClientError | TimeoutError)
    return error.status in TRANSIENT_STATUSES


def _is_final(event: ServerSentEvent) -> bool:
    # a stored task_error has an id; only the stream's own closing event has none
    return event.event in FINAL_EVENTS and event.id is None


def held_for(event: ServerSentEvent) -> float | None:
    """For a ``storage_error`` event without an ``id`` (the task's turn ended, but the
    server holds its closing event back until its store committed the task): the seconds
    to wait before asking again (its ``extra_data.retry_after``, 1 when missing, at most
    :data:`~mail.client._retry.MAX_RETRY_AFTER`). ``None`` for any other event."""
    if event.event != _HELD or event.id is not None:
        return None
    try:
        extra = event.json().get("extra_data") or {}
        wait = float(extra.get("retry_after", 1))
    except (ValueError, TypeError, AttributeError):
        wait = 1.0
    return min(max(wait, 0.0), MAX_RETRY_AFTER)


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
    id is not above the last one yielded are skipped, so none repeats. A body that ends
    with a ``storage_error`` event without an ``id`` (yielded like any event: the turn
    ended, but the server holds the closing event back until its store committed the
    task) is reopened after the event's ``retry_after`` seconds, at most ``attempts``
    times in all. Iterating raises :class:`~mail.errors.MAILClientError` when the
    connection drops without resume, when the attempts are used up, or when a reconnect
    is refused (e.g. 401, 404, or the client was closed); ``give_up`` is awaited first
    (:meth:`MAILClient.post_message_stream` cancels its task there). Without resume, a
    body that ends before the final event just ends the iteration.

    Attributes:
        task_id: the task whose events these are (``None`` if unknown).
        last_event_id: id of the last stored event yielded (or where the stream started).
        final: the final event once it arrived, else ``None``.
        reconnects: how many times the stream was reopened.
        holds: how many times the server held the closing event back.
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
        give_up: GiveUp | None = None,
        ignore_pings: bool = False,
        attempts: int = 5,
        backoff: float = 0.1,
    ) -> None:
        self.task_id = task_id
        self.last_event_id = last_event_id
        self.final: ServerSentEvent | None = None
        self.reconnects = 0
        self.holds = 0
        self._response: aiohttp.ClientResponse | None = response
        self._url = url
        self._timeout = timeout
        self._reopen = reopen
        self._give_up = give_up
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
        try:
            async with aclosing(self._follow()) as events:
                async for event in events:
                    yield event
        except MAILClientError:
            if self._give_up is not None:
                await self._give_up()
            raise

    async def _follow(self) -> AsyncGenerator[ServerSentEvent, None]:
        failures = 0
        while True:
            cause: BaseException | None = None
            held: float | None = None  # the body ended with a held-back closing event
            try:
                async with aclosing(self._read()) as events:
                    async for event in events:
                        failures = 0
                        held = held_for(event)
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
            held = held if cause is None else None
            failures = await self._reconnect(self._reopen, failures, cause, held)

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

    async def _reconnect(
        self, reopen: Reopen, failures: int, cause: BaseException | None, held: float | None
    ) -> int:
        """Reopen the stream after :attr:`last_event_id` (``held`` seconds after the server
        held the closing event back); return the failures counted so far."""
        if held is not None:
            self._count_hold()
        while True:
            if self.last_event_id is None:
                raise MAILClientError(
                    f"the event stream of task {self.task_id!r} from {self._url} broke before "
                    "its first event; it cannot be resumed without repeating events"
                ) from cause
            if held is None:
                failures += 1
                if failures > self._attempts:
                    reason = str(cause) if cause is not None else "the body ended early"
                    raise MAILClientError(
                        f"the event stream of task {self.task_id!r} from {self._url} broke and "
                        f"{self._attempts} reconnects failed: {reason or type(cause).__name__}"
                    ) from cause
                wait = self._backoff * 2 ** (failures - 1)
                logger.info(
                    "event stream of task %s dropped; reconnecting after event %s (attempt %d)",
                    self.task_id,
                    self.last_event_id,
                    failures,
                )
            else:
                wait, held = held, None
                logger.info(
                    "task %s ended but is not stored yet; asking again in %g s",
                    self.task_id,
                    wait,
                )
            await asyncio.sleep(wait)
            try:
                self._response = await reopen(self.last_event_id)
            except MAILClientError as e:
                if not _transient(e):
                    raise
                cause = e
                continue
            self.reconnects += 1
            return failures

    def _count_hold(self) -> None:
        self.holds += 1
        if self.holds > self._attempts:
            raise MAILClientError(
                f"task {self.task_id!r} ended, but {self._url} still holds its answer back "
                f"after {self._attempts} tries (its store has not committed the task): ask "
                f"again later (GET /tasks/{{task_id}}/events, Last-Event-ID "
                f"{self.last_event_id})"
            )
