"""The SQL stores' writes as statements: one builder per kind of row, shared by the per-row
methods and :meth:`~mail.db.store.TaskStore.save_changes` of SQLite and PostgreSQL, which
differ only in their SQL text and how they encode datetimes (:class:`Dialect`)."""

from __future__ import annotations

import marshal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from mail.db._common import (
    PLAIN_NAMES,
    breakpoint_params,
    changes_from_batch,
    check_changes,
    dumps,
    event_params,
    json_bytes,
    key_params,
    plain_name,
    reported,
    stash_params,
    task_params,
)
from mail.db._raw import EVENT, RAW, Part, cook
from mail.errors import StorageError

if TYPE_CHECKING:
    from mail.core._persist import WriteBatch
    from mail.db._batch import GroupCommitter, Write
    from mail.db.store import (
        BreakpointRow,
        CallerKey,
        EventRow,
        HistoryTuple,
        StashRow,
        TaskChanges,
        TaskRow,
    )

__all__ = [
    "Dialect",
    "task_write",
    "events_write",
    "histories_write",
    "response_write",
    "breakpoints_write",
    "stash_write",
    "changes_write",
    "batch_write",
    "save_changes",
    "save_batch",
    "SQLWrites",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Dialect:
    """One backend's write statements and how it takes datetimes (``when``).

    ``stamp_histories``: the history statement takes ``updated_at`` as its last parameter
    (SQLite) instead of setting it itself (PostgreSQL's ``NOW()``). ``json_bytes``: the
    event, history and response statements take their JSON as UTF-8 bytes (SQLite, whose
    statements cast them to text) as well as text: :func:`batch_write` then skips decoding
    what the encoder wrote.
    """

    save_task: str
    append_event: str
    save_history: str
    save_response: str
    delete_breakpoints: str
    insert_breakpoint: str
    delete_stash: str
    insert_stash: str
    when: Callable[[datetime], Any]
    stamp_histories: bool
    json_bytes: bool = False

    @property
    def rank(self) -> dict[str, int]:
        """Each statement's place in the order :func:`changes_write` runs them."""
        order = (
            self.save_task,
            self.append_event,
            self.save_history,
            self.save_response,
            self.delete_breakpoints,
            self.insert_breakpoint,
            self.delete_stash,
            self.insert_stash,
        )
        return {sql: i for i, sql in enumerate(order)}


def task_write(d: Dialect, key: CallerKey, task: TaskRow) -> Write:
    return [(d.save_task, [task_params(key, task, d.when)])]


def events_write(d: Dialect, key: CallerKey, rows: Sequence[EventRow]) -> Write:
    return [(d.append_event, event_params(key, rows))] if rows else []


def histories_write(
    d: Dialect, key: CallerKey, task_id: str, histories: Sequence[HistoryTuple]
) -> Write:
    if not histories:
        return []
    k = (*key_params(key), task_id)
    stamp = (d.when(datetime.now(UTC)),) if d.stamp_histories else ()
    rows = [(*k, agent, fmt, dumps(history), *stamp) for agent, history, fmt in histories]
    return [(d.save_history, rows)]


def response_write(d: Dialect, key: CallerKey, task_id: str, message: dict[str, Any]) -> Write:
    return [(d.save_response, [(*key_params(key), task_id, dumps(message))])]


def breakpoints_write(
    d: Dialect, key: CallerKey, task_id: str, rows: Sequence[BreakpointRow]
) -> Write:
    k, params = breakpoint_params(key, task_id, rows)
    return [(d.delete_breakpoints, [k]), (d.insert_breakpoint, params)]


def stash_write(d: Dialect, key: CallerKey, task_id: str, rows: Sequence[StashRow]) -> Write:
    k, params = stash_params(key, task_id, rows)
    return [(d.delete_stash, [k]), (d.insert_stash, params)]


def changes_write(d: Dialect, key: CallerKey, c: TaskChanges) -> Write:
    """Every statement of one task's changes, in the order of :class:`TaskChanges`."""
    check_changes(c)
    write: Write = []
    if c.task is not None:
        write += task_write(d, key, c.task)
    write += events_write(d, key, c.events)
    write += histories_write(d, key, c.task_id, c.histories)
    if c.response is not None:
        write += response_write(d, key, c.task_id, c.response)
    if c.breakpoints is not None:
        write += breakpoints_write(d, key, c.task_id, c.breakpoints)
    if c.stash is not None:
        write += stash_write(d, key, c.task_id, c.stash)
    return write


async def save_batch(
    writer: GroupCommitter, d: Dialect, key: CallerKey, batch: WriteBatch
) -> dict[str, StorageError]:
    """:meth:`~mail.db.store.TaskStore.save_batch` of an SQL store: the whole batch as one
    write; when it cannot be encoded or is refused, :func:`save_changes` of its tasks'
    changes finds which tasks are at fault."""
    try:
        write = batch_write(d, key, batch)
    except (TypeError, ValueError):
        pass  # a value JSON cannot hold: whose, save_changes finds out
    else:
        if not write:
            return {}
        try:
            await writer.submit("save_changes", write)
        except StorageError:
            pass  # one task's rows may be at fault: find out which, task by task
        else:
            return {}
    return await save_changes(writer, d, key, list(changes_from_batch(batch).values()))


async def save_changes(
    writer: GroupCommitter, d: Dialect, key: CallerKey, changes: Sequence[TaskChanges]
) -> dict[str, StorageError]:
    """:meth:`~mail.db.store.TaskStore.save_changes` of an SQL store: one write per task,
    all handed to ``writer`` at once."""
    failures: dict[str, StorageError] = {}
    writes: dict[str, Write] = {}
    for c in changes:
        if c.task_id in failures:
            continue  # a task's changes are stored together or not at all
        try:
            with reported(writer.name, "save_changes"):
                write = changes_write(d, key, c)
        except StorageError as e:
            failures[c.task_id] = e
            writes.pop(c.task_id, None)
            continue
        writes.setdefault(c.task_id, []).extend(write)
    queued = [(task_id, write) for task_id, write in writes.items() if write]
    if len(queued) > 1 and not failures:
        # the usual case: every task's rows in one write, one statement per SQL
        try:
            await writer.submit("save_changes", _merged(d, [write for _, write in queued]))
        except StorageError:
            pass  # one task's rows may be at fault: find out which, task by task
        else:
            return failures
    results = await writer.submit_many("save_changes", [write for _, write in queued])
    for (task_id, _), error in zip(queued, results, strict=True):
        if error is not None:
            failures[task_id] = error
    return failures


def batch_write(d: Dialect, key: CallerKey, batch: WriteBatch) -> Write:
    """A runtime's batch as one write: the statements :func:`changes_write` gives for
    each task of :func:`~mail.db._common.changes_from_batch`, merged as :func:`_merged`
    merges them, built straight from the batch (this runs on the event loop for every
    task a server stores). The events, histories and responses go as they are, as one
    :data:`~mail.db._raw.RAW` statement whose JSON the store's writer encodes (see
    :mod:`mail.db._raw`), or encoded here when ``marshal`` refuses a value; encoding them
    here raises ``TypeError`` or ``ValueError`` for a value JSON cannot hold, without
    saying whose."""
    swarm, role, caller = k = key_params(key)
    write = _task_rows(d, key, batch)
    parts: list[Part] = []
    events: list[tuple[Any, ...]] = []
    add = events.append
    names = PLAIN_NAMES
    for task_id, evs in batch.events.items():
        for e in evs:
            name = names.get(e.event) or plain_name(e.event)
            if e.payload is None:
                add(
                    (
                        swarm,
                        role,
                        caller,
                        task_id,
                        e.seq or 0,
                        name,
                        e.stamp,
                        e.description,
                        e.extra_data,
                    )
                )
            else:
                add((swarm, role, caller, task_id, e.seq or 0, name, None, None, e.payload))
    if events:
        parts.append((d.append_event, EVENT, events))
    if batch.histories:
        stamp = (d.when(datetime.now(UTC)),) if d.stamp_histories else ()
        rows = [(*k, t, agent, fmt, h, *stamp) for t, agent, h, fmt in batch.histories]
        parts.append((d.save_history, len(k) + 3, rows))
    if batch.responses:
        rows = [(swarm, role, caller, t, m) for t, m in batch.responses]
        parts.append((d.save_response, len(k) + 1, rows))
    if parts:
        try:
            write.append((RAW, [marshal.dumps(parts)]))
        except ValueError:  # a str subclass, a datetime, an object: encoded here
            write.extend(cook(parts, json_bytes if d.json_bytes else dumps))
    _add_waiting(d, key, batch, write)
    return write


def _task_rows(d: Dialect, key: CallerKey, batch: WriteBatch) -> Write:
    if not batch.tasks:
        return []
    return [(d.save_task, [task_params(key, t, d.when) for t in batch.tasks])]


def _add_waiting(d: Dialect, key: CallerKey, batch: WriteBatch, write: Write) -> None:
    """Add the batch's breakpoints and stashes (few tasks have any) to ``write``."""
    if batch.breakpoints or batch.stashes:
        changes = changes_from_batch(_waiting_only(batch))
        for sql, params in _merged(d, [changes_write(d, key, c) for c in changes.values()]):
            write.append((sql, list(params)))


def _waiting_only(batch: WriteBatch) -> WriteBatch:
    from mail.core._persist import WriteBatch  # noqa: PLC0415  # core types, not at import

    return WriteBatch(breakpoints=batch.breakpoints, stashes=batch.stashes)


def _merged(d: Dialect, writes: Sequence[Write]) -> Write:
    """The statements of ``writes`` (tasks' changes: disjoint rows, each write's statements
    in the order of :func:`changes_write`) as one write, rows of the same SQL together and
    the statements in that same order, so each task's own order holds."""
    rows: dict[str, list[Sequence[Any]]] = {}
    for write in writes:
        for sql, params in write:
            found = rows.get(sql)
            if found is None:
                rows[sql] = list(params)
            else:
                found.extend(params)
    rank = d.rank
    return sorted(rows.items(), key=lambda item: rank[item[0]])


class SQLWrites:
    """The writes of an SQL store, on its :class:`Dialect` and group committer.

    A store sets :attr:`dialect` and ``name`` and gives its open committer from
    :meth:`_writer_for` (raising :class:`StorageError` when the store is not open).
    """

    dialect: ClassVar[Dialect]
    name: str

    def _writer_for(self, op: str) -> GroupCommitter:
        raise NotImplementedError

    async def _write(self, op: str, statements: Write) -> None:
        await self._writer_for(op).submit(op, statements)

    async def save_task(self, key: CallerKey, task: TaskRow) -> None:
        """Insert or replace a task record."""
        with reported(self.name, "save_task"):
            write = task_write(self.dialect, key, task)
        await self._write("save_task", write)

    async def append_events(self, key: CallerKey, rows: Sequence[EventRow]) -> None:
        """Store events, ignoring sequence numbers already stored."""
        if not rows:
            return
        with reported(self.name, "append_events"):
            write = events_write(self.dialect, key, rows)
        await self._write("append_events", write)

    async def save_history(
        self,
        key: CallerKey,
        task_id: str,
        agent: str,
        history: list[dict[str, Any]],
        tool_format: str,
    ) -> None:
        """Replace an agent's current history in a task."""
        with reported(self.name, "save_history"):
            write = histories_write(self.dialect, key, task_id, [(agent, history, tool_format)])
        await self._write("save_history", write)

    async def save_response(self, key: CallerKey, task_id: str, message: dict[str, Any]) -> None:
        """Insert or replace a task's final response."""
        with reported(self.name, "save_response"):
            write = response_write(self.dialect, key, task_id, message)
        await self._write("save_response", write)

    async def save_breakpoints(
        self, key: CallerKey, task_id: str, rows: Sequence[BreakpointRow]
    ) -> None:
        """Replace a task's pending breakpoint calls."""
        with reported(self.name, "save_breakpoints"):
            write = breakpoints_write(self.dialect, key, task_id, rows)
        await self._write("save_breakpoints", write)

    async def save_stash(self, key: CallerKey, task_id: str, rows: Sequence[StashRow]) -> None:
        """Replace a task's stashed messages."""
        with reported(self.name, "save_stash"):
            write = stash_write(self.dialect, key, task_id, rows)
        await self._write("save_stash", write)

    async def save_changes(
        self, key: CallerKey, changes: Sequence[TaskChanges]
    ) -> dict[str, StorageError]:
        """Store many tasks' changes, one write per task, committed together; returns the
        failed tasks' errors (see :meth:`mail.db.store.TaskStore.save_changes`)."""
        return await save_changes(self._writer_for("save_changes"), self.dialect, key, changes)

    async def save_batch(self, key: CallerKey, batch: WriteBatch) -> dict[str, StorageError]:
        """Store a runtime's batch (see :meth:`mail.db.store.TaskStore.save_batch`)."""
        return await save_batch(self._writer_for("save_changes"), self.dialect, key, batch)
