"""What the SQLite and PostgreSQL stores share: the rows their statements take and the
objects their queries' rows become.

Both stores apply :class:`~mail.db.store.TaskChanges` the same way: each task's changes
are encoded into :class:`Rows` (one parameter tuple per row, JSON as text), the rows of
every task of a call go into one transaction with one ``executemany`` per statement, and
when that transaction fails each task is tried again in a transaction of its own, so that
only the tasks at fault fail.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from mail.db.store import (
    BreakpointRow,
    CallerKey,
    EventRow,
    StashRow,
    TaskChanges,
    TaskDetails,
    TaskRow,
    checked_text,
    dumps,
    foreign_rows,
    loads,
    merged,
)
from mail.errors import StorageError

if TYPE_CHECKING:
    from mail.db.store import TaskStore

__all__ = [
    "DetailKind",
    "prune_deletes",
    "Dialect",
    "Prepared",
    "Rows",
    "combined",
    "details_from_rows",
    "encode",
    "event_from_row",
    "key_params",
    "prepare",
    "task_from_row",
]

#: The tables :meth:`~mail.db.store.TaskStore.load_details` reads, by the
#: :class:`TaskDetails` field each fills.
DetailKind = Literal["events", "histories", "response", "breakpoints", "stash"]

Params = tuple[Any, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Dialect:
    """A backend's write statements and how it takes a datetime."""

    save_task: str
    append_event: str
    save_history: str
    save_response: str
    delete_breakpoints: str
    insert_breakpoint: str
    delete_stash: str
    insert_stash: str
    #: a datetime as the backend's parameter (SQLite: ISO text; PostgreSQL: the datetime)
    when: Callable[[datetime], Any]
    #: whether ``save_history`` takes ``updated_at`` as its last parameter
    history_time: bool


@dataclass(slots=True)
class Rows:
    """The parameter rows of each write statement, for one task or many."""

    tasks: list[Params] = field(default_factory=list)
    events: list[Params] = field(default_factory=list)
    histories: list[Params] = field(default_factory=list)
    responses: list[Params] = field(default_factory=list)
    breakpoint_deletes: list[Params] = field(default_factory=list)
    breakpoints: list[Params] = field(default_factory=list)
    stash_deletes: list[Params] = field(default_factory=list)
    stash: list[Params] = field(default_factory=list)

    def add(self, other: Rows) -> None:
        for name in self.__slots__:
            getattr(self, name).extend(getattr(other, name))

    def statements(self, d: Dialect) -> list[tuple[str, list[Params]]]:
        """``(sql, rows)`` in the order they apply, leaving out statements with no rows."""
        pairs = (
            (d.save_task, self.tasks),
            (d.append_event, self.events),
            (d.save_history, self.histories),
            (d.save_response, self.responses),
            (d.delete_breakpoints, self.breakpoint_deletes),
            (d.insert_breakpoint, self.breakpoints),
            (d.delete_stash, self.stash_deletes),
            (d.insert_stash, self.stash),
        )
        return [(sql, rows) for sql, rows in pairs if rows]


def key_params(key: CallerKey) -> tuple[str, str, str]:
    """``(swarm_name, caller_role, caller_id)``: the columns every row starts with."""
    return (key.swarm, key.role, key.id)


def encode(key: CallerKey, changes: TaskChanges, d: Dialect) -> Rows:
    """The rows of one task's changes. Raises ``TypeError`` or ``ValueError`` for a value
    JSON cannot hold or text no store holds (:func:`~mail.db.store.dumps`)."""
    k = (*key_params(key), checked_text(changes.task_id, "the task id"))
    rows = Rows()
    task = changes.task
    if task is not None:
        running = task.state == "running"
        rows.tasks.append(
            (
                *k,
                checked_text(task.task_owner, "the task owner"),
                dumps(list(task.task_contributors)),
                dumps(list(task.remote_swarms)),
                task.state,
                checked_text(task.title, "the title"),
                d.when(task.start_time),
                d.when(task.updated_at),
                running,  # is_running and completed: the original's columns, kept in step
                not running,
                None if task.request is None else dumps(task.request),
            )
        )
    rows.events = [(*k, int(e.seq), str(e.event), dumps(e.data)) for e in changes.events]
    # one row per agent, the last given: a statement must not upsert a row twice
    latest = {agent: (history, fmt) for agent, history, fmt in changes.histories}
    stamp = (d.when(datetime.now(UTC)),) if d.history_time else ()
    rows.histories = [
        (*k, checked_text(a, "an agent name"), fmt, dumps(h), *stamp)
        for a, (h, fmt) in latest.items()
    ]
    if changes.response is not None:
        rows.responses.append((*k, dumps(changes.response)))
    if changes.breakpoints is not None:
        rows.breakpoint_deletes.append(k)
        rows.breakpoints = [
            (
                *k,
                i,
                checked_text(b.call_id, "a breakpoint call id"),
                checked_text(b.agent, "an agent name"),
                dumps(b.call),
                dumps(b.normalized),
            )
            for i, b in enumerate(changes.breakpoints)
        ]
    if changes.stash is not None:
        rows.stash_deletes.append(k)
        rows.stash = [
            (*k, i, int(s.priority), int(s.seq), dumps(s.message))
            for i, s in enumerate(changes.stash)
        ]
    return rows


