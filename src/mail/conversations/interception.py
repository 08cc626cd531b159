"""Interception: the messages delivered in a task, and its tool calls, recorded as turns of
the conversations bound to the task.

A conversation is bound to a task by ``mail/create`` with ``taskId``. Its intercepted
turns are made from the task's stored events, as an overlay: each ``new_message`` event a
``text`` turn with ``source {type: "intercepted", messageId}`` (the MAIL message id),
each ``tool_call`` event an ``x-tool-call`` turn. They are written by a *catch-up* of
the conversation (:meth:`Interceptor.catch_up`): the turns of the task's events after
the conversation's *mark* (the newest event its turns were made from, a row of its own),
written with the new mark in one transaction, which leaves out what another catch-up
wrote meanwhile (:meth:`~mail.conversations.store.ConversationStore.append_turns`). The
turn seqs are allocated there, so servers sharing a database never repeat one.

A catch-up runs before any ``mail/*`` method reads or changes the conversation, and
before a failed task closes it; so a task whose conversation nobody reads while it runs
writes nothing more than a task with none (the runtime's observer does two dictionary
lookups per event). While a subscription may take the caller's ``mail.turn.added`` or
``mail.participant.joined`` events (the caller's own, an admin's of every caller; always
in cluster mode), and always when tasks are kept
in memory only (their events do not outlive the process), the caller's bound tasks'
conversations are caught up within ``interval`` seconds of their events
(50 ms; at once when :meth:`Interceptor.drain` waits), so that ``mail.turn.added``
reaches subscribers at once. Interception never blocks nor fails a delivery: a closed or
vanished conversation gets no turn; a catch-up that fails is logged, and the next one
writes what it did not.

``map/send`` with ``meta.mail`` records the one message it sends
(:meth:`Interceptor.expect`): in a conversation bound to the task, as the turn of its
event, with the given ``threadId``, ``inReplyTo`` and ``visibility``; in any other, as a
turn of its own, written within ``interval``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mail.core.events import EventName
from mail.db.store import CallerKey

if TYPE_CHECKING:
    from mail.conversations._turns import Intercepted
    from mail.conversations.service import ConversationService
    from mail.conversations.store import Mark, Record
    from mail.core.events import EventLog, MAILEvent
    from mail.core.runtime import MAILRuntime

__all__ = ["Interceptor", "TaskEvents"]

logger = logging.getLogger("mail.server")

_AGENT = re.compile(r"^agent (\S+) called ")
#: the events of intercepted turns: a subscription that may take one has them written at once
_TOLD = ("mail.turn.added", "mail.participant.joined")
#: conversations whose mark an interceptor remembers (all forgotten beyond: read again)
_MARKS = 10_000

#: ``(caller, task id, after)`` -> the task's events with a seq above ``after``, in order
#: (none for a task that is not known)
TaskEvents = Callable[[CallerKey, str, int], Awaitable[list["MAILEvent"]]]

#: a turn to record in a conversation the task is not bound to (``map/send``): the
#: caller, the conversation and the turn
_Pending = tuple[CallerKey, str, "Intercepted"]


class _Watch:
    """What the interceptor knows of one caller's tasks, by task id (so that an event
    costs string lookups only)."""

    __slots__ = ("bound", "expected", "key", "metas", "seen")

    def __init__(self, key: CallerKey) -> None:
        self.key = key
        #: the conversations bound to a task
        self.bound: dict[str, list[str]] = {}
        #: the conversations of the next messages the caller sends (``map/send``)
        self.expected: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        #: the newest event looked at of a task with expected messages
        self.seen: dict[str, int] = {}
        #: ``(conversation id, task id, event seq)`` -> the ``meta.mail`` of a message sent
        #: into a conversation bound to its task, until a catch-up writes its turn
        self.metas: dict[tuple[str, str, int], dict[str, Any]] = {}


def _message_turn(event: MAILEvent, meta: dict[str, Any] | None) -> Intercepted | None:
    full = event.extra_data.get("full_message")
    if not isinstance(full, dict) or not isinstance(full.get("message"), dict):
        return None
    message = full["message"]
    sender = message.get("sender") or {}
    author = f"{sender.get('address_type', 'agent')}:{sender.get('address', '?')}"
    params: dict[str, Any] = {
        "contentType": "text",
        "content": {"text": message.get("body", ""), "subject": message.get("subject")},
        "metadata": {
            "taskId": event.task_id,
            "eventSeq": event.seq,
            "msgType": full.get("msg_type"),
        },
    }
    for name in ("threadId", "inReplyTo", "visibility"):
        if meta and meta.get(name) is not None:
            params[name] = meta[name]
    source = {"type": "intercepted", "messageId": str(full.get("id"))}
    return author, params, source, event.timestamp


def _tool_turn(event: MAILEvent) -> Intercepted:
    extra = event.extra_data
    found = _AGENT.match(event.description or "")
    author = f"agent:{found.group(1)}" if found else "agent:?"
    content = {
        "toolName": extra.get("tool_name"),
        "toolArgs": extra.get("tool_args"),
        "toolCallId": extra.get("tool_call_id"),
    }
    if extra.get("reasoning"):
        content["reasoning"] = extra["reasoning"]
    params = {
        "contentType": "x-tool-call",
        "content": content,
        "metadata": {"taskId": event.task_id, "eventSeq": event.seq},
    }
    return author, params, {"type": "intercepted"}, event.timestamp


def _turns_of(events: list[MAILEvent], metas: dict[int, dict[str, Any]]) -> list[Intercepted]:
    """The turns of a task's ``events`` (``metas``: the ``meta.mail`` of some, by seq)."""
    turns: list[Intercepted] = []
    for event in events:
        if event.event == EventName.NEW_MESSAGE:
            turn = _message_turn(event, metas.get(event.seq or 0))
            if turn is not None:
                turns.append(turn)
        elif event.event == EventName.TOOL_CALL:
            turns.append(_tool_turn(event))
    return turns


