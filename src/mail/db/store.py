"""The task store interface: what the runtime and the server persist, and how they ask.

Everything is stored per caller and swarm (:class:`CallerKey`): task records
(:class:`TaskRow`), every event of a task with its per-task sequence number
(:class:`EventRow`), the current history of each agent in a task, the final response, the
breakpoint calls a paused task waits on (:class:`BreakpointRow`) and the messages it has
stashed (:class:`StashRow`). :meth:`TaskStore.save_changes` stores what changed in many
tasks at once (one :class:`TaskChanges` per task), the recorder's way to write;
:meth:`TaskStore.load_details` reads all but the records of many tasks at once (one
:class:`TaskDetails` per task), the way a runtime is restored.

Three implementations pass one test suite: :class:`mail.db.MemoryStore`,
:class:`mail.db.SQLiteStore` and :class:`mail.db.PostgresStore`. Every method is async;
every failure (a closed store, a broken disk, a database that is down, data that is not
JSON) raises :class:`mail.errors.StorageError` whose message names the store and the
operation. A store never swallows an error: reporting it (event, log, ``/health``) is the
caller's job.

Rows handed to a store are copied (serialized) when the call is made, so the caller may
keep mutating its lists; rows handed out are fresh objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from mail.errors import StorageError

if TYPE_CHECKING:
    from mail.core._persist import WriteBatch

__all__ = [
    "FINISHED_STATES",
    "CallerKey",
    "TaskRow",
    "EventRow",
    "BreakpointRow",
    "StashRow",
    "HistoryTuple",
    "TaskChanges",
    "TaskDetails",
    "TaskStore",
]

#: Task states that :meth:`TaskStore.prune` may remove (never running or paused tasks).
FINISHED_STATES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


@dataclass(frozen=True, slots=True, kw_only=True)
class CallerKey:
    """Whose data it is: the swarm and the caller's role and id (CONTRACT §11 columns
    ``swarm_name``, ``caller_role``, ``caller_id``)."""

    swarm: str
    role: str
    id: str


@dataclass(slots=True, kw_only=True)
class TaskRow:
    """The record of one task.

    ``state`` is a :class:`mail.core.tasks.TaskState` value. Datetimes are returned
    timezone-aware in UTC; naive ones given to a store are taken as UTC.
    """

    task_id: str
    task_owner: str
    task_contributors: list[str] = field(default_factory=list)
    remote_swarms: list[str] = field(default_factory=list)
    state: str = "running"
    title: str | None = None
    start_time: datetime
    updated_at: datetime


@dataclass(slots=True, kw_only=True)
class EventRow:
    """One stored event: its per-task sequence number (1, 2, ...), its name and the wire
    ``data`` object (``timestamp``, ``description``, ``task_id``, ``extra_data``).

    ``data_json`` is optional: the JSON text of ``data`` when the caller already has it
    (for example the one sent in the SSE frame). A store then keeps that text as it is
    instead of encoding ``data`` again, which is most of what storing an event costs; it
    must be the JSON of ``data``. Loaded rows carry the stored text in ``data_json``.
    It takes no part in comparisons.
    """

    task_id: str
    seq: int
    event: str
    data: dict[str, Any]
    data_json: str | None = field(default=None, compare=False, repr=False)


@dataclass(slots=True, kw_only=True)
class BreakpointRow:
    """A breakpoint tool call a paused task waits on (``call`` is
    ``AgentToolCall.model_dump()``)."""

    call_id: str
    agent: str
    call: dict[str, Any]
    normalized: dict[str, Any]


@dataclass(slots=True, kw_only=True)
class StashRow:
    """A queued message a paused task has stashed, with its queue priority and sequence."""

    priority: int
    seq: int
    message: dict[str, Any]


#: ``(agent, history, tool_format)``: the current history of one agent in a task.
HistoryTuple = tuple[str, list[dict[str, Any]], str]


@dataclass(slots=True, kw_only=True)
class TaskChanges:
    """What changed in one task, for :meth:`TaskStore.save_changes`.

    Each part is stored as the per-row method of its kind would store it: ``task`` as
    :meth:`~TaskStore.save_task` (``None``: unchanged), ``events`` as
    :meth:`~TaskStore.append_events` (all of ``task_id``), each entry of ``histories`` as
    :meth:`~TaskStore.save_history` (in order: a later entry for the same agent wins),
    ``response`` as :meth:`~TaskStore.save_response` (``None``: unchanged), ``breakpoints``
    and ``stash`` as :meth:`~TaskStore.save_breakpoints` and :meth:`~TaskStore.save_stash`
    (``None``: unchanged, ``[]``: cleared).
    """

    task_id: str
    task: TaskRow | None = None
    events: list[EventRow] = field(default_factory=list)
    histories: list[HistoryTuple] = field(default_factory=list)
    response: dict[str, Any] | None = None
    breakpoints: list[BreakpointRow] | None = None
    stash: list[StashRow] | None = None


@dataclass(slots=True, kw_only=True)
class TaskDetails:
    """Everything stored for one task but its record, for :meth:`TaskStore.load_details`:
    what :meth:`~TaskStore.load_events` (all, in sequence order),
    :meth:`~TaskStore.load_histories`, :meth:`~TaskStore.load_response`,
    :meth:`~TaskStore.load_breakpoints` and :meth:`~TaskStore.load_stash` return for it.
    The defaults are what they return for a task with nothing stored."""

    events: list[EventRow] = field(default_factory=list)
    histories: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    response: dict[str, Any] | None = None
    breakpoints: list[BreakpointRow] = field(default_factory=list)
    stash: list[StashRow] = field(default_factory=list)


class TaskStore(Protocol):
    """Where the runtime and the server keep tasks, events, histories and responses.

    A store must be opened before use and closed after; both are idempotent. Every method
    raises :class:`mail.errors.StorageError` (naming the store and the operation) when the
    store is not open or the backend fails. Writes made by one caller are applied in call
    order, and a read sees every write whose call was made before it.
    """

    @property
    def backend(self) -> str:
        """``"memory"``, ``"sqlite"`` or ``"postgres"``."""
        ...

    async def open(self) -> None:
        """Connect and apply pending schema migrations. Raises ``StorageError``."""
        ...

    async def close(self) -> None:
        """Commit what is pending, then release connections and threads."""
        ...

    async def save_task(self, key: CallerKey, task: TaskRow) -> None:
        """Insert or replace the record of ``task.task_id``."""
        ...

    async def append_events(self, key: CallerKey, rows: Sequence[EventRow]) -> None:
        """Store events exactly once: a ``(task_id, seq)`` already stored is ignored, so a
        retried batch never duplicates (the first write of a sequence number wins)."""
        ...

    async def save_history(
        self,
        key: CallerKey,
        task_id: str,
        agent: str,
        history: list[dict[str, Any]],
        tool_format: str,
    ) -> None:
        """Replace the current history of ``agent`` in ``task_id`` (``tool_format`` is
        ``"completions"`` or ``"responses"``)."""
        ...

    async def save_response(self, key: CallerKey, task_id: str, message: dict[str, Any]) -> None:
        """Insert or replace the final response message of ``task_id``."""
        ...

    async def save_breakpoints(
        self, key: CallerKey, task_id: str, rows: Sequence[BreakpointRow]
    ) -> None:
        """Replace the pending breakpoint calls of ``task_id`` (an empty list clears them)."""
        ...

    async def save_stash(self, key: CallerKey, task_id: str, rows: Sequence[StashRow]) -> None:
        """Replace the stashed messages of ``task_id`` (an empty list clears them)."""
        ...

    async def save_changes(
        self, key: CallerKey, changes: Sequence[TaskChanges]
    ) -> dict[str, StorageError]:
        """Store the changes of many tasks at once, in the order given.

        The changes of one task are stored together or not at all; one task's failure does
        not keep the others from being stored. Returns, by task id, the error of each task
        whose changes were not stored (empty when all were): a value JSON cannot hold, a
        row the database refused. Raises :class:`mail.errors.StorageError` only when
        nothing could be tried (the store is not open). A task id given twice is applied
        in order, as one change. An event or task record of another task than its
        ``task_id`` is that task's error.
        """
        ...

    async def save_batch(self, key: CallerKey, batch: WriteBatch) -> dict[str, StorageError]:
        """:meth:`save_changes` of a runtime's :class:`~mail.core._persist.WriteBatch`
        (the recorder's write), the same rows and the same failures by task, built straight
        from the batch. The batch's histories and messages are encoded before the first
        ``await``: the runtime goes on changing them."""
        ...

    async def load_tasks(self, key: CallerKey) -> list[TaskRow]:
        """Return the caller's tasks, oldest ``start_time`` first."""
        ...

    async def load_task(self, key: CallerKey, task_id: str) -> TaskRow | None:
        """Return one task record, or ``None``."""
        ...

    async def load_events(
        self, key: CallerKey, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[EventRow]:
        """Return the events with ``seq > after`` in sequence order, at most ``limit``."""
        ...

    async def load_histories(self, key: CallerKey, task_id: str) -> dict[str, list[dict[str, Any]]]:
        """Return the current history of each agent of ``task_id``, by agent name."""
        ...

    async def load_response(self, key: CallerKey, task_id: str) -> dict[str, Any] | None:
        """Return the final response of ``task_id``, or ``None``."""
        ...

    async def load_breakpoints(self, key: CallerKey, task_id: str) -> list[BreakpointRow]:
        """Return the pending breakpoint calls of ``task_id`` in the order saved."""
        ...

    async def load_stash(self, key: CallerKey, task_id: str) -> list[StashRow]:
        """Return the stashed messages of ``task_id`` in the order saved."""
        ...

    async def load_details(self, key: CallerKey, task_ids: Sequence[str]) -> dict[str, TaskDetails]:
        """Return the events, histories, response, breakpoints and stash of many tasks at
        once, by task id (in the order of ``task_ids``; an id given twice counts once).

        A task with nothing stored in those five tables, an unknown id among them, is
        absent from the result, so ``result.get(task_id, TaskDetails())`` is always what
        the five per-task loaders return for it. The SQL stores run one query per table
        for the whole list instead of five per task.
        """
        ...

    async def prune(
        self, *, older_than: timedelta | None = None, keep_last: int | None = None
    ) -> int:
        """Delete finished tasks (:data:`FINISHED_STATES`) and all their rows, of every
        caller: those last updated more than ``older_than`` ago and those beyond the
        ``keep_last`` most recently updated. Returns how many tasks were deleted. A
        negative ``keep_last`` raises :class:`mail.errors.ConfigurationError`."""
        ...

    async def health(self) -> str:
        """``"ok"``, or a short description of what is wrong (never raises)."""
        ...

    async def schema_version(self) -> int:
        """The newest applied migration (0 for the memory store)."""
        ...
