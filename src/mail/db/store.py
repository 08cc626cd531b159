"""The task store interface: what the runtime and the server keep, and how they ask.

Everything is stored per caller and swarm (:class:`CallerKey`): task records
(:class:`TaskRow`), every event of a task with its per-task sequence number
(:class:`EventRow`), the current history of each agent in a task, the final response, the
breakpoint calls a paused task waits on (:class:`BreakpointRow`) and the messages it has
stashed (:class:`StashRow`).

The runtime writes with :meth:`TaskStore.save_changes` (what changed in many tasks, one
:class:`TaskChanges` per task, in one transaction) and reads a caller's tasks back with
:meth:`TaskStore.load_tasks` and :meth:`TaskStore.load_details`. The per-row methods
(``save_task``, ``append_events``, ...) are the same writes for one kind of row.

Three implementations pass one test suite: :class:`mail.db.MemoryStore`,
:class:`mail.db.SQLiteStore` and :class:`mail.db.PostgresStore`. Every method is async; every failure (a closed store, a broken disk,
a database that is down, data that is not JSON) raises :class:`mail.errors.StorageError`
whose message names the store and the operation. Rows handed to a store are encoded when
the call is made, before its first ``await``, so the caller may keep changing its lists;
rows handed out are fresh objects.
"""

from __future__ import annotations

import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Self, overload

import orjson

from mail._text import find_bad_text, text_problem
from mail.errors import ConfigurationError, LeaseLostError, StorageError, StorageRefusedError

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
    "checked_text",
]

#: Seconds :meth:`TaskStore.health` waits for the database's answer before it says so.
HEALTH_TIMEOUT = 2.0

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
    timezone-aware in UTC; naive ones given to a store are taken as UTC. ``request`` is
    what opened the task's current turn (:class:`mail.core.tasks.TurnRequest` as JSON),
    by which a retried request is told from a new one.
    """

    task_id: str
    task_owner: str
    task_contributors: list[str] = field(default_factory=list)
    remote_swarms: list[str] = field(default_factory=list)
    state: str = "running"
    title: str | None = None
    start_time: datetime
    updated_at: datetime
    request: dict[str, Any] | None = None


@dataclass(slots=True, kw_only=True)
class EventRow:
    """One stored event: its per-task sequence number (1, 2, ...), its name and the wire
    ``data`` object (``timestamp``, ``description``, ``task_id``, ``extra_data``)."""

    task_id: str
    seq: int
    event: str
    data: dict[str, Any]


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

    ``task``: the record (``None``: unchanged); ``events``: new events (of ``task_id``);
    ``histories``: current histories (a later entry for the same agent wins);
    ``response``: the final response (``None``: unchanged); ``breakpoints`` and ``stash``:
    the pending calls and stashed messages (``None``: unchanged, ``[]``: cleared).
    ``lease``: ``(owner, generation)`` of the task's lease the writer holds (cluster
    mode): the changes are stored only while that is the task's lease
    (:class:`~mail.errors.LeaseLostError` otherwise); ``None``: stored unconditionally.
    """

    task_id: str
    task: TaskRow | None = None
    events: list[EventRow] = field(default_factory=list)
    histories: list[HistoryTuple] = field(default_factory=list)
    response: dict[str, Any] | None = None
    breakpoints: list[BreakpointRow] | None = None
    stash: list[StashRow] | None = None
    lease: tuple[str, int] | None = None

    def merge(self, later: TaskChanges) -> None:
        """Add ``later`` (changes of the same task made after these) to these."""
        if later.task is not None:
            self.task = later.task
        self.events += later.events
        self.histories += later.histories
        if later.response is not None:
            self.response = later.response
        if later.breakpoints is not None:
            self.breakpoints = later.breakpoints
        if later.stash is not None:
            self.stash = later.stash
        if later.lease is not None:
            self.lease = later.lease


@dataclass(slots=True, kw_only=True)
class TaskDetails:
    """Everything stored for one task but its record (:meth:`TaskStore.load_details`):
    its events in sequence order, the current history of each agent, the final
    response, the pending breakpoint calls and the stash. The defaults are what a task
    with nothing stored has."""

    events: list[EventRow] = field(default_factory=list)
    histories: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    response: dict[str, Any] | None = None
    breakpoints: list[BreakpointRow] = field(default_factory=list)
    stash: list[StashRow] = field(default_factory=list)


