"""Interception: the messages delivered in a task, and its tool calls, recorded as turns of
the conversations bound to the task.

A conversation is bound to a task by ``mail/create`` with ``taskId``. The
:class:`Interceptor` watches each caller's runtime (:meth:`MAILRuntime.observe_events
<mail.core.runtime.MAILRuntime.observe_events>`): for a task no conversation is bound to
it does two dictionary lookups (by task id) per event and nothing else. For a bound task,
each ``new_message`` event becomes a ``text`` turn with ``source {type: "intercepted",
messageId}`` (the MAIL message id) and each ``tool_call`` event an ``x-tool-call`` turn.
The turns wait in a list; one background task writes what gathered in ``interval``
seconds (50 ms; at once when :meth:`Interceptor.drain` waits) in one store write per
caller, whose conversations, newest turns and participants the store reads in the same
transaction (:meth:`~mail.conversations.store.ConversationStore.append_turns`: turn seqs
are allocated there, so servers sharing a database never repeat one). Interception never
blocks nor fails a delivery: a closed or vanished conversation gets no turn, and a write
that fails is tried again one conversation at a time, the failing one's turns lost
(logged). ``map/send`` with ``meta.mail`` records the one message it sends
(:meth:`Interceptor.expect`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from typing import TYPE_CHECKING, Any

from mail.core.events import EventName
from mail.db.store import CallerKey

if TYPE_CHECKING:
    from mail.conversations._turns import Intercepted
    from mail.conversations.service import ConversationService
    from mail.core.events import EventLog, MAILEvent
    from mail.core.runtime import MAILRuntime

__all__ = ["Interceptor"]

logger = logging.getLogger("mail.server")

_AGENT = re.compile(r"^agent (\S+) called ")


#: a turn to record: the caller, the conversation, the author, its params, its source and
#: the event's time
_Pending = tuple[CallerKey, str, str, dict[str, Any], dict[str, Any], str]


class _Watch:
    """What the interceptor knows of one caller's tasks, by task id (so that an event
    costs string lookups only)."""

    __slots__ = ("bound", "expected", "key", "seen")

    def __init__(self, key: CallerKey) -> None:
        self.key = key
        #: the conversations bound to a task
        self.bound: dict[str, list[str]] = {}
        #: the conversations of the next messages the caller sends (``map/send``)
        self.expected: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        #: the newest event of a task looked at
        self.seen: dict[str, int] = {}


def _message_turn(
    event: MAILEvent, meta: dict[str, Any] | None
) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
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
    return author, params, {"type": "intercepted", "messageId": str(full.get("id"))}


def _tool_turn(event: MAILEvent) -> tuple[str, dict[str, Any], dict[str, Any]]:
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
    return author, params, {"type": "intercepted"}


class Interceptor:
    """Records the turns of bound tasks through ``service``; :meth:`start` its writer,
    :meth:`close` it (the queued turns are written first). The writer gathers the turns
    queued in ``interval`` seconds after the first of a batch, or fewer when someone
    waits for them (:meth:`drain`), and writes them in one store write per caller (the
    group commit of :class:`~mail.core._recorder.StoreRecorder`, for turns)."""

    def __init__(self, service: ConversationService, *, interval: float = 0.05) -> None:
        self.service = service
        #: seconds the writer gathers turns after the first of a batch (0: none)
        self.interval = interval
        service.binder = self.bind
        self._watches: dict[CallerKey, _Watch] = {}
        self._pending: list[_Pending] = []
        self._wake = asyncio.Event()  # turns are pending, or someone waits, or closing
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
        self._watch(key).expected.pop(task_id, None)

    def events_added(self, key: CallerKey, log: EventLog) -> None:
        """The observer of the caller ``key``'s runtime: cheap when nothing is bound to
        the task."""
        self._added(self._watch(key), log)

    def _added(self, watch: _Watch, log: EventLog) -> None:
        task_id = log.task_id
        if task_id not in watch.bound and task_id not in watch.expected:
            return
        seen = watch.seen.get(task_id, log.last_seq - 1)
        for event in log.since(seen):
            self._event(watch, task_id, event)
        watch.seen[task_id] = log.last_seq

    def _event(self, watch: _Watch, task_id: str, event: MAILEvent) -> None:
        if event.event == EventName.NEW_MESSAGE:
            expected = watch.expected.get(task_id)
            meta: dict[str, Any] | None = None
            targets = watch.bound.get(task_id, [])
            if expected:
                full = event.extra_data.get("full_message") or {}
                sender = full.get("message", {}).get("sender")
                if isinstance(sender, dict) and sender.get("address_type") in ("user", "admin"):
                    cid, meta = expected.pop(0)
                    if not expected:
                        del watch.expected[task_id]
                    if cid not in targets:
                        targets = [*targets, cid]
            turn = _message_turn(event, meta)
        elif event.event == EventName.TOOL_CALL:
            targets, turn = watch.bound.get(task_id, []), _tool_turn(event)
        else:
            return
        if turn is None or not targets:
            return
        author, params, source = turn
        key, at = watch.key, event.timestamp
        self._pending += [(key, cid, author, params, source, at) for cid in targets]
        if not self._wake.is_set():
            self._wake.set()

    async def drain(self) -> None:
        """Wait until the turns queued so far are written (or skipped)."""
        if not self._pending and not self._writing:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._drains.append(done)
        self._hurry.set()
        self._wake.set()
        await done

    async def _write(self) -> None:
        """Write what is pending, a batch at a time (until closed)."""
        while True:
            await self._wake.wait()
            if self.interval > 0 and not self._hurry.is_set():
                with contextlib.suppress(TimeoutError):  # let the turns of a burst gather
                    await asyncio.wait_for(self._hurry.wait(), self.interval)
            self._wake.clear()
            self._hurry.clear()
            batch, self._pending = self._pending, []
            drains, self._drains = self._drains, []
            self._writing = True
            try:
                await self._write_batch(batch)
            finally:
                self._writing = False
                for done in drains:
                    if not done.done():
                        done.set_result(None)
            if self._closing and not self._pending:
                return

    async def _write_batch(self, batch: list[_Pending]) -> None:
        """One store write per caller for the whole batch; when it fails, one per
        conversation, so that only the failing conversations lose their turns."""
        by_key: dict[CallerKey, dict[str, list[Intercepted]]] = {}
        for key, cid, author, params, source, at in batch:
            by_key.setdefault(key, {}).setdefault(cid, []).append((author, params, source, at))
        for key, groups in by_key.items():
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
