"""A conversation's status over its life: closing (``mail/close``, an admin's archive, a
failed bound task) and following the state of the task it is bound to.

Statuses (R8): ``active``; ``paused`` while the bound task waits on a breakpoint (back to
``active`` when it resumes); ``completed`` (``mail/close``), ``failed`` (the bound task
failed or was cancelled by its owner) and ``archived`` (an admin's ``mail/close`` with
``status: "archived"``) are closed. A task that completes leaves its conversation open:
it may be followed up (R5); so may a task a restart left ``interrupted``, and a task
cancelled because its runtime shuts down (the server stops, an idle runtime is evicted)
changes nothing either. Closing emits ``mail.closed`` (with ``status``); pausing and
resuming emit :data:`STATUS_CHANGED`, our extension event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mail.conversations._base import Actor, ServiceBase
from mail.conversations.errors import ConversationClosedError
from mail.conversations.models import CLOSED_STATUSES, now_ms
from mail.conversations.store import Record
from mail.db.store import CallerKey

if TYPE_CHECKING:
    from mail.core.runtime import MAILRuntime
    from mail.core.tasks import MAILTask

__all__ = ["STATUS_CHANGED", "SYSTEM", "LifecycleMethods", "StatusFollower"]

logger = logging.getLogger("mail.server")

#: the event of a status change that does not close (``paused`` <-> ``active``): no event
#: of the seed fits, so it is ours, ``x-`` prefixed like custom content types
STATUS_CHANGED = "x-mail.status.changed"
#: who closes a conversation whose task failed
SYSTEM = "system"

#: a bound task's state -> the conversation's status (states not listed change nothing)
_FOLLOWS = {
    "running": "active",
    "completed": "active",
    "waiting_breakpoint": "paused",
    "failed": "failed",
    "cancelled": "failed",
}
_WHY = {"failed": "failed", "cancelled": "was cancelled"}
#: conversations whose status a follower remembers (all forgotten beyond)
_KNOWN = 10_000
#: what a follower remembers of a conversation that is no more
_GONE = "gone"
#: statuses no task change alters
_SETTLED = (*CLOSED_STATUSES, _GONE)


class LifecycleMethods(ServiceBase):
    """Closing a conversation and following its task."""

    async def close_as(
        self, actor: Actor, conv: Record, status: str, reason: str | None
    ) -> dict[str, Any]:
        """Set the closed ``status`` (``completed``, ``failed``, ``archived``) by ``actor``
        and emit ``mail.closed{conversationId, closedBy, reason, status}``. Raises 10001
        when the conversation is closed already (archived, for ``archived``)."""
        async with self._lock(actor, conv):
            fresh = await self.store.get(
                actor.key, conv.conversation_id, "conversation", conv.conversation_id
            )
            current = (fresh or conv).data["status"]
            if current == "archived" or (status != "archived" and current in CLOSED_STATUSES):
                raise ConversationClosedError(
                    f"conversation {conv.conversation_id!r} is {current}",
                    conversationId=conv.conversation_id,
                )
            return await self._closed(actor, fresh or conv, status, reason)

    async def _closed(
        self, actor: Actor, conv: Record, status: str, reason: str | None
    ) -> dict[str, Any]:
        conv.data.update(status=status, closedBy=actor.participant_id, closedAt=now_ms())
        if reason is not None:
            conv.data["closeReason"] = reason
        await self._touch(actor, conv)
        await self._emit(
            actor,
            "mail.closed",
            {
                "conversationId": conv.conversation_id,
                "closedBy": actor.participant_id,
                "reason": reason,
                "status": status,
            },
        )
        return {"conversation": await self.shown(actor.key, conv)}

    async def follow_task(
        self, key: CallerKey, conversation_id: str, task_id: str, state: str
    ) -> str | None:
        """Apply the bound task's ``state`` (a :class:`~mail.core.tasks.TaskState` value)
        to the conversation; returns the status it has then (changed or not: a closed
        conversation stays closed), or ``None`` when there is no such conversation. The
        change is made under the conversation's lock, so that it never reopens a
        conversation closed meanwhile."""
        target = _FOLLOWS.get(state)
        conv = await self.store.get(key, conversation_id, "conversation", conversation_id)
        if target is None or conv is None:
            return None if conv is None else str(conv.data["status"])
        actor = Actor(key=key, participant_id=SYSTEM)
        async with self._lock(actor, conv):
            conv = await self.store.get(key, conversation_id, "conversation", conversation_id)
            if conv is None:
                return None
            previous = conv.data["status"]
            if previous in CLOSED_STATUSES or target == previous:
                return str(previous)
            if target == "failed":
                await self._catch_up(key, conv)  # the task's last turns, then the close
                await self._closed(actor, conv, "failed", f"task {task_id!r} {_WHY[state]}")
                return target
            conv.data["status"] = target
            await self._touch(actor, conv)
        await self._emit(
            actor,
            STATUS_CHANGED,
            {
                "conversationId": conversation_id,
                "status": target,
                "previousStatus": previous,
                "taskId": task_id,
            },
        )
        return target


class StatusFollower:
    """Makes the conversations bound to a task follow its state (:meth:`attach` a
    caller's runtime). The runtime tells it of every change of a task's record; for a task
    no conversation is bound to (``bound`` answers an empty list) that is one lookup. The
    follower remembers the status each conversation will have once the changes it queued
    are applied, so that the many changes that keep it (a turn that opens and ends
    running) are dropped at once: only a change of status is queued, and applied in order
    by one background task (:meth:`start`, :meth:`close`) under the conversation's lock.
    A failing store loses the change (logged), and the conversation's status is read
    again at its next change."""

    def __init__(
        self, service: LifecycleMethods, bound: Callable[[CallerKey, str], list[str]]
    ) -> None:
        self.service = service
        self._bound = bound
        self._queue: asyncio.Queue[tuple[CallerKey, str, str, list[str]] | None] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        #: the status each conversation has as far as this follower knows: a closed one
        #: stays closed, and only this follower pauses and resumes
        self._known: dict[tuple[CallerKey, str], str] = {}

    @classmethod
    def over(
        cls, service: LifecycleMethods, bound: Callable[[CallerKey, str], list[str]]
    ) -> StatusFollower:
        """A follower of the tasks ``bound`` (the interceptor's) names, told of every
        conversation ``service`` binds as it creates it (chained to its ``binder``)."""
        follower = cls(service, bound)
        bind = service.binder

        def binder(key: CallerKey, task_id: str, conversation_id: str) -> None:
            if bind is not None:
                bind(key, task_id, conversation_id)
            follower.created(key, conversation_id)

        service.binder = binder
        return follower

    def start(self) -> None:
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(
                self._write(), name="mail-map-status"
            )

    async def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            self._queue.put_nowait(None)
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(writer), timeout=5.0)
            writer.cancel()

    def created(self, key: CallerKey, conversation_id: str) -> None:
        """A conversation was just created (``active``): its first task change then costs
        no store read."""
        self._remember(key, conversation_id, "active")

    def attach(self, runtime: MAILRuntime, key: CallerKey) -> None:
        """Follow the tasks of ``runtime`` (the caller ``key``'s), except what its shutdown
        does to them."""

        def changed(task: MAILTask) -> None:
            if not runtime.stopping:
                self.task_changed(key, task)

        runtime.tasks.observe_tasks(changed)

    def task_changed(self, key: CallerKey, task: MAILTask) -> None:
        """The observer of a runtime: cheap when nothing is bound to the task, or when
        the change keeps the statuses of the conversations bound to it."""
        bound = self._bound(key, task.task_id)
        if not bound:
            return
        state = str(task.state)
        target = _FOLLOWS.get(state)
        if target is None:
            return
        changing = []
        for conversation_id in bound:
            known = self._known.get((key, conversation_id))
            if known != target and known not in _SETTLED:
                changing.append(conversation_id)
                self._remember(key, conversation_id, target)
        if changing:
            self._queue.put_nowait((key, task.task_id, state, changing))

    def _remember(self, key: CallerKey, conversation_id: str, status: str) -> None:
        if len(self._known) >= _KNOWN:
            self._known.clear()
        self._known[(key, conversation_id)] = status

    async def drain(self) -> None:
        """Wait until the changes queued so far are applied (or lost)."""
        await self._queue.join()

    async def _write(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                if item is None:
                    return
                key, task_id, state, bound = item
                for conversation_id in bound:
                    await self._follow(key, conversation_id, task_id, state)
            finally:
                self._queue.task_done()

    async def _follow(self, key: CallerKey, conversation_id: str, task_id: str, state: str) -> None:
        try:
            status = await self.service.follow_task(key, conversation_id, task_id, state)
        except Exception:  # a status is never worth failing a task for
            logger.exception("conversation %s did not follow task %s", conversation_id, task_id)
            self._known.pop((key, conversation_id), None)  # read it again next time
            return
        if status is None or status in CLOSED_STATUSES:  # no change of the task alters it
            self._remember(key, conversation_id, status or _GONE)
