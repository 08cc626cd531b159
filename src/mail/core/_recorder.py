"""The store recorder: a runtime's changes, written to its :class:`TaskSink` in batches.

The hot path never awaits the store. :class:`StoreRecorder` is told what changed (a task's
log got events, a task was created or ended, an agent's turn ended) and only notes it; one
background task it owns turns the notes into one :class:`WriteBatch` every ``interval``
seconds, or as soon as a task's turn ends or ``max_pending`` notes wait, and hands it to
the sink; after a write it waits ``min_gap`` seconds, so that under load one write carries
the rows of many tasks, or less once nothing has been noted for ``quiet`` seconds: when the
server goes idle after a burst, the burst's last tasks are stored then, not a gap later
(under load notes come every few tens of microseconds and the gap runs out). A batch holds
at most ``max_batch_tasks`` tasks' notes; a backlog is written batch after batch, with the
event loop free in between.

Rows are snapshotted when a batch is made, so a history written many times between
writes is stored once.

The backlog is bounded: while ``max_backlog`` tasks or more wait to be stored and the store
works, the runtime's submissions wait (:meth:`StoreRecorder.room`), so a store slower than
the runtime slows new tasks down instead of letting unsaved work pile up in memory (and be
lost by a crash). During an outage nothing waits: the server keeps serving.
A failed write is logged at ERROR, kept in :attr:`StoreRecorder.error` (the server's
``/health`` reports it) and retried on the next flush: events are stored exactly once per
sequence number, and every other write replaces, so retrying is safe. Each task whose rows could not be stored gets one ``storage_error`` event
(live, so stream followers see it) per outage: the event itself is stored by a later
retry, and a retry that fails again adds no further event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any, cast

from mail.core._persist import TaskSink, TaskSnapshot, TaskWriteError, WriteBatch
from mail.core.events import EventLog, EventName, MAILEvent
from mail.core.tasks import MAILTask

if TYPE_CHECKING:
    from mail.core.runtime import MAILRuntime

__all__ = ["StoreRecorder"]

logger = logging.getLogger("mail.runtime")

#: What :meth:`StoreRecorder._take` removes from the pending notes: new events by task,
#: tasks whose record changed, tasks whose turn ended, ``(task_id, agent)`` histories.
_Notes = tuple[dict[str, list[MAILEvent]], dict[str, MAILTask], set[str], set[tuple[str, str]]]


class StoreRecorder:
    """Turns a runtime's changes into batched sink writes, off the hot path."""

    def __init__(
        self,
        sink: TaskSink,
        *,
        interval: float = 0.05,
        max_pending: int = 512,
        retry_after: float = 1.0,
        min_gap: float = 0.01,
        quiet: float = 0.002,
        max_batch_tasks: int = 200,
        max_backlog: int = 1000,
    ) -> None:
        self.sink = sink
        self.interval = interval
        self.min_gap = min_gap
        self.quiet = quiet
        self.max_batch_tasks = max_batch_tasks
        self.max_backlog = max_backlog
        self.max_pending = max_pending
        self.retry_after = retry_after
        #: the last write's failure, ``None`` once a write succeeds again
        self.error: str | None = None
        self._runtime: MAILRuntime | None = None
        # logs with events not taken yet (each log's listener is unset until taken)
        self._logs: dict[str, EventLog] = {}
        self._tasks: dict[str, MAILTask] = {}
        self._finished: set[str] = set()
        self._histories: set[tuple[str, str]] = set()
        # tasks whose stored breakpoints / stash are not empty: only those need clearing
        self._stored_breakpoints: set[str] = set()
        self._stored_stash: set[str] = set()
        self._retry: WriteBatch | None = None
        # tasks told of the current outage (one storage_error event each until it ends)
        self._reported: set[str] = set()
        self._pending = 0  # notes not taken yet: zero exactly when nothing waits
        self._noted = asyncio.Event()  # set by the first note after everything was taken
        self._wake = asyncio.Event()
        self._flush_lock = asyncio.Lock()  # one flush at a time: a failed batch is kept whole
        self._room = asyncio.Event()  # set while the backlog is below max_backlog
        self._room.set()
        self._flushing: asyncio.Task[None] | None = None
        self._closed = False

    # --- notes from the runtime (cheap, synchronous) -------------------------------------

    def bind(self, runtime: MAILRuntime) -> None:
        self._runtime = runtime

    def attach(self, task: MAILTask) -> None:
        """Follow a new ``task``: record it now and each event its log gets."""
        task.log.listener = self._log_changed
        self.task_changed(task)

    def follow(self, log: EventLog) -> None:
        """Store the events ``log`` gets after its ``stored_seq``."""
        log.listener = self._log_changed
        if log.last_seq > log.stored_seq:
            self._log_changed(log)

    # The notes count themselves in _pending inline and call _bump only when that count
    # starts or reaches max_pending: about eight notes a task, a call saved on each.

    def _log_changed(self, log: EventLog) -> None:
        # called once per log until it is taken: events cost no call of their own
        log.listener = None
        self._logs[log.task_id] = log
        self._pending = pending = self._pending + 1
        if pending == 1 or pending >= self.max_pending:
            self._bump()

    def task_changed(self, task: MAILTask) -> None:
        self._tasks[task.task_id] = task
        self._pending = pending = self._pending + 1
        if pending == 1 or pending >= self.max_pending:
            self._bump()

    def task_finished(self, task: MAILTask) -> None:
        """The task's turn ended: its record, histories, response, breakpoints and stash."""
        task_id = task.task_id
        self._tasks[task_id] = task
        self._finished.add(task_id)
        for agent in task.agents:
            self._histories.add((task_id, agent))
        self._pending += 1
        self._bump(urgent=True)

    def turn_ended(self, task: MAILTask, agent: str) -> None:
        self._histories.add((task.task_id, agent))
        self._pending = pending = self._pending + 1
        if pending == 1 or pending >= self.max_pending:
            self._bump()

    def loaded(self, task: MAILTask) -> None:
        """``task`` came back from the store with its breakpoints and stash."""
        if task.pending_breakpoints:
            self._stored_breakpoints.add(task.task_id)
        if task.stash:
            self._stored_stash.add(task.task_id)

    def forget(self, task_id: str) -> None:
        """``task_id`` left the runtime's memory."""
        self._stored_breakpoints.discard(task_id)
        self._stored_stash.discard(task_id)

    @property
    def backlog(self) -> int:
        """How many tasks have changes not stored yet (about: a task counts once it has
        pending events or a pending record)."""
        retry = self._retry
        waiting = len(retry.tasks) if retry is not None else 0
        return max(len(self._logs), len(self._tasks)) + waiting

    @property
    def full(self) -> bool:
        """True while the backlog is at ``max_backlog`` or more: :meth:`room` may wait
        (looked at on every submission: the count of notes, at least the backlog's when
        the store works, rules the usual case out first)."""
        return self._pending >= self.max_backlog and self.backlog >= self.max_backlog

    async def room(self) -> None:
        """Wait until the backlog is below ``max_backlog``; at once while the store fails
        (an outage must not stop the server) or once the recorder is closed."""
        while (
            self.backlog >= self.max_backlog
            and self.error is None
            and not self._closed
            and self._flushing is not None
        ):
            self._room.clear()
            self._wake.set()
            await self._room.wait()

    def _bump(self, *, urgent: bool = False) -> None:
        """After a note counted itself: wake the flusher as the count says (starting it
        first if need be)."""
        if self._pending == 1:
            self._noted.set()
        if urgent or self._pending >= self.max_pending:
            self._wake.set()
        if self._flushing is None and not self._closed:
            with contextlib.suppress(RuntimeError):  # no running loop: flushed on close
                self._flushing = asyncio.get_running_loop().create_task(
                    self._run(), name="mail-store-recorder"
                )

    # --- flushing ------------------------------------------------------------------------

    async def _run(self) -> None:
        backlog = False
        while not self._closed:
            if not backlog:
                if not self._pending and self._retry is None:
                    # nothing to write: sleep until something is noted, not interval by interval
                    self._noted.clear()
                    await self._noted.wait()
                await self._wait_wake()
            self._wake.clear()
            async with self._flush_lock:
                written = await self._flush()
            # a full batch already waits: write it now; anything less waits for the gap,
            # so that a stream of short tasks is stored a gap's worth at a time rather than
            # a task (or a part of one) per write
            backlog = written and self.backlog >= self.max_batch_tasks
            if not written:
                await asyncio.sleep(self.retry_after)
            elif backlog:
                await asyncio.sleep(0)  # the next batch now, after other work
            elif self.min_gap > 0:
                # what ends meanwhile (however urgent) goes into the next batch
                await self._gap()

    async def _gap(self) -> None:
        """Wait ``min_gap`` seconds, or until ``quiet`` seconds passed with notes waiting
        and none added (``_pending`` only grows between two batches)."""
        quiet = self.quiet
        if not 0 < quiet < self.min_gap:
            await asyncio.sleep(self.min_gap)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.min_gap
        seen = self._pending
        while (left := deadline - loop.time()) > 0:
            await asyncio.sleep(min(quiet, left))
            pending = self._pending
            if pending and pending == seen:
                return
            seen = pending

    async def _wait_wake(self) -> None:
        """Wait for a wake-up, at most ``interval`` seconds (a timer that sets the event:
        no task per wait, as ``asyncio.wait_for`` would make)."""
        if self._wake.is_set():
            return
        timer = asyncio.get_running_loop().call_later(self.interval, self._wake.set)
        try:
            await self._wake.wait()
        finally:
            timer.cancel()

    def _take(self) -> _Notes:
        """The notes of at most ``max_batch_tasks`` tasks (the oldest), removed from the
        pending ones: snapshotting and encoding a larger batch at once would stall the
        event loop for as long."""
        logs = self._logs
        # at most that many tasks: each has at least one note (a sum that is often enough)
        if len(logs) + len(self._tasks) + len(self._histories) > self.max_batch_tasks:
            pending = dict.fromkeys(logs)
            pending.update(dict.fromkeys(self._tasks))
            pending.update(dict.fromkeys(t for t, _ in self._histories))
            if len(pending) > self.max_batch_tasks:
                return self._take_some(list(pending)[: self.max_batch_tasks])
        taken = (self._tasks, self._finished, self._histories)
        self._logs, self._tasks, self._finished, self._histories = {}, {}, set(), set()
        self._pending = 0
        return (self._new_events(logs), *taken)

    def _take_some(self, task_ids: list[str]) -> _Notes:
        chosen = set(task_ids)
        logs = {t: self._logs.pop(t) for t in chosen if t in self._logs}
        tasks = {t: self._tasks.pop(t) for t in chosen if t in self._tasks}
        finished = self._finished & chosen
        histories = {h for h in self._histories if h[0] in chosen}
        self._finished -= finished
        self._histories -= histories
        # what is left counts as that many notes: zero exactly when nothing is left, as
        # _run's sleep until the next note requires
        self._pending = len(self._logs) + len(self._tasks) + len(self._histories)
        if self._finished:
            self._wake.set()  # tasks that ended wait: as urgent as when they ended
        return self._new_events(logs), tasks, finished, histories

    def _new_events(self, logs: dict[str, EventLog]) -> dict[str, list[MAILEvent]]:
        """The events of ``logs`` not taken yet; each log's listener is set again."""
        events: dict[str, list[MAILEvent]] = {}
        listener = self._log_changed
        for task_id, log in logs.items():
            events[task_id] = log.since(log.stored_seq)
            log.stored_seq = log.last_seq
            log.listener = listener
        return events

    def _collect(self) -> WriteBatch:
        """The next batch: a retried one, with the notes of at most ``max_batch_tasks``
        tasks added."""
        batch, self._retry = self._retry or WriteBatch(), None
        events, tasks, finished, histories = self._take()
        merged = {t.task_id: t for t in batch.tasks}
        for task in tasks.values():
            merged[task.task_id] = _snapshot(task)
        batch.tasks = list(merged.values())
        for task_id, evs in events.items():
            rows = batch.events.get(task_id)
            if rows is None:
                batch.events[task_id] = evs
            else:
                rows.extend(evs)
        # Histories and responses go as they are, not copied: a sink encodes what it is
        # given before its first await (TaskSink.write), and a batch kept for a retry
        # then stores the newer history, which is the one to keep.
        rt = self._runtime
        if rt is not None:
            for task_id, agent in histories:
                history = rt.agent_histories.get(f"{task_id}::{agent}")
                if history is not None:
                    core = rt.agents.get(agent)
                    fmt = getattr(core, "tool_format", "responses")
                    batch.histories.append((task_id, agent, history, fmt))
        for task_id in finished:
            response = tasks[task_id].response
            if response is not None:
                batch.responses.append((task_id, cast("dict[str, Any]", response)))
        self._collect_waiting(batch, tasks, finished)
        return batch

    def _collect_waiting(
        self, batch: WriteBatch, tasks: dict[str, MAILTask], finished: set[str]
    ) -> None:
        """Breakpoints and stash: replaced when there are some to store or some stored to
        clear; most tasks never have any, and need no statement for them at all."""
        stored_bp, stored_stash = self._stored_breakpoints, self._stored_stash
        for task_id in finished:
            task = tasks[task_id]
            if task.pending_breakpoints or task_id in stored_bp:
                batch.breakpoints[task_id] = [
                    (cid, p.agent, p.call.model_dump(mode="json"), p.normalized)
                    for cid, p in task.pending_breakpoints.items()
                ]
                _note(stored_bp, task_id, bool(task.pending_breakpoints))
            if task.stash or task_id in stored_stash:
                batch.stashes[task_id] = [(p, s, dict(m)) for p, s, m in task.stash]
                _note(stored_stash, task_id, bool(task.stash))
        for task in tasks.values():
            task_id = task.task_id
            if task_id not in finished and task.is_running:
                # running again: what it waited on is gone
                if task_id in stored_bp:
                    batch.breakpoints.setdefault(task_id, [])
                    stored_bp.discard(task_id)
                if task_id in stored_stash:
                    batch.stashes.setdefault(task_id, [])
                    stored_stash.discard(task_id)

    async def flush(self) -> bool:
        """Write everything pending now, batch after batch; False (and :attr:`error` set)
        when a write failed (what it carried stays pending)."""
        async with self._flush_lock:
            while True:
                if not await self._flush():
                    return False
                if not self._pending:
                    return True

    async def _flush(self) -> bool:
        """Write one batch (at most ``max_batch_tasks`` tasks' notes)."""
        batch = self._collect()
        if not len(batch):
            self._room.set()
            return True
        try:
            await self.sink.write(batch)
        except asyncio.CancelledError:
            self._retry = batch
            raise
        except Exception as e:  # noqa: BLE001  # reported (log, event, /health) and retried
            self._retry = batch
            if self.error is None:
                logger.error("storing tasks failed, will retry: %s", e)  # noqa: TRY400
            self.error = str(e) or type(e).__name__
            self._report(batch, e)
            self._room.set()  # an outage: submissions go on (see room())
            return False
        if self.error is not None:
            logger.warning("storing tasks works again")
        self.error = None
        self._reported.clear()
        if self.backlog < self.max_backlog:
            self._room.set()
        return True

    def _report(self, batch: WriteBatch, error: Exception) -> None:
        """Tell each task of the failed batch, once per outage, that its rows wait."""
        rt = self._runtime
        if rt is None:
            return
        failures = error.failures if isinstance(error, TaskWriteError) else None
        for task_id, count in batch.records_by_task().items():
            if task_id in self._reported or (failures is not None and task_id not in failures):
                continue
            task = rt.tasks.get(task_id)
            if task is None:
                continue  # a pseudo-task or one evicted from memory: log and /health only
            self._reported.add(task_id)
            reason = failures[task_id] if failures is not None else self.error or ""
            task.log.emit(
                EventName.STORAGE_ERROR,
                f"storing this task failed, will retry: {reason}",
                {"error": reason, "unsaved_records": count},
            )

    async def close(self) -> None:
        """Stop the background task and write everything still pending (one more try
        when a write fails: what still fails is logged as lost)."""
        self._closed = True
        self._room.set()
        flushing, self._flushing = self._flushing, None
        if flushing is not None:
            self._wake.set()
            flushing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flushing
        if not await self.flush():
            logger.error("closing: %d tasks could not be stored: %s", self.backlog, self.error)


def _note(ids: set[str], task_id: str, stored: bool) -> None:
    if stored:
        ids.add(task_id)
    else:
        ids.discard(task_id)


def _snapshot(task: MAILTask) -> TaskSnapshot:
    return TaskSnapshot(
        task_id=task.task_id,
        task_owner=task.task_owner,
        task_contributors=list(task.task_contributors),
        remote_swarms=sorted(task.remote_swarms),
        state=task.state.value,
        title=task.title,
        start_time=task.start_time,
        updated_at=task.updated_at,
    )