class TaskStore(ABC):
    """Where the runtime and the server keep tasks, events, histories and responses.

    A store is opened before use and closed after; both are idempotent (``async with``
    does both). Every method raises :class:`mail.errors.StorageError` (naming the store
    and the operation) when the store is not open or the backend fails. Writes are
    applied in call order, and a read sees every write whose call was made before it.

    A backend implements the abstract methods; the per-row methods (``save_task``,
    ``append_events``, ``load_histories``, ...) are :meth:`save_changes` and
    :meth:`load_details` for one task.
    """

    #: ``"memory"``, ``"sqlite"`` or ``"postgres"``
    backend: str
    #: names the store in error messages (never a password)
    name: str
    #: True when another implementation reads the rows too (a PostgreSQL database shared
    #: with a v1.3.6 server, known once the store is open): the runtime then stores
    #: events, histories and responses whole, as v1.3.6 writes them, not compacted
    v1_readable: bool = False
    #: why writes fail now, as a whole (a full disk, a database that does not answer):
    #: set by a write that failed so, ``None`` again once a write succeeds. A task whose
    #: rows the store refused (:class:`~mail.errors.StorageRefusedError`) is no outage.
    outage: str | None = None
    #: ``time.monotonic()`` of the last write that succeeded (0: none yet)
    written_at: float = 0.0
    #: told the seconds each :meth:`save_changes` took, failed or not (the server's metrics)
    on_write: Callable[[float], None] | None = None

    def __init__(self) -> None:
        self._writes_started: list[float] = []

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @abstractmethod
    async def open(self) -> None:
        """Connect and apply pending schema migrations."""

    @abstractmethod
    async def close(self) -> None:
        """Finish the writes under way, then release connections and threads."""

    async def save_changes(
        self, key: CallerKey, changes: Sequence[TaskChanges]
    ) -> dict[str, StorageError]:
        """Store the changes of many tasks in one transaction.

        The changes of one task are stored together or not at all; one task's failure
        does not keep the others from being stored. Returns the error of each task whose
        changes were not stored, by task id (empty when all were):

        * :class:`~mail.errors.StorageRefusedError` when the store refused them (a value
          it cannot hold: not JSON, a lone surrogate or a NUL character, a size or a
          constraint): writing them again cannot succeed;
        * :class:`~mail.errors.LeaseLostError` when the change's ``lease`` is no longer
          the task's;
        * :class:`~mail.errors.StorageError` when the store failed (a full disk): a retry
          may succeed.

        Raises :class:`~mail.errors.StorageError` when nothing could be tried (the store
        is not open, the database is unreachable). A task id given twice is applied in
        order, as one change. Events are stored once per ``(task_id, seq)``: a retried
        change never duplicates one. :attr:`outage` and :attr:`writing_for` follow.
        """
        return await self._saving("save_changes", key, changes)

    async def _saving(
        self, op: str, key: CallerKey, changes: Sequence[TaskChanges]
    ) -> dict[str, StorageError]:
        """:meth:`_save`, keeping :attr:`outage`, :attr:`written_at` and
        :meth:`writing_for` up to date."""
        started = time.monotonic()
        self._writes_started.append(started)
        try:
            failures = await self._save(op, key, changes)
        except Exception as e:
            self.outage = str(e) or type(e).__name__
            raise
        finally:
            self._writes_started.remove(started)
            if self.on_write is not None:
                self.on_write(time.monotonic() - started)
        failed = next((e for e in failures.values() if type(e) is StorageError), None)
        self.outage = None if failed is None else str(failed)
        if failed is None:
            self.written_at = time.monotonic()
        return failures

    def writing_for(self) -> float:
        """Seconds the oldest write under way has been running (0 when none is)."""
        writes = self._writes_started
        return time.monotonic() - min(writes) if writes else 0.0

    @abstractmethod
    async def _save(
        self, op: str, key: CallerKey, changes: Sequence[TaskChanges]
    ) -> dict[str, StorageError]:
        """:meth:`save_changes`, its errors naming ``op``."""

    @abstractmethod
    async def load_tasks(self, key: CallerKey) -> list[TaskRow]:
        """Return the caller's tasks, oldest ``start_time`` first."""

    @abstractmethod
    async def load_task(self, key: CallerKey, task_id: str) -> TaskRow | None:
        """Return one task record, or ``None``."""

    @abstractmethod
    async def load_events(
        self, key: CallerKey, task_id: str, after: int = 0, limit: int | None = None
    ) -> list[EventRow]:
        """Return the events with ``seq > after`` in sequence order, at most ``limit``."""

    @abstractmethod
    async def load_details(self, key: CallerKey, task_ids: Sequence[str]) -> dict[str, TaskDetails]:
        """Return the events, histories, response, breakpoints and stash of many tasks at
        once, by task id (in the order of ``task_ids``). A task with nothing stored but
        its record is absent, so ``result.get(task_id, TaskDetails())`` is always right."""

    @abstractmethod
    async def prune(
        self, *, older_than: timedelta | None = None, keep_last: int | None = None
    ) -> int:
        """Delete finished tasks (:data:`FINISHED_STATES`) and all their rows, of every
        caller: those last updated more than ``older_than`` ago and those beyond the
        ``keep_last`` most recently updated. Returns how many were deleted. A negative
        ``keep_last`` raises :class:`mail.errors.ConfigurationError`."""

    @abstractmethod
    async def health(self) -> str:
        """``"ok"``, or a short description of what is wrong (never raises)."""

    @abstractmethod
    async def schema_version(self) -> int:
        """The newest applied migration (0 for the memory store)."""

    # --- the same writes and reads for one kind of row ----------------------------------

    async def _save_one(self, op: str, key: CallerKey, changes: Sequence[TaskChanges]) -> None:
        failures = await self._saving(op, key, changes)
        if failures:
            raise next(iter(failures.values()))

    async def save_task(self, key: CallerKey, task: TaskRow) -> None:
        """Insert or replace the record of ``task.task_id``."""
        await self._save_one("save_task", key, [TaskChanges(task_id=task.task_id, task=task)])

    async def append_events(self, key: CallerKey, rows: Sequence[EventRow]) -> None:
        """Store events; a ``(task_id, seq)`` already stored is ignored."""
        changes = [TaskChanges(task_id=row.task_id, events=[row]) for row in rows]
        await self._save_one("append_events", key, changes)

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
        changes = TaskChanges(task_id=task_id, histories=[(agent, history, tool_format)])
        await self._save_one("save_history", key, [changes])

    async def save_response(self, key: CallerKey, task_id: str, message: dict[str, Any]) -> None:
        """Insert or replace the final response message of ``task_id``."""
        changes = TaskChanges(task_id=task_id, response=message)
        await self._save_one("save_response", key, [changes])

    async def save_breakpoints(
        self, key: CallerKey, task_id: str, rows: Sequence[BreakpointRow]
    ) -> None:
        """Replace the pending breakpoint calls of ``task_id`` (an empty list clears them)."""
        changes = TaskChanges(task_id=task_id, breakpoints=list(rows))
        await self._save_one("save_breakpoints", key, [changes])

    async def save_stash(self, key: CallerKey, task_id: str, rows: Sequence[StashRow]) -> None:
        """Replace the stashed messages of ``task_id`` (an empty list clears them)."""
        await self._save_one("save_stash", key, [TaskChanges(task_id=task_id, stash=list(rows))])

    async def _details(self, key: CallerKey, task_id: str) -> TaskDetails:
        return (await self.load_details(key, [task_id])).get(task_id) or TaskDetails()

    async def load_histories(self, key: CallerKey, task_id: str) -> dict[str, list[dict[str, Any]]]:
        """Return the current history of each agent of ``task_id``, by agent name."""
        return (await self._details(key, task_id)).histories

    async def load_response(self, key: CallerKey, task_id: str) -> dict[str, Any] | None:
        """Return the final response of ``task_id``, or ``None``."""
        return (await self._details(key, task_id)).response

    async def load_breakpoints(self, key: CallerKey, task_id: str) -> list[BreakpointRow]:
        """Return the pending breakpoint calls of ``task_id`` in the order saved."""
        return (await self._details(key, task_id)).breakpoints

    async def load_stash(self, key: CallerKey, task_id: str) -> list[StashRow]:
        """Return the stashed messages of ``task_id`` in the order saved."""
        return (await self._details(key, task_id)).stash

    # --- for the backends ---------------------------------------------------------------

    @contextmanager
    def reported(self, op: str) -> Iterator[None]:
        """Turn any failure inside the block into a :class:`StorageError` naming this
        store and ``op`` (``from`` the failure)."""
        try:
            yield
        except (StorageError, ConfigurationError):
            raise
        except Exception as e:
            raise self.failure(op, e) from e

    def failure(
        self, op: str, error: BaseException | str, kind: type[StorageError] = StorageError
    ) -> StorageError:
        """The ``kind`` of :class:`StorageError` saying that ``op`` failed in this store
        (caused by ``error`` when it is an exception)."""
        if isinstance(error, str):
            return kind(f"{self.name}: {op} failed: {error}")
        failed = kind(f"{self.name}: {op} failed: {str(error) or type(error).__name__}")
        failed.__cause__ = error
        return failed

    def refusal(self, op: str, error: BaseException | str) -> StorageRefusedError:
        """The :class:`StorageRefusedError` saying that this store refused a task's rows."""
        refused = self.failure(op, error, StorageRefusedError)
        assert isinstance(refused, StorageRefusedError)  # noqa: S101
        return refused

    def lease_lost(self, op: str, task_id: str, owner: str) -> LeaseLostError:
        """The :class:`LeaseLostError` of a write of ``task_id`` fenced off."""
        lost = self.failure(
            op, f"replica {owner} no longer holds the lease of task {task_id!r}", LeaseLostError
        )
        assert isinstance(lost, LeaseLostError)  # noqa: S101
        return lost


