"""The interface routes call for tasks, :class:`TaskService`, and what it takes and gives:
a :class:`Turn` to start or continue, a JSON answer or a :class:`Stream`, and the errors
only the server raises. Implementations: :class:`~mail.server._local_tasks.LocalTasks`
(one server) and :class:`~mail.server._cluster_tasks.ClusterTasks` (replicas), both over
:class:`~mail.server._tasks.Tasks`; see :mod:`mail.server._tasks`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from mail.errors import MAILError

if TYPE_CHECKING:
    from mail.core import Direction
    from mail.core.events import MAILEvent
    from mail.core.message import MAILInterswarmMessage
    from mail.core.runtime import MAILRuntime, ResumeFrom
    from mail.core.tasks import MAILTask, TurnRequest
    from mail.db.store import CallerKey
    from mail.server.auth import Caller

__all__ = ["Answer", "RelayedError", "Stream", "TaskService", "Turn", "TurnCutShortError"]


class RelayedError(MAILError):
    """An error answered with a given HTTP ``status``: another replica's answer to a
    request handed to it (cluster mode), passed on as it was."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status


class TurnCutShortError(MAILError):
    """The server stops while the request waits for its turn (503): the task is stored as
    it is (one server) or goes on on another replica; the message says how to go on."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """A turn to start or continue: a ``POST /message`` as the routes parsed it."""

    task_id: str
    #: the client named the task (its request may repeat an earlier one)
    named: bool
    body: str
    subject: str
    msg_type: str
    entrypoint: str | None
    resume_from: ResumeFrom | None
    kwargs: dict[str, Any]
    timeout: float
    stream: bool
    show_events: bool
    #: what the request asks, digested, with its ``Idempotency-Key``
    asked: TurnRequest

    def as_json(self) -> dict[str, Any]:
        """The turn as a replica hands it to another (:meth:`ClusterTasks.handle
        <mail.server._cluster_tasks.ClusterTasks.handle>` reads it)."""
        return {
            "body": self.body,
            "subject": self.subject,
            "msg_type": self.msg_type,
            "entrypoint": self.entrypoint,
            "task_id": self.task_id,
            "resume_from": self.resume_from,
            "kwargs": self.kwargs,
            "timeout": self.timeout,
            "request": self.asked.as_json(),
        }


@dataclass(slots=True, kw_only=True)
class Stream:
    """A turn's events for a stream. With ``task_id``, ``first`` was fetched already (a
    failure to start is an error, not a broken stream) and the stream ends with a final
    ``task_error`` when the server stops, if ``final_on_stop`` (else it just ends: the
    task goes on on another replica); without, it just follows the task."""

    events: AsyncIterator[MAILEvent]
    first: MAILEvent | None = None
    task_id: str | None = None
    final_on_stop: bool = True


#: What starting or continuing a turn gives: the JSON answer, or a stream of its events.
Answer = dict[str, Any] | Stream


class TaskService(Protocol):
    """What routes do with tasks; each method raises the :class:`~mail.errors.MAILError`
    its route answers (``TaskNotFoundError`` for an unknown task or another caller's,
    ``TaskStateError`` for one in the wrong state, ``StorageError`` while the store
    fails, :class:`TurnCutShortError` when the server stops)."""

    async def attach(self, runtime: MAILRuntime, key: CallerKey) -> int:
        """A new runtime of caller ``key``: wire it, return how many tasks it loaded."""
        ...

    async def send(self, caller: Caller, turn: Turn) -> Answer:
        """Start or continue a turn (a breakpoint's answer too), or answer its repeat."""
        ...

    async def task(self, caller: Caller, task_id: str) -> MAILTask:
        """One task of the caller; a finished one once stored (or ``commit_timeout`` passed)."""
        ...

    async def tasks(self, caller: Caller) -> list[MAILTask]:
        """Every task of the caller; what is shown finished is stored."""
        ...

    async def events(self, caller: Caller, task_id: str, after: int) -> AsyncIterator[MAILEvent]:
        """The task's events after ``after``, then live until its turn ends."""
        ...

    async def cancel(self, caller: Caller, task_id: str) -> None:
        """Cancel a running or paused task; stored before this returns."""
        ...

    async def interswarm(
        self, caller: Caller, message: MAILInterswarmMessage, direction: Direction
    ) -> dict[str, Any]:
        """A peer's ``/interswarm/forward`` or ``back``: queued where its task runs."""
        ...

    def health(self) -> dict[str, Any]:
        """What ``GET /health`` adds (a replica's id and the tasks it runs)."""
        ...

    async def stopped(self) -> None:
        """The runtimes are shut down and their tasks stored."""
        ...