class Interceptor:
    """Records the turns of bound tasks through ``service`` from the events ``events``
    gives (see the module docstring). ``eager``: catch up within ``interval`` of the
    events always, not only while anybody subscribes. :meth:`start` its writer,
    :meth:`close` it (what is pending is written first)."""

    def __init__(
        self,
        service: ConversationService,
        events: TaskEvents,
        *,
        eager: bool = False,
        interval: float = 0.05,
    ) -> None:
        self.service = service
        self.events = events
        self.eager = eager
        #: seconds the writer gathers events after the first of a batch (0: none)
        self.interval = interval
        service.binder = self.bind
        service.catch_up = self.catch_up
        self._watches: dict[CallerKey, _Watch] = {}
        self._dirty: set[tuple[CallerKey, str]] = set()  # (caller, task) to catch up
        self._logs: dict[tuple[CallerKey, str], EventLog] = {}  # their logs
        self._pending: list[_Pending] = []
        #: the mark of a conversation as this process wrote it (a hint of which events to
        #: read: the store checks the turns against the stored one)
        self._marks: dict[tuple[CallerKey, str], int] = {}
        self._locks: weakref.WeakValueDictionary[tuple[CallerKey, str], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._wake = asyncio.Event()  # work is pending, or someone waits, or closing
        self._hurry = asyncio.Event()  # write now: someone waits, or closing
        self._drains: list[asyncio.Future[None]] = []  # resolved by the next write
        self._writing = False
        self._closing = False
        self._writer: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(
                self._write(), name="mail-map-interception"
            )

    async def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            self._closing = True
            self._hurry.set()
            self._wake.set()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(writer), timeout=5.0)
            writer.cancel()

    def _watch(self, key: CallerKey) -> _Watch:
        watch = self._watches.get(key)
        if watch is None:
            watch = self._watches[key] = _Watch(key)
        return watch

    async def attach(self, runtime: MAILRuntime, key: CallerKey) -> None:
        """Watch ``runtime`` (the caller ``key``'s) and bind its stored conversations."""
        for record in await self.service.store.list_records(key, "conversation"):
            if record.task_id is not None:
                self.bind(key, record.task_id, record.conversation_id)
        watch = self._watch(key)
        runtime.observe_events(lambda log: self._added(watch, log))

    def bind(self, key: CallerKey, task_id: str, conversation_id: str) -> None:
        """Record the turns of ``task_id`` in ``conversation_id`` from now on."""
        bound = self._watch(key).bound.setdefault(task_id, [])
        if conversation_id not in bound:
            bound.append(conversation_id)

    def bound(self, key: CallerKey, task_id: str) -> list[str]:
        return list(self._watch(key).bound.get(task_id, ()))

    def expect(
        self, key: CallerKey, task_id: str, conversation_id: str, meta: dict[str, Any]
    ) -> None:
        """Record the next message a caller sends into ``task_id`` (``map/send``)."""
        self._watch(key).expected.setdefault(task_id, []).append((conversation_id, meta))

    def forget(self, key: CallerKey, task_id: str) -> None:
        """Drop what :meth:`expect` waits for in ``task_id`` (the send is over)."""
        watch = self._watch(key)
        watch.expected.pop(task_id, None)
        watch.seen.pop(task_id, None)

    def events_added(self, key: CallerKey, log: EventLog) -> None:
        """The observer of the caller ``key``'s runtime: cheap when nothing is bound to
        the task."""
        self._added(self._watch(key), log)

    def _added(self, watch: _Watch, log: EventLog) -> None:
        task_id = log.task_id
        if task_id not in watch.bound and task_id not in watch.expected:
            return
        if task_id in watch.expected:
            seen = watch.seen.get(task_id, log.last_seq - 1)
            for event in log.since(seen):
                self._expected(watch, task_id, event)
            watch.seen[task_id] = log.last_seq
        if task_id not in watch.bound or (watch.key, task_id) in self._dirty:
            return
        if self.eager or self.service.bus.listening_to(watch.key, *_TOLD):
            self._dirty.add((watch.key, task_id))
            self._logs[(watch.key, task_id)] = log
            self._wake.set()

    def _expected(self, watch: _Watch, task_id: str, event: MAILEvent) -> None:
        """A message the caller sends with ``meta.mail``: its meta kept for the catch-up
        of a bound conversation, else its turn queued."""
        expected = watch.expected.get(task_id)
        if not expected or event.event != EventName.NEW_MESSAGE:
            return
        full = event.extra_data.get("full_message") or {}
        sender = full.get("message", {}).get("sender")
        if not isinstance(sender, dict) or sender.get("address_type") not in ("user", "admin"):
            return
        cid, meta = expected.pop(0)
        if not expected:
            del watch.expected[task_id]
        if cid in watch.bound.get(task_id, ()):
            watch.metas[(cid, task_id, event.seq or 0)] = meta
            self._dirty.add((watch.key, task_id))
        else:
            turn = _message_turn(event, meta)
            if turn is not None:
                self._pending.append((watch.key, cid, turn))
        self._wake.set()

    async def catch_up(self, key: CallerKey, conv: Record) -> None:
        """Write the turns of the events of ``conv``'s task that it has not yet (see the
        module docstring); a failure is logged, never raised."""
        if conv.task_id is not None:
            await self._catch_up(key, [(conv.conversation_id, conv.task_id)])

    async def _catch_up(self, key: CallerKey, bound: list[tuple[str, str]]) -> None:
        """Catch up the conversations ``(conversation id, task id)`` of the caller ``key``
        in one store write; when that fails, one by one, so that only the failing ones
        wait for their next catch-up (their marks did not move)."""
        locks = [self._lock(key, cid) for cid in sorted({cid for cid, _ in bound})]
        async with contextlib.AsyncExitStack() as stack:
            for lock in locks:
                await stack.enter_async_context(lock)
            try:
                await self._write_marked(key, bound)
            except Exception as e:
                if len(bound) == 1:
                    logger.exception("recording the turns of %s failed", bound[0][0])
                    return
                logger.warning("recording intercepted turns failed, retrying one by one: %s", e)
            else:
                return
            for one in bound:
                try:
                    await self._write_marked(key, [one])
                except Exception:  # logged; the next catch-up tries again
                    logger.exception("recording the turns of %s failed", one[0])

    async def _write_marked(self, key: CallerKey, bound: list[tuple[str, str]]) -> None:
        watch = self._watch(key)
        groups: dict[str, list[Intercepted]] = {}
        marks: dict[str, Mark] = {}
        for cid, task_id in bound:
            # unknown here: from the first event (the store leaves out what it has)
            events = await self.events(key, task_id, self._marks.get((key, cid), 0))
            if not events or events[-1].seq is None:
                continue
            metas = {
                seq: watch.metas[(c, t, seq)]
                for (c, t, seq) in watch.metas
                if (c, t) == (cid, task_id)
            }
            groups[cid] = _turns_of(events, metas)
            marks[cid] = (task_id, events[-1].seq)
        if not groups:
            return
        await self.service.intercept(key, groups, marks)
        if len(self._marks) >= _MARKS:
            self._marks.clear()
        for cid, (task_id, seq) in marks.items():
            self._marks[(key, cid)] = seq
            for k in [k for k in watch.metas if k[:2] == (cid, task_id) and k[2] <= seq]:
                del watch.metas[k]

    def _lock(self, key: CallerKey, conversation_id: str) -> asyncio.Lock:
        lock = self._locks.get((key, conversation_id))
        if lock is None:
            lock = self._locks[(key, conversation_id)] = asyncio.Lock()
        return lock

    async def drain(self) -> None:
        """Wait until what is pending or to catch up so far is written (or skipped)."""
        if not self._pending and not self._dirty and not self._writing:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._drains.append(done)
        self._hurry.set()
        self._wake.set()
        await done

    async def _write(self) -> None:
        """Write what is pending and catch up what is to, a batch at a time (until
        closed)."""
        while True:
            await self._wake.wait()
            if self.interval > 0 and not self._hurry.is_set():
                with contextlib.suppress(TimeoutError):  # let the events of a burst gather
                    await asyncio.wait_for(self._hurry.wait(), self.interval)
            self._wake.clear()
            self._hurry.clear()
            batch, self._pending = self._pending, []
            dirty, self._dirty = self._dirty, set()
            drains, self._drains = self._drains, []
            self._writing = True
            try:
                await self._write_batch(batch, dirty)
            finally:
                self._writing = False
                for done in drains:
                    if not done.done():
                        done.set_result(None)
            if self._closing and not self._pending and not self._dirty:
                return

    async def _write_batch(self, batch: list[_Pending], dirty: set[tuple[CallerKey, str]]) -> None:
        """One catch-up per caller for the bound conversations of the ``dirty`` tasks,
        then the turns of ``batch``."""
        by_key: dict[CallerKey, list[tuple[str, str]]] = {}
        for key, task_id in dirty:
            for cid in self._watch(key).bound.get(task_id, ()):
                by_key.setdefault(key, []).append((cid, task_id))
        for key, bound in by_key.items():
            await self._catch_up(key, bound)
        for pair in dirty:
            log = self._logs.get(pair)
            if log is None or pair in self._dirty:  # new events meanwhile: the next batch
                continue
            if log.committed_seq is not None and log.committed_seq < log.last_seq:
                self._dirty.add(pair)  # cluster mode: its newest events are not stored yet
                self._wake.set()
            else:
                del self._logs[pair]
        await self._write_pending(batch)

    async def _write_pending(self, batch: list[_Pending]) -> None:
        """The turns of ``batch`` in one store write per caller, or, when that fails, one
        per conversation, so that only the failing conversations lose their turns."""
        pending: dict[CallerKey, dict[str, list[Intercepted]]] = {}
        for key, cid, turn in batch:
            pending.setdefault(key, {}).setdefault(cid, []).append(turn)
        for key, groups in pending.items():
            if len(groups) > 1:
                try:
                    await self.service.intercept(key, groups)
                    continue
                except Exception as e:  # noqa: BLE001  # retried per conversation below
                    logger.warning("recording intercepted turns failed, retrying one by one: %s", e)
            for cid, items in groups.items():
                try:
                    await self.service.intercept(key, {cid: items})
                except Exception:  # interception never fails a delivery: the turns are lost
                    logger.exception("recording %d intercepted turns in %s failed", len(items), cid)
