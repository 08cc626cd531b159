"""Keeping a runtime's tasks in a store: :class:`StoreRecorder` writes them, :func:`restore`
reads them back.

The runtime never waits on the store while it works: the recorder is told what changed
(a task's record, its new events, an agent's history) and notes it; one background task
writes the notes with :meth:`~mail.db.store.TaskStore.save_changes` every ``interval``
seconds, at once when someone waits for them (:meth:`StoreRecorder.persisted`), or when
``max_pending`` notes wait. Notes made while a write runs go into the next write, so the
tasks that finish during one commit share the next one (group commit).

**Durable answers.** Before the runtime tells a caller that a task completed, failed or
paused, it awaits :meth:`StoreRecorder.settled`: the task's state and every event it had
then are committed, or the answer is held back (:class:`Settled` says why). A write the
store failed (a full disk, a database that does not answer) is kept and retried every
``retry_after`` seconds (events are stored once per sequence number, everything else is
replaced, so a retry is harmless); each task it touched gets one ``storage_error`` event
per outage. A task whose rows the store *refused* (they can never be stored) is set
aside: nothing more of it is written but its record, and the runtime ends it ``failed``
(``on_refused``). In cluster mode every change carries the lease the replica holds
(``fence``); a task whose lease another replica took is not written at all
(``on_lost``).

:func:`restore` rebuilds a runtime's tasks: events keep their sequence numbers, and a
task that was running when the process stopped becomes ``interrupted`` with a
``task_interrupted`` event (resumable with ``resume_from="user_response"``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from mail.core._compact import Compactor, expand
from mail.core._system_messages import SystemMessages
from mail.core.budget import TaskBudget
from mail.core.events import EventLog, EventName, MAILEvent
from mail.core.tasks import MAILTask, PendingBreakpoint, TaskState, TaskTable, TurnRequest
from mail.db.store import (
    BreakpointRow,
    CallerKey,
    EventRow,
    StashRow,
    TaskChanges,
    TaskRow,
    TaskStore,
)
from mail.errors import LeaseLostError, StorageError, StorageRefusedError

if TYPE_CHECKING:
    from mail.core.message import MAILMessage

__all__ = ["Committed", "Settled", "StoreRecorder", "restore"]

logger = logging.getLogger("mail.runtime")


#: What one write committed for one task: its log, the first and last sequence numbers of
#: its events written (``None``: none) and the task when its record was written.
Committed = tuple[EventLog, int | None, int | None, MAILTask | None]


@dataclass(frozen=True, slots=True)
class Settled:
    """Whether a task, as it was when asked, is in the store (:meth:`StoreRecorder.settled`).

    ``state``: ``committed`` (it is), ``refused`` (the store refused its rows: the task
    is set aside, ``failed``), ``moved`` (cluster mode: another replica holds its lease
    now), ``pending`` (not committed within the bound: the store fails, or is slow).
    ``reason`` says why when it is not committed.
    """

    state: Literal["committed", "refused", "moved", "pending"]
    reason: str | None = None

    @property
    def committed(self) -> bool:
        return self.state == "committed"


COMMITTED = Settled("committed")


class StoreRecorder:
    """Writes one runtime's task changes to ``store`` under ``key``, in the background.

    ``histories`` is the runtime's ``{task_id}::{agent}`` -> history mapping and
    ``tool_formats`` each agent's tool format (``"completions"`` or ``"responses"``).
    With ``store_histories=False`` (a swarm's ``enable_db_agent_histories: false``, as
    v1.3.6) the agents' histories are not stored; task records, events and responses are.
    When the store is :attr:`~mail.db.store.TaskStore.v1_readable`, rows are stored whole,
    as v1.3.6 writes them, not compacted.
    """

    def __init__(
        self,
        store: TaskStore,
        key: CallerKey,
        *,
        histories: Mapping[str, list[dict[str, Any]]],
        tool_formats: Mapping[str, str],
        store_histories: bool = True,
        interval: float = 0.05,
        retry_after: float = 1.0,
        max_pending: int = 512,
    ) -> None:
        self.store = store
        self.key = key
        self.interval = interval
        self.retry_after = retry_after
        self.max_pending = max_pending
        self.store_histories = store_histories
        self._histories = histories
        self._tool_formats = tool_formats
        #: the last write's failure, ``None`` once a write succeeds again
        self.error: str | None = None
        self._tasks: dict[str, MAILTask] = {}  # tasks whose record changed
        self._logs: dict[str, EventLog] = {}  # logs with events not taken yet
        # (task_id, agent) whose history changed -> the task's log
        self._turns: dict[tuple[str, str], EventLog] = {}
        self._compactor = Compactor()  # each message stored once
        self._retry: dict[str, TaskChanges] = {}  # what the last write could not store
        self._retry_logs: dict[str, EventLog] = {}
        self._reported: set[str] = set()  # tasks told of the current outage
        self._inflight: set[str] = set()  # tasks of the write under way
        #: set-aside tasks (the store refused their rows) -> why; only their record is
        #: written again (``_tombstones``)
        self._refused: dict[str, str] = {}
        self._tombstones: dict[str, MAILTask] = {}
        self._lost: set[str] = set()  # tasks whose lease another replica took
        self._waiters: list[asyncio.Future[None]] = []
        self._attempts: list[asyncio.Future[None]] = []  # woken after each write
        self._wake = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._writer: asyncio.Task[None] | None = None
        self._writing = asyncio.Lock()
        self._closed = False
        #: called after each write with, per task written: its log, the first and last
        #: sequence numbers of the events committed (``None`` for none) and the task when
        #: its record was written (cluster mode publishes them)
        self.on_commit: Callable[[list[Committed]], None] | None = None
        #: ``on_refused(task_id, reason)``: the store refused the task's rows (the runtime
        #: ends the task ``failed``)
        self.on_refused: Callable[[str, str], None] | None = None
        #: cluster mode: the lease ``(owner, generation)`` this replica holds of a task,
        #: written with its changes (``(owner, -1)`` when it holds none)
        self.fence: Callable[[str], tuple[str, int]] | None = None
        #: cluster mode: ``on_lost(task_id)``: a write found the task's lease taken
        self.on_lost: Callable[[str], None] | None = None

    # --- what changed (cheap, synchronous) ------------------------------------------------

    def task_changed(self, task: MAILTask) -> None:
        """The task's record changed (created, resumed, finished, paused)."""
        task_id = task.task_id
        if task_id in self._refused:
            self._tombstones[task_id] = task  # its record alone
        else:
            self._lost.discard(task_id)  # a copy runs here again
            self._tasks[task_id] = task
            self._logs[task_id] = task.log
        self._noted()

    def events_added(self, log: EventLog) -> None:
        """``log`` got events (:class:`~mail.core.events.EventLog` calls this)."""
        if log.task_id in self._refused:
            return
        self._logs[log.task_id] = log
        self._noted()

    def turn_ended(self, task: MAILTask, agent: str) -> None:
        """``agent`` ended a turn in ``task``: its history changed."""
        if not self.store_histories or task.task_id in self._refused:
            return
        self._turns[(task.task_id, agent)] = task.log
        self._noted()

    def drop(self, task_id: str) -> None:
        """Write nothing more of ``task_id`` (cluster mode: another replica runs it now)."""
        for notes in (self._tasks, self._logs, self._retry, self._retry_logs, self._tombstones):
            notes.pop(task_id, None)
        for turn in [t for t in self._turns if t[0] == task_id]:
            del self._turns[turn]

    def refused(self, task_id: str) -> str | None:
        """Why the store refused ``task_id``'s rows (it is set aside), or ``None``."""
        return self._refused.get(task_id)

    def _pending(self) -> set[str]:
        """The tasks whose record or events the store has not got yet (an agent's
        history, noted as its turn returns, follows in the next write)."""
        pending = self._tasks.keys() | self._logs.keys() | self._retry.keys()
        return pending | self._inflight | self._tombstones.keys()

    @property
    def backlog(self) -> int:
        """How many tasks have a record or events the store has not got yet (those of the
        write under way among them)."""
        return len(self._pending())

    def outcome(self, task_id: str) -> Settled:
        """Whether ``task_id``, as it is now, is in the store (:class:`Settled`, never
        ``pending`` for a task whose record and events are all written)."""
        reason = self._refused.get(task_id)
        if reason is not None:
            return Settled("refused", reason)
        if task_id in self._lost:
            return Settled("moved", "another replica runs this task now")
        # what a caller is told of: the task's record and events
        notes = (self._tasks, self._logs, self._retry, self._tombstones, self._inflight)
        if any(task_id in pending for pending in notes):
            return Settled("pending", self.error or "the store has not committed it yet")
        return COMMITTED

    def _noted(self) -> None:
        """Start the writer's timer (and the writer, the first time), or wake it when many
        notes wait."""
        if self._timer is not None or self._closed:
            if len(self._logs) + len(self._tasks) >= self.max_pending:
                self._wake.set()
            return
        loop = asyncio.get_running_loop()
        if self._writer is None:
            self._writer = loop.create_task(self._run(), name="mail-store-recorder")
        self._timer = loop.call_later(self.interval, self._wake.set)

    async def persisted(self) -> None:
        """Wait until everything noted so far is in the store (or, when the store fails,
        until the tasks concerned have their ``storage_error`` event)."""
        idle = not (self._tasks or self._logs or self._turns or self._writing.locked())
        if self._closed or self._writer is None or idle:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._wake.set()
        await asyncio.shield(waiter)

    async def settled(self, task_id: str, within: float) -> Settled:
        """Wait until ``task_id``, as it is now, is committed, for at most ``within``
        seconds (the writes that fail meanwhile are retried as always). Returns
        ``committed``, ``refused`` or ``moved`` as soon as it is so, else ``pending``."""
        outcome = self.outcome(task_id)
        if outcome.state != "pending" or within <= 0 or self._closed:
            return outcome
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            waiter: asyncio.Future[None] = loop.create_future()
            self._attempts.append(waiter)  # woken after the next write, or at the deadline
            if not self._retry:  # (a retry waits for its own time)
                self._wake.set()
            timer = loop.call_at(deadline, _wake_up, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
            outcome = self.outcome(task_id)
            if outcome.state != "pending" or loop.time() >= deadline or self._closed:
                return outcome

    # --- writing ---------------------------------------------------------------------------

    async def _run(self) -> None:
        while not self._closed:
            await self._wake.wait()
            self._wake.clear()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            # shielded: closing cancels this loop, never a write under way (close() waits
            # for it, then writes what is left)
            if not await asyncio.shield(self.flush()) and not self._closed:
                await asyncio.sleep(self.retry_after)
                self._wake.set()  # try again

    def _take(self) -> tuple[list[TaskChanges], dict[str, EventLog]]:
        """The notes as changes to write, after those of the last failed write, and the
        event logs of their tasks; the notes are emptied."""
        changes, self._retry = self._retry, {}
        logs, self._retry_logs = self._retry_logs, {}

        def of(task_id: str) -> TaskChanges:
            return changes.setdefault(task_id, TaskChanges(task_id=task_id))

        # rows another implementation reads are stored whole, as it writes them
        compact = None if self.store.v1_readable else self._compactor
        for task_id, task in self._tasks.items():
            of(task_id).merge(_record(task, compact))
        for (task_id, agent), log in self._turns.items():
            history = self._histories.get(f"{task_id}::{agent}")
            if history is not None:
                fmt = self._tool_formats.get(agent, "responses")
                stored = list(history) if compact is None else compact.history(log, history)
                of(task_id).histories.append((agent, stored, fmt))
        for task_id, log in self._logs.items():
            new = log.since(log.stored_seq)
            if new:
                log.stored_seq = new[-1].seq or log.stored_seq
                of(task_id).events += [
                    EventRow(
                        task_id=task_id,
                        seq=e.seq or 0,
                        event=e.event,
                        data=dict(e.data()) if compact is None else compact.event(log, e),
                    )
                    for e in new
                ]
        for task_id, task in self._tasks.items():
            if not task.is_running:  # its messages are needed again only if it resumes
                self._compactor.forget(task_id)
        for task_id, task in self._tombstones.items():
            of(task_id).task = _record(task, None).task
        logs.update(self._logs)
        self._tasks, self._logs, self._turns, self._tombstones = {}, {}, {}, {}
        if self.fence is not None:
            for change in changes.values():
                change.lease = self.fence(change.task_id)
        self._inflight = set(changes)
        return list(changes.values()), logs

    async def flush(self) -> bool:
        """Write everything noted now; False (and :attr:`error` set) when some of it could
        not be stored (it is kept for the next write)."""
        async with self._writing:
            records = dict(self._tasks) if self.on_commit is not None else {}
            changes, logs = self._take()
            waiters, self._waiters = self._waiters, []
            try:
                ok = await self._write(changes, logs)
                self._committed(changes, logs, records)
                return ok
            finally:
                self._inflight = set()
                attempts, self._attempts = self._attempts, []
                for waiter in (*waiters, *attempts):
                    if not waiter.done():
                        waiter.set_result(None)

    async def _write(self, changes: list[TaskChanges], logs: dict[str, EventLog]) -> bool:
        if not changes:
            return True
        try:
            errors = await self.store.save_changes(self.key, changes)
        except Exception as e:  # noqa: BLE001  # reported (log, events, /health), retried
            failed = e if isinstance(e, StorageError) else StorageError(str(e) or repr(e))
            errors = dict.fromkeys((c.task_id for c in changes), failed)
        failures: dict[str, str] = {}
        for change in changes:
            error = errors.get(change.task_id)
            if isinstance(error, StorageRefusedError):
                self._refuse(change.task_id, str(error))
            elif isinstance(error, LeaseLostError):
                self._lose(change.task_id)
            elif error is not None:
                failures[change.task_id] = str(error)
        if not failures:
            if self.error is not None:
                logger.warning("storing tasks works again")
            self.error = None
            self._reported.clear()
            return True
        if self.error is None:
            logger.error("storing tasks failed, will retry: %s", next(iter(failures.values())))
        self.error = next(iter(failures.values()))
        for change in changes:
            if change.task_id in failures:
                self._keep(change, logs.get(change.task_id), failures[change.task_id])
        return False

    def _keep(self, change: TaskChanges, log: EventLog | None, reason: str) -> None:
        """Keep a change the store failed to write for the next try; tell its task once
        per outage (a ``storage_error`` event)."""
        task_id = change.task_id
        self._retry[task_id] = change
        if log is None:
            return
        self._retry_logs[task_id] = log
        if task_id not in self._reported:  # one event per task and outage
            self._reported.add(task_id)
            log.emit(
                EventName.STORAGE_ERROR,
                f"storing this task failed, will retry: {reason}",
                {"error": reason, "unsaved_records": _records(change)},
            )

    def _refuse(self, task_id: str, reason: str) -> None:
        """The store refused ``task_id``'s rows: set it aside (nothing more of it is
        written but its record) and tell the runtime, which ends it ``failed``."""
        if task_id in self._refused:  # its record alone was refused too
            logger.error("task %s: even its record could not be stored: %s", task_id, reason)
            return
        logger.error("task %s could not be stored, it is set aside: %s", task_id, reason)
        self._refused[task_id] = reason
        self.drop(task_id)
        self._compactor.forget(task_id)
        if self.on_refused is not None:
            self.on_refused(task_id, reason)

    def _lose(self, task_id: str) -> None:
        """Another replica holds ``task_id``'s lease: nothing of it was, nor will be,
        written here."""
        logger.error("task %s was not stored: another replica holds its lease", task_id)
        self._lost.add(task_id)
        self.drop(task_id)
        if self.on_lost is not None:
            self.on_lost(task_id)

    def _committed(
        self, changes: list[TaskChanges], logs: dict[str, EventLog], records: dict[str, MAILTask]
    ) -> None:
        """Let followers of the committed events see them; tell :attr:`on_commit`."""
        done: list[Committed] = []
        for change in changes:
            log = logs.get(change.task_id)
            task_id = change.task_id
            refused = task_id in self._refused and bool(change.events)  # (not a tombstone)
            if log is None or refused or task_id in self._retry or task_id in self._lost:
                continue  # not written: kept for the next try, set aside, or elsewhere
            first = last = None
            if change.events:
                first, last = change.events[0].seq, change.events[-1].seq
                log.commit(last)
            done.append((log, first, last, records.get(change.task_id)))
        if done and self.on_commit is not None:
            try:
                self.on_commit(done)
            except Exception:
                logger.exception("publishing committed events failed")

    async def close(self) -> None:
        """Stop writing in the background, then write what is left (one more try when a
        write fails: what still fails is logged as lost)."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer
        if not await self.flush() and not await self.flush():
            logger.error("closing: %d tasks could not be stored: %s", self.backlog, self.error)


def _wake_up(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _record(task: MAILTask, compact: Compactor | None) -> TaskChanges:
    """The task's record; once its turn ended, its final response and what it waits on
    (breakpoint calls, stashed messages: a resumed task's are replaced when it ends)."""
    changes = TaskChanges(
        task_id=task.task_id,
        task=TaskRow(
            task_id=task.task_id,
            task_owner=task.task_owner,
            task_contributors=list(task.task_contributors),
            remote_swarms=sorted(task.remote_swarms),
            state=task.state.value,
            title=task.title,
            start_time=task.start_time,
            updated_at=task.updated_at,
            request=_request_json(task),
        ),
    )
    if not task.is_running:
        response = cast("dict[str, Any] | None", task.response)
        changes.response = response if compact is None else compact.response(task.log, response)
        changes.breakpoints = [
            BreakpointRow(
                call_id=call_id,
                agent=p.agent,
                call=p.call.model_dump(mode="json"),
                normalized=p.normalized,
            )
            for call_id, p in task.pending_breakpoints.items()
        ]
        changes.stash = [StashRow(priority=p, seq=s, message=dict(m)) for p, s, m in task.stash]
    return changes


def _request_json(task: MAILTask) -> dict[str, Any] | None:
    """The task's ``request`` column: what opened its turn and, under ``budget``, its
    budget (limits and what it spent), which a task loaded back keeps."""
    request = task.request.as_json() if task.request is not None else None
    if task.budget is None:
        return request
    return {**(request or {}), "budget": task.budget.as_json()}


def _records(change: TaskChanges) -> int:
    """How many rows ``change`` holds."""
    parts = (change.task, change.response)
    return sum(p is not None for p in parts) + len(change.events) + len(change.histories)


# --- reading back ----------------------------------------------------------------------------

#: Up to this many tasks are read one by one; more in one read of the caller's records.
_FEW = 8
_KEPT_STATES = frozenset({TaskState.RUNNING.value, TaskState.WAITING_BREAKPOINT.value})


def _kept(rows: list[TaskRow], keep_finished: int) -> list[TaskRow]:
    """``rows`` (oldest first) without the finished ones beyond the newest ``keep_finished``
    (the runtime would evict those at once)."""
    others = [r for r in rows if r.state not in _KEPT_STATES]
    newest = {r.task_id for r in others[len(others) - keep_finished :]} if keep_finished else set()
    return [r for r in rows if r.state in _KEPT_STATES or r.task_id in newest]


async def restore(
    store: TaskStore,
    key: CallerKey,
    *,
    tasks: TaskTable,
    histories: dict[str, list[dict[str, Any]]],
    system: SystemMessages,
    next_seq: Callable[[], int],
    only: Collection[str] | None = None,
) -> int:
    """Load the caller's stored tasks into ``tasks`` (skipping ids it already holds) and
    their agents' ``histories``; stashed messages get fresh queue numbers from ``next_seq``.

    Returns how many tasks were loaded. A task stored as running is marked interrupted,
    with a ``task_interrupted`` event and a ``system`` error as its answer, unless ``only``
    is given: then only those tasks are loaded, finished or not, and a running one stays
    running, with no turn (cluster mode's fail-over decides, :mod:`mail.server._cluster_failover`).
    Raises :class:`mail.errors.StorageError`.
    """
    from mail.core.tools import AgentToolCall  # noqa: PLC0415  # pydantic model, only here

    if only is None:
        rows = _kept(await store.load_tasks(key), tasks.max_finished)
    else:
        wanted = set(only)
        if len(wanted) > _FEW:  # one read of the caller's records
            rows = [r for r in await store.load_tasks(key) if r.task_id in wanted]
        else:
            rows = [r for t in wanted if (r := await store.load_task(key, t)) is not None]
    rows = [r for r in rows if r.task_id not in tasks]
    details = await store.load_details(key, [r.task_id for r in rows])
    for row in rows:
        stored = details.get(row.task_id)
        events: list[MAILEvent] = []
        if stored is not None:
            datas, stored.histories, stored.response = expand(
                row.task_id,
                [(e.event, e.data) for e in stored.events],
                stored.histories,
                stored.response,
            )
            events = [_event(e, data) for e, data in zip(stored.events, datas, strict=True)]
        task = MAILTask(
            task_id=row.task_id,
            task_owner=row.task_owner,
            task_contributors=list(row.task_contributors),
            start_time=row.start_time,
            updated_at=row.updated_at,
            state=TaskState(row.state),
            title=row.title,
            remote_swarms=set(row.remote_swarms),
            listener=tasks.listener,
            events=events,
            request=TurnRequest.from_json(row.request),
            budget=TaskBudget.from_json(row.request.get("budget")) if row.request else None,
        )
        tasks.add(task, notify=False)  # as stored: nothing to write
        if stored is not None:
            for agent, history in stored.histories.items():
                histories[f"{row.task_id}::{agent}"] = history
                task.agents.add(agent)
            task.response = cast("MAILMessage | None", stored.response)
            # (a task that ran again after a pause has its calls replaced when it ends)
            paused = task.state is TaskState.WAITING_BREAKPOINT
            for b in stored.breakpoints if paused else ():
                call = AgentToolCall.model_validate(b.call)
                task.pending_breakpoints[b.call_id] = PendingBreakpoint(
                    agent=b.agent, call=call, normalized=b.normalized
                )
            task.stash = [
                (s.priority, next_seq(), cast("MAILMessage", s.message)) for s in stored.stash
            ]
        if task.state is TaskState.RUNNING and only is not None:
            continue  # the caller decides how it goes on
        if task.state is TaskState.RUNNING:
            reason = "the server stopped while this task was running"
            task.state = TaskState.INTERRUPTED
            task.touch()
            task.response = system.task_error(task.task_id, reason)
            task.changed()
            task.log.emit(EventName.TASK_INTERRUPTED, reason)
        if task.response is not None:
            task.turn = asyncio.get_running_loop().create_future()
            task.turn.set_result(task.response)
        tasks.mark_finished(task)
    return len(rows)


async def stored_events(store: TaskStore, key: CallerKey, task_id: str) -> list[MAILEvent]:
    """The events of one stored task as they were appended (none for an unknown task).
    Raises :class:`mail.errors.StorageError`."""
    stored = (await store.load_details(key, [task_id])).get(task_id)
    if stored is None:
        return []
    datas, _, _ = expand(task_id, [(e.event, e.data) for e in stored.events], {}, None)
    return [_event(e, data) for e, data in zip(stored.events, datas, strict=True)]


def _event(row: EventRow, data: dict[str, Any]) -> MAILEvent:
    return MAILEvent(
        event=row.event,
        task_id=row.task_id,
        description=data.get("description", ""),
        extra_data=data.get("extra_data") or {},
        timestamp=data.get("timestamp"),
        seq=row.seq,
    )