def task_from_row(row: Sequence[Any], when: Callable[[Any], datetime]) -> TaskRow:
    """A :class:`TaskRow` from the columns the stores' task queries select."""
    return TaskRow(
        task_id=row[0],
        task_owner=row[1],
        task_contributors=loads(row[2]),
        remote_swarms=loads(row[3]),
        state=row[4],
        title=row[5],
        start_time=when(row[6]),
        updated_at=when(row[7]),
        request=None if row[8] is None else loads(row[8]),
    )


def event_from_row(task_id: str, seq: int, name: str, data: str) -> EventRow:
    """An :class:`EventRow` from ``seq, event_type, event_data``."""
    return EventRow(task_id=task_id, seq=seq, event=name, data=loads(data))


def details_from_rows(
    task_ids: Iterable[str], rows: Mapping[DetailKind, Iterable[Sequence[Any]]]
) -> dict[str, TaskDetails]:
    """``load_details``' result from the rows of the five detail queries, each row led by
    its task id and each kind in its order within a task."""
    found: dict[str, TaskDetails] = {}

    def of(task_id: str) -> TaskDetails:
        return found.setdefault(task_id, TaskDetails())

    for task_id, seq, name, data in rows["events"]:
        of(task_id).events.append(event_from_row(task_id, seq, name, data))
    for task_id, agent, history in rows["histories"]:
        of(task_id).histories[agent] = loads(history)
    for task_id, response in rows["response"]:
        of(task_id).response = dict(loads(response))
    for task_id, call_id, agent, call, normalized in rows["breakpoints"]:
        of(task_id).breakpoints.append(
            BreakpointRow(
                call_id=call_id, agent=agent, call=loads(call), normalized=loads(normalized)
            )
        )
    for task_id, priority, seq, message in rows["stash"]:
        of(task_id).stash.append(StashRow(priority=priority, seq=seq, message=loads(message)))
    return {task_id: found[task_id] for task_id in dict.fromkeys(task_ids) if task_id in found}


@dataclass(slots=True)
class Prepared:
    """One task's rows, and the lease its writer holds (``None``: written as they are)."""

    task_id: str
    rows: Rows
    lease: tuple[str, int] | None = None


def prepare(
    store: TaskStore,
    op: str,
    key: CallerKey,
    changes: Sequence[TaskChanges],
    d: Dialect,
    *,
    leases: bool = False,
) -> tuple[list[Prepared], dict[str, StorageError]]:
    """Each task's rows and the refusal of each task whose changes cannot be encoded (a
    value JSON cannot hold, text no store holds, a row of another task; a lease given to
    a store that does not keep leases, unless ``leases``)."""
    prepared: list[Prepared] = []
    failures: dict[str, StorageError] = {}
    for change in merged(changes):
        problem = foreign_rows(change)
        if problem is None and change.lease is not None and not leases:
            problem = "this store keeps no task leases (cluster mode needs PostgreSQL)"
        if problem is None:
            try:
                prepared.append(Prepared(change.task_id, encode(key, change, d), change.lease))
            except (TypeError, ValueError) as e:
                failures[change.task_id] = store.refusal(op, e)
            continue
        failures[change.task_id] = store.refusal(op, problem)
    return prepared, failures


def combined(prepared: Sequence[Prepared]) -> Rows:
    """The rows of every task of ``prepared`` together."""
    rows = Rows()
    for task in prepared:
        rows.add(task.rows)
    return rows


#: The tables of a task's rows besides its record.
_TASK_TABLES = (
    "task_events",
    "agent_histories",
    "task_responses",
    "task_breakpoints",
    "task_stash",
)


def prune_deletes(doomed_task: str) -> tuple[str, ...]:
    """The statements that delete a pruned task's rows, one per table, each taking the
    dialect's ``doomed_task`` (a ``SELECT swarm_name, caller_role, caller_id, task_id``
    of the task, still finished) as its guard: a task resumed since it was picked no
    longer matches and keeps all its rows. MAP Mail's rows of the conversations bound to
    the task go too (found by their conversation row: only those are indexed by task),
    and the A2A tasks of its turns, before the task's record, which those statements
    read."""

    def delete(table: str) -> str:
        return f"""DELETE FROM {table} WHERE (swarm_name, caller_role, caller_id, task_id) IN (
        {doomed_task})"""

    conversations = f"""DELETE FROM conversation_records
    WHERE (swarm_name, caller_role, caller_id, conversation_id) IN (
        SELECT swarm_name, caller_role, caller_id, conversation_id FROM conversation_records
        WHERE kind = 'conversation' AND (swarm_name, caller_role, caller_id, task_id) IN (
            {doomed_task}))"""
    # the A2A façade's tasks of the task (mail.server._a2a_store)
    a2a = f"""DELETE FROM conversation_records
    WHERE conversation_id = 'a2a' AND kind = 'a2a_task'
        AND (swarm_name, caller_role, caller_id, task_id) IN ({doomed_task})"""
    return (*(delete(t) for t in _TASK_TABLES), conversations, a2a, delete("tasks"))
