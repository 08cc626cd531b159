"""v1.3.6's methods of ``MAILTask``, as a base class of :class:`mail.core.tasks.MAILTask`.

Thin adapters over our task record: messages are read from the task's ``new_message``
events, the stash is our own ``stash`` list, and the ``to_db_dict``/``from_db_dict`` pair
speaks the original's ``tasks`` row (CONTRACT §11).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Self, cast

from mail.core._task_state import QueueItem, TaskState
from mail.core.events import EventName, MAILEvent

if TYPE_CHECKING:
    from mail.core.events import EventLog
    from mail.core.message import MAILMessage

__all__ = ["V136TaskMethods"]


class V136TaskMethods:
    """The methods v1.3.6 users call on a task (``get_messages``, ``queue_stash``, ...)."""

    if not TYPE_CHECKING:  # mypy would take the empty slots for the subclass's
        __slots__ = ()

    if TYPE_CHECKING:
        task_id: str
        task_owner: str
        task_contributors: list[str]
        start_time: datetime
        remote_swarms: set[str]
        log: EventLog
        stash: list[QueueItem]
        title: str | None
        state: TaskState
        finished_at: float | None

        def touch(self) -> None: ...

        @property
        def is_running(self) -> bool: ...

        @property
        def completed(self) -> bool: ...

    def add_event(self, event: MAILEvent) -> None:
        """Append ``event`` to the task's log (it gets the next sequence number)."""
        self.log.append(event)

    def add_event_from_db(self, event_data: dict[str, Any]) -> None:
        """Append an event from a v1.3.6 ``task_events`` row (``event_type``, ``event_data``)."""
        data = event_data.get("event_data") or {}
        if isinstance(data, str):
            import json  # noqa: PLC0415  # rows from asyncpg come as text

            data = json.loads(data)
        self.log.append(
            MAILEvent(
                event=str(event_data.get("event_type") or event_data.get("event") or ""),
                task_id=self.task_id,
                description=str(data.get("description", "")),
                extra_data=dict(data.get("extra_data") or {}),
                timestamp=data.get("timestamp"),
            )
        )

    def get_messages(self) -> list[MAILMessage]:
        """Every message of the task, in the order they were delivered."""
        messages: list[MAILMessage] = []
        for event in self.log.all():
            message = event.extra_data.get("full_message")
            if event.event == EventName.NEW_MESSAGE and isinstance(message, dict):
                messages.append(cast("MAILMessage", message))
        return messages

    def get_messages_by_agent(
        self, agent: str, sent: bool = True, received: bool = True
    ) -> list[MAILMessage]:
        """Messages ``agent`` sent (``sent``) or received (``received``)."""
        found = []
        for message in self.get_messages():
            payload: dict[str, Any] = dict(message["message"])
            sender = payload.get("sender", {}).get("address")
            recipients = [payload.get("recipient", {}), *payload.get("recipients", [])]
            names = {r.get("address") for r in recipients if isinstance(r, dict)}
            if (sent and sender == agent) or (received and agent in names):
                found.append(message)
        return found

    def get_messages_by_type(self, message_type: str) -> list[MAILMessage]:
        """Messages whose ``msg_type`` is ``message_type``."""
        return [m for m in self.get_messages() if m["msg_type"] == message_type]

    def _by_sender_type(self, address_type: str) -> list[MAILMessage]:
        return [m for m in self.get_messages() if _sender_type(m) == address_type]

    def get_messages_by_system(self) -> list[MAILMessage]:
        """Messages the runtime sent (sender address type ``system``)."""
        return self._by_sender_type("system")

    def get_messages_by_user(self) -> list[MAILMessage]:
        """Messages the caller sent (sender address type ``user`` or ``admin``)."""
        return self._by_sender_type("user") + self._by_sender_type("admin")

    def get_lifetime(self) -> float:
        """Seconds since the task started."""
        return (datetime.now(UTC) - self.start_time).total_seconds()

    async def queue_stash(self, message_queue: asyncio.Queue[QueueItem]) -> None:
        """Move this task's messages out of ``message_queue`` into the task's stash.

        Other tasks' messages go back in the order they were taken.
        """
        keep: list[QueueItem] = []
        while not message_queue.empty():
            item = message_queue.get_nowait()
            message_queue.task_done()
            if dict(item[2]["message"]).get("task_id") == self.task_id:
                self.stash.append(item)
            else:
                keep.append(item)
        for item in keep:
            message_queue.put_nowait(item)

    async def queue_load(self, message_queue: asyncio.Queue[QueueItem]) -> None:
        """Put the stashed messages back into ``message_queue`` (with their priorities)."""
        stash, self.stash = self.stash, []
        for item in stash:
            await message_queue.put(item)

    def mark_complete(self) -> None:
        """Mark the task completed (our state ``completed``)."""
        self.state = TaskState.COMPLETED
        self.touch()

    def resume(self) -> None:
        """Mark the task running again (as a follow-up message does)."""
        self.state = TaskState.RUNNING
        self.finished_at = None
        self.touch()

    def add_remote_swarm(self, remote_swarm: str) -> None:
        """Record that ``remote_swarm`` took part in the task."""
        self.remote_swarms.add(remote_swarm)

    def to_db_dict(self) -> dict[str, Any]:
        """The task as v1.3.6's ``tasks`` row: ids, owner, contributors, flags, start time."""
        return {
            "task_id": self.task_id,
            "task_owner": self.task_owner,
            "task_contributors": list(self.task_contributors),
            "remote_swarms": sorted(self.remote_swarms),
            "is_running": self.is_running,
            "completed": self.completed,
            "start_time": self.start_time.isoformat(),
            "title": self.title,
        }

    @classmethod
    def from_db_dict(cls, data: dict[str, Any]) -> Self:
        """Build a task from v1.3.6's ``tasks`` row (as :meth:`to_db_dict` returns it)."""
        start = data.get("start_time")
        if isinstance(start, str):
            start = datetime.fromisoformat(start)
        if isinstance(start, datetime) and start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
        state = TaskState.RUNNING if data.get("is_running") else TaskState.INTERRUPTED
        if data.get("completed"):
            state = TaskState.COMPLETED
        build: Any = cls  # the concrete dataclass (MAILTask) takes these fields
        return cast(
            "Self",
            build(
                task_id=str(data["task_id"]),
                task_owner=str(data.get("task_owner", "")),
                task_contributors=list(data.get("task_contributors") or []),
                remote_swarms=set(data.get("remote_swarms") or []),
                title=data.get("title"),
                state=state,
                **({"start_time": start} if isinstance(start, datetime) else {}),
            ),
        )


def _sender_type(message: MAILMessage) -> object:
    payload: dict[str, Any] = dict(message["message"])
    return payload.get("sender", {}).get("address_type")