_ENCODER = json.JSONEncoder(separators=(",", ":"))
# a NUL escaped by orjson (after an even number of backslashes: "\\u0000" is text)
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def dumps(value: Any) -> str:
    """Compact JSON; raises ``TypeError`` or ``ValueError`` for what JSON cannot hold and
    ``ValueError`` for text no store holds (a lone surrogate, a NUL character: see
    :func:`mail._text.text_problem`), naming where it is.

    orjson writes NaN and the infinities as ``null``, as JSON has no such numbers; what
    it refuses (an integer beyond 64 bits, a key that is not a string) goes to the
    standard encoder, which takes it or says why.
    """
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        _check_text(value)  # orjson refuses lone surrogates: say where
        return _ENCODER.encode(value)
    if "\\u0000" in text and _NUL_ESCAPE.search(text):
        _check_text(value)
    return text


def _check_text(value: Any) -> None:
    found = find_bad_text(value)
    if found is not None:
        where, problem = found
        raise ValueError(f"{where} {problem}")


@overload
def checked_text(value: str, what: str) -> str: ...
@overload
def checked_text(value: None, what: str) -> None: ...
def checked_text(value: str | None, what: str) -> str | None:
    """``value`` (a text column: a title, an owner, a name), or ``ValueError`` naming
    ``what`` when no store can hold it."""
    if value is not None and (problem := text_problem(value)) is not None:
        raise ValueError(f"{what} {problem}")
    return value


