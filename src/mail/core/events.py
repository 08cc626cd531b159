"""Task events: the event vocabulary, the event record and the per-task event log.

Every event carries a per-task sequence number (1, 2, 3, ...) and is appended to its
task's :class:`EventLog` before anyone sees it. SSE streams, ``show_events``, the task
endpoints and the UI all read the log through :meth:`EventLog.follow` or
:meth:`EventLog.since`, so a reader that reconnects with the last sequence number it saw
resumes without loss or repetition.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from enum import StrEnum
from typing import Any, Protocol

from mail.core.message import utc_timestamp

__all__ = [
    "EventName",
    "STREAM_ONLY_EVENTS",
    "MAILEvent",
    "EventLog",
    "LogListener",
]


class EventName(StrEnum):
    """Event names exactly as they travel on the wire."""

    NEW_MESSAGE = "new_message"
    TOOL_CALL = "tool_call"
    ACTION_CALL = "action_call"
    ACTION_COMPLETE = "action_complete"
    ACTION_ERROR = "action_error"
    AGENT_ERROR = "agent_error"
    TASK_ERROR = "task_error"
    AWAIT_MESSAGE = "await_message"
    BROADCAST_IGNORED = "broadcast_ignored"
    HELP_CALLED = "help_called"
    BUILTIN_TOOL_CALL = "builtin_tool_call"
    BREAKPOINT_TOOL_CALL = "breakpoint_tool_call"
    BREAKPOINT_ACTION_COMPLETE = "breakpoint_action_complete"
    TASK_COMPLETE_CALL = "task_complete_call"
    TASK_COMPLETE_CALL_DUPLICATE = "task_complete_call_duplicate"
    TASK_COMPLETE = "task_complete"
    TASK_INTERRUPTED = "task_interrupted"
    #: cluster mode: another replica took the task over and runs its turn again
    TASK_TAKEN_OVER = "task_taken_over"
    STORAGE_ERROR = "storage_error"
    INTERSWARM_MESSAGE_SENT = "interswarm_message_sent"
    INTERSWARM_MESSAGE_RECEIVED = "interswarm_message_received"
    INTERSWARM_MESSAGE_ERROR = "interswarm_message_error"
    RUN_LOOP_CANCELLED = "run_loop_cancelled"
    RUN_LOOP_ERROR = "run_loop_error"
    SHUTDOWN_REQUESTED = "shutdown_requested"
    PING = "ping"
    TOKEN_DELTA = "token_delta"  # noqa: S105  # an event name, not a secret


#: Events that only exist on a stream and are never stored in a task's log.
STREAM_ONLY_EVENTS = frozenset({EventName.PING, EventName.TOKEN_DELTA})


class MAILEvent:
    """One event of a task.

    ``seq`` is the per-task sequence number (``None`` for stream-only events such as
    pings and the stream's final ``task_complete``/``task_error``). ``data()`` gives the
    wire ``data`` object: ``{timestamp, description, task_id, extra_data}`` for stored
    events, or the explicit ``payload`` for stream-only ones. ``timestamp`` (ISO-8601
    UTC) is the time of creation unless given.
    """

    __slots__ = (
        "description",
        "event",
        "extra_data",
        "payload",
        "rendering",
        "seq",
        "task_id",
        "timestamp",
    )

    def __init__(
        self,
        event: str,
        task_id: str,
        description: str = "",
        extra_data: dict[str, Any] | None = None,
        timestamp: str | None = None,
        seq: int | None = None,
        payload: dict[str, Any] | None = None,
    ) -> None:
        self.event = event
        self.task_id = task_id
        self.description = description
        self.extra_data = {} if extra_data is None else extra_data
        self.timestamp = utc_timestamp() if timestamp is None else timestamp
        self.seq = seq
        self.payload = payload
        #: a ``new_message`` event's message as the runtime rendered it for its agent (the
        #: end of ``description``), kept so that the store does not render it again; never
        #: sent nor stored
        self.rendering: str | None = None

    def data(self) -> dict[str, Any]:
        """Return the ``data`` object sent for this event."""
        if self.payload is not None:
            return self.payload
        return {
            "timestamp": self.timestamp,
            "description": self.description,
            "task_id": self.task_id,
            "extra_data": self.extra_data,
        }

    def __repr__(self) -> str:
        return f"MAILEvent(seq={self.seq}, event={self.event!r}, task_id={self.task_id!r})"

    @classmethod
    def stream_final(
        cls,
        name: str,
        task_id: str,
        response: str,
        *,
        status: str | None = None,
        usage: dict[str, int] | None = None,
        stored: MAILEvent | None = None,
        budget: dict[str, Any] | None = None,
    ) -> MAILEvent:
        """Build the stream's closing ``task_complete`` or ``task_error`` event; ``status``
        (``completed``, ``waiting_breakpoint``, ``failed`` or ``cancelled``) and the task's
        token ``usage`` (and its ``budget``: limits, spent, remaining) are added to its data
        when given. With ``stored``, the stored event
        that ended the turn, the closing event stands for it: it takes its ``timestamp``
        and tells its sequence number as ``seq`` in its data (the closing event itself
        keeps no ``id``: clients know the end of a stream by it)."""
        ts = utc_timestamp() if stored is None else stored.timestamp
        payload: dict[str, Any] = {"timestamp": ts, "task_id": task_id, "response": response}
        if stored is not None and stored.seq is not None:
            payload["seq"] = stored.seq
        if status is not None:
            payload["status"] = status
        if usage is not None:
            payload["usage"] = dict(usage)
        if budget is not None:
            payload["budget"] = budget
        return cls(event=name, task_id=task_id, timestamp=ts, payload=payload)

    @classmethod
    def ping(cls, task_id: str) -> MAILEvent:
        """Build a heartbeat ``ping`` event."""
        ts = utc_timestamp()
        payload = {"timestamp": ts, "task_id": task_id}
        return cls(event=EventName.PING, task_id=task_id, timestamp=ts, payload=payload)


class LogListener(Protocol):
    """Told when a task's log gets events (the runtime's store recorder)."""

    def events_added(self, log: EventLog) -> None: ...


class EventLog:
    """Append-only, ordered events of one task, readable by any number of followers.

    ``events`` are events loaded back from a store (with their sequence numbers); the
    ``listener`` is told of every append. Besides the stored events, a side channel
    carries ephemeral events (:meth:`publish`) to the readers following the log right now.
    """

    __slots__ = (
        "_events",
        "_first_seq",
        "_waiters",
        "committed_seq",
        "followers",
        "listener",
        "live_readers",
        "stored_seq",
        "task_id",
    )

    def __init__(
        self,
        task_id: str,
        events: list[MAILEvent] | None = None,
        listener: LogListener | None = None,
    ) -> None:
        self.task_id = task_id
        self._events: list[MAILEvent] = list(events or ())
        self._first_seq = (self._events[0].seq or 1) if self._events else 1
        # one future per reader waiting in wait(), resolved by the next append
        self._waiters: list[asyncio.Future[None]] = []
        #: one queue per live reader of :meth:`follow`: (last stored seq, ephemeral event)
        self.live_readers: list[deque[tuple[int, MAILEvent]]] = []
        #: readers inside :meth:`follow` right now
        self.followers = 0
        self.listener = listener
        #: sequence number of the newest event handed to the store (loaded events are)
        self.stored_seq = self.last_seq
        #: ``None``: followers see every event at once. A number (cluster mode): followers
        #: see only the events up to it, those the store has committed (:meth:`commit`),
        #: so that no reader is shown an event another replica could number again
        self.committed_seq: int | None = None

    def __len__(self) -> int:
        return len(self._events)

    @property
    def last_seq(self) -> int:
        """Sequence number of the newest event (0 when empty)."""
        return self._first_seq + len(self._events) - 1

    def append(self, event: MAILEvent) -> MAILEvent:
        """Give ``event`` the next sequence number, store it and wake the followers."""
        event.seq = self._first_seq + len(self._events)
        self._events.append(event)
        if self.listener is not None:
            self.listener.events_added(self)
        if self._waiters:
            self._wake()
        return event

    @property
    def visible_seq(self) -> int:
        """Sequence number of the newest event followers may see."""
        return self.last_seq if self.committed_seq is None else self.committed_seq

    def commit(self, seq: int) -> None:
        """The store committed the events up to ``seq``: followers may see them."""
        if self.committed_seq is not None and seq > self.committed_seq:
            self.committed_seq = seq
            if self._waiters:
                self._wake()

    def abandon(self) -> None:
        """Drop the events the store did not commit and wake the followers, so that they
        end (cluster mode: another replica runs the task now and numbers its events)."""
        if self.committed_seq is not None:
            del self._events[max(self.committed_seq - self._first_seq + 1, 0) :]
        if self._waiters:
            self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def emit(
        self, name: str, description: str, extra_data: dict[str, Any] | None = None
    ) -> MAILEvent:
        """Append a new stored event of this task."""
        return self.append(MAILEvent(name, self.task_id, description, extra_data))

    def emit_message(self, prefix: str, rendering: str, message: Mapping[str, Any]) -> MAILEvent:
        """Append a ``new_message`` event of ``message``, described as ``prefix`` and the
        message's rendering (:func:`~mail.core.message.build_mail_xml`'s ``content``, made
        once by the caller)."""
        event = MAILEvent(
            EventName.NEW_MESSAGE, self.task_id, prefix + rendering, {"full_message": message}
        )
        event.rendering = rendering
        return self.append(event)

    def publish(self, event: MAILEvent) -> None:
        """Hand an ephemeral event (never stored, no sequence number) to the live readers.

        Each reader gets it after the stored events that exist now; a reader that joins
        later never sees it.
        """
        if not self.live_readers:
            return
        mark = self.last_seq
        for reader in self.live_readers:
            reader.append((mark, event))
        if self._waiters:
            self._wake()

    def since(self, after: int = 0) -> list[MAILEvent]:
        """Return the events whose sequence number is greater than ``after``."""
        start = max(after - self._first_seq + 1, 0)
        return self._events[start:]

    def all(self) -> list[MAILEvent]:
        return list(self._events)

    async def wait(self, after: int, timeout: float | None = None) -> bool:
        """Wait until an event newer than ``after`` exists; ``False`` on timeout."""
        if self.visible_seq > after:
            return True
        # a future per reader: cancelling one reader touches no other
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                await waiter
        except TimeoutError:
            pass  # answered below
        finally:
            if waiter in self._waiters:  # timed out or cancelled before an append
                self._waiters.remove(waiter)
        return self.visible_seq > after

    async def follow(
        self,
        after: int = 0,
        *,
        heartbeat: float | None = None,
        until: Callable[[], bool] | None = None,
        stored_ends: bool = True,
        live: bool = True,
    ) -> AsyncIterator[MAILEvent]:
        """Yield every event after ``after``, then new ones as they arrive.

        With ``heartbeat``, a ``ping`` event is yielded whenever nothing arrived for that
        many seconds. With ``until``, the iteration ends once every event so far has been
        yielded and ``until()`` is true; otherwise it goes on until the caller stops.
        ``stored_ends=False`` leaves out the stored ``task_complete`` events, for streams
        that close a turn with their own final ``task_complete``. With ``live``, the
        ephemeral events published while the reader follows come too, in their place
        between the stored ones.
        """
        cursor = after
        queue: deque[tuple[int, MAILEvent]] = deque()
        if live:
            self.live_readers.append(queue)
        self.followers += 1
        try:
            while True:
                events = self.since(cursor)
                if self.committed_seq is not None:
                    events = events[: max(self.committed_seq - cursor, 0)]
                if queue and events:  # stored events up to the ephemeral one come first
                    events = events[: max(queue[0][0] - cursor, 0)]
                if events:
                    for event in events:
                        cursor = event.seq or cursor
                        if stored_ends or event.event != EventName.TASK_COMPLETE:
                            yield event
                    continue  # more may have come while the reader held an event
                if queue:
                    yield queue.popleft()[1]
                    continue
                if until is not None and until() and self.visible_seq == self.last_seq:
                    return
                if not await self.wait(cursor, heartbeat) and not queue:
                    yield MAILEvent.ping(self.task_id)
        finally:
            self.followers -= 1
            if live:  # by identity: deques with equal contents compare equal
                self.live_readers = [r for r in self.live_readers if r is not queue]