def loads(text: str | bytes) -> Any:
    """Parse stored JSON (the standard parser for what orjson refuses: integers beyond
    64 bits, written by the fallback of :func:`dumps`)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def utc(value: datetime) -> datetime:
    """``value`` in UTC (a naive datetime is taken as UTC)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def prune_cutoff(older_than: timedelta | None, keep_last: int | None) -> datetime | None:
    """Check the retention arguments and return the time before which tasks go."""
    if keep_last is not None and keep_last < 0:
        raise ConfigurationError(f"keep_last must be >= 0, got {keep_last}")
    if older_than is None:
        return None
    return datetime.now(UTC) - older_than


def merged(changes: Sequence[TaskChanges]) -> list[TaskChanges]:
    """``changes`` with each task once, a task given twice merged in order (into new
    objects: the caller's lists are left as they are)."""
    if len({c.task_id for c in changes}) == len(changes):
        return list(changes)
    by_task: dict[str, TaskChanges] = {}
    for change in changes:
        by_task.setdefault(change.task_id, TaskChanges(task_id=change.task_id)).merge(change)
    return list(by_task.values())


def foreign_rows(changes: TaskChanges) -> str | None:
    """What is wrong when the record or an event of ``changes`` is another task's."""
    task_id = changes.task_id
    if changes.task is not None and changes.task.task_id != task_id:
        return f"the record of task {changes.task.task_id!r} in the changes of {task_id!r}"
    for row in changes.events:
        if row.task_id != task_id:
            return f"an event of task {row.task_id!r} in the changes of {task_id!r}"
    return None
