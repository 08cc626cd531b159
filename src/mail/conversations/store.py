"""Where conversations are kept: the :class:`ConversationStore` interface and its
in-memory implementation.

Every row belongs to a caller (:class:`~mail.db.CallerKey`, as tasks do) and to one
conversation. A row is a *record*: its ``kind`` (``conversation``, ``participant``,
``turn``, ``thread``, ``summary``, and ``mark``: the newest event of the bound task its
intercepted turns were made from, in ``seq``), its id within the conversation and kind,
an ordering ``seq`` and its wire object (:mod:`mail.conversations.models`) as JSON. A conversation
record carries the task it is bound to, so that a task's messages find their
conversation. The SQL implementations (:mod:`mail.conversations._sql_store`) use the
task store's own connection and the ``conversation_records`` table its migrations create.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mail.conversations.models import CLOSED_STATUSES
from mail.db.store import CallerKey, dumps, loads
from mail.errors import MAILError

__all__ = [
    "ConversationStore",
    "Joiner",
    "Mark",
    "MemoryConversationStore",
    "Record",
    "RecordKind",
    "Shared",
    "TurnCheck",
    "TurnWrite",
    "judge_turn",
    "plan_append",
    "turn_refs",
]

#: ``a2a_task``: a task of the server's A2A façade (:mod:`mail.server._a2a_store`), kept in
#: the same table, in the conversation ``a2a``
RecordKind = Literal["conversation", "participant", "turn", "thread", "summary", "mark", "a2a_task"]


@dataclass(slots=True, kw_only=True)
class Record:
    """One stored row: ``conversation_id``, ``kind``, ``record_id`` (unique within the
    two), ``seq`` (the order of a kind within a conversation; a conversation's
    creation time among the caller's conversations), the bound ``task_id`` of a
    conversation record, and ``data``, the wire object."""

    conversation_id: str
    kind: RecordKind
    record_id: str
    seq: int
    data: dict[str, Any]
    task_id: str | None = None


#: a conversation shared with a principal: ``(its caller, its record, the participant
#: record invited for the principal)``
Shared = tuple[CallerKey, Record, Record]
#: builds the row of an author who is not a participant yet: ``(conversation, author,
#: participant seq, how many turns the conversation has)`` -> the participant record
Joiner = Callable[[Record, str, int, int], Record]
#: the turns of a conversation made from a task's events, up to which event: ``(task id,
#: seq)``
Mark = tuple[str, int]


@dataclass(slots=True, kw_only=True)
class TurnWrite:
    """What :meth:`ConversationStore.add_turn` read in a turn's conversation, in the
    transaction that writes it: the ``conversation`` record (``None``: there is none),
    its participant rows (``people``, present or gone, by ``seq``), the rows the turn
    names (``refs``: its ``inReplyTo`` turn, its ``threadId`` thread, those that exist),
    and ``turn``, the row written (``None``: nothing was)."""

    conversation: Record | None
    people: list[Record] = field(default_factory=list)
    refs: list[Record] = field(default_factory=list)
    turn: Record | None = None


#: judges what :meth:`ConversationStore.add_turn` read before it writes: raises a
#: :class:`mail.errors.MAILError` to refuse the turn, returns ``False`` to write nothing
#: (yet), ``True`` to write it
TurnCheck = Callable[[TurnWrite], bool]


#: the fields of a turn that name another row: the kind of that row
_REFS: tuple[tuple[str, RecordKind], ...] = (("inReplyTo", "turn"), ("threadId", "thread"))


def turn_refs(turn: dict[str, Any]) -> list[tuple[RecordKind, str]]:
    """The rows a turn names, ``(kind, id)``: its ``inReplyTo`` turn, its ``threadId``
    thread."""
    return [(kind, turn[name]) for name, kind in _REFS if isinstance(turn.get(name), str)]


def judge_turn(
    found: TurnWrite, turn: dict[str, Any], check: TurnCheck, last_turn: int
) -> MAILError | None:
    """``check`` ``found`` (what :meth:`ConversationStore.add_turn` read; ``last_turn``:
    the conversation's newest turn's seq): when it passes, ``found.turn`` is the row to
    write, the next turn of the conversation. Returns the check's refusal, to be raised
    once the transaction is over."""
    try:
        passed = check(found)
    except MAILError as e:
        return e
    conv = found.conversation
    if passed and conv is not None:
        found.turn = Record(
            conversation_id=conv.conversation_id,
            kind="turn",
            record_id=turn["id"],
            seq=last_turn + 1,
            task_id=conv.task_id,
            data=turn,
        )
    return None


def plan_append(
    conv: Record,
    turns: Iterable[dict[str, Any]],
    join: Joiner | None,
    people: Iterable[tuple[str, int]],
    last_turn: int,
    mark: Mark | None = None,
    marked: int = 0,
) -> list[Record] | None:
    """The rows :meth:`ConversationStore.append_turns` writes in ``conv`` (``None`` when it
    is closed): given its participants ``(id, seq)``, its newest turn's seq, and, with
    ``mark``, the seq its stored mark of that task has (``marked``)."""
    if conv.data["status"] in CLOSED_STATUSES:
        return None
    if mark is not None:
        turns = [t for t in turns if not _made_before(t, mark[0], marked, conv)]
    known = dict(people)
    part_seq = max(known.values(), default=0)
    rows: list[Record] = []
    for turn in turns:
        author = turn["participantId"]
        if join is not None and author not in known:
            part_seq += 1
            known[author] = part_seq
            rows.append(join(conv, author, part_seq, last_turn))
        last_turn += 1
        rows.append(
            Record(
                conversation_id=conv.conversation_id,
                kind="turn",
                record_id=turn["id"],
                seq=last_turn,
                task_id=conv.task_id,
                data=turn,
            )
        )
    if mark is not None and mark[1] > marked:
        rows.append(
            Record(
                conversation_id=conv.conversation_id,
                kind="mark",
                record_id=mark[0],
                seq=mark[1],
                task_id=conv.task_id,
                data={},
            )
        )
    return rows


def _made_before(turn: dict[str, Any], task_id: str, marked: int, conv: Record) -> bool:
    """Whether an intercepted turn of ``task_id``'s events is written already (its event
    is at most ``marked``) or came before the conversation (with no mark yet)."""
    meta = turn.get("metadata") or {}
    if meta.get("taskId") != task_id:
        return False
    if marked:
        return int(meta.get("eventSeq") or 0) <= marked
    return int(turn["timestamp"]) < int(conv.data["createdAt"])


class ConversationStore(ABC):
    """The rows of MAP Mail conversations, per caller.

    Every method raises :class:`mail.errors.StorageError` when the backend fails. Rows
    handed in are encoded before the first ``await``; rows handed out are fresh objects.
    """

    #: ``"memory"``, ``"sqlite"`` or ``"postgres"``
    backend: str

    @abstractmethod
    async def put(self, key: CallerKey, record: Record) -> None:
        """Insert ``record``, or replace the one with its conversation, kind and id."""

    async def put_many(self, key: CallerKey, records: Sequence[Record]) -> None:
        """:meth:`put` each of ``records``, in order, in one transaction where the backend
        has them."""
        for record in records:
            await self.put(key, record)

    async def append_turns(
        self,
        key: CallerKey,
        turns: Mapping[str, Sequence[dict[str, Any]]],
        join: Joiner | None = None,
        marks: Mapping[str, Mark] | None = None,
    ) -> dict[str, list[Record]]:
        """Append ``turns`` (wire objects, in order, by conversation id) in one transaction
        where the backend has them. Each gets the next turn ``seq`` of its conversation,
        allocated by the store under the conversation's lock, so that servers sharing a
        database never give two turns one seq. An unknown or closed conversation gets
        none. With ``join``, an author (``participantId``) who is no participant yet
        (present or gone) is added first as ``join`` builds them. With ``marks`` (by
        conversation id: ``(task id, event seq)``), the turns made from that task's events
        are checked against the conversation's stored mark in the same transaction: those
        of events it covers (or, with no mark yet, older than the conversation) are left
        out, written already, and the mark moves on. Returns the rows written
        (participants, turns and marks, in order) by conversation."""
        written: dict[str, list[Record]] = {}
        for cid in sorted(turns):
            conv = await self.get(key, cid, "conversation", cid)
            if conv is None:
                continue
            people = [
                (r.record_id, r.seq) for r in await self.list_records(key, "participant", cid)
            ]
            last = await self.max_seq(key, cid, "turn")
            mark = (marks or {}).get(cid)
            stored = await self.get(key, cid, "mark", mark[0]) if mark is not None else None
            marked = stored.seq if stored is not None else 0
            rows = plan_append(conv, turns[cid], join, people, last, mark, marked)
            if rows is not None:
                await self.put_many(key, rows)
                written[cid] = rows
        return written

    async def add_turn(self, key: CallerKey, turn: dict[str, Any], check: TurnCheck) -> TurnWrite:
        """Append ``turn`` (a wire object) to its conversation (``conversationId``) in one
        transaction where the backend has them: read the conversation, its participants
        and the rows the turn names (a :class:`TurnWrite`), let ``check`` judge them, and
        write the turn if it passes, with the next turn ``seq`` of the conversation,
        allocated under the conversation's lock as :meth:`append_turns` does. A refusal
        of ``check`` is raised as it is, nothing written. Returns what was read, with the
        row written (``turn``)."""
        cid = turn["conversationId"]
        found = TurnWrite(conversation=await self.get(key, cid, "conversation", cid))
        if found.conversation is not None:
            found.people = await self.list_records(key, "participant", cid)
            for kind, rid in turn_refs(turn):
                ref = await self.get(key, cid, kind, rid)
                found.refs += [ref] if ref is not None else []
        refused = judge_turn(found, turn, check, await self.max_seq(key, cid, "turn"))
        if refused is not None:
            raise refused
        if found.turn is not None:
            await self.put(key, found.turn)
        return found

    @abstractmethod
    async def get(
        self, key: CallerKey, conversation_id: str, kind: RecordKind, record_id: str
    ) -> Record | None:
        """The record with this conversation, kind and id, or ``None``."""

    @abstractmethod
    async def list_records(
        self, key: CallerKey, kind: RecordKind, conversation_id: str | None = None
    ) -> list[Record]:
        """The records of ``kind`` in ``conversation_id`` (of every conversation of the
        caller when ``None``), ordered by ``seq`` then id."""

    @abstractmethod
    async def max_seq(self, key: CallerKey, conversation_id: str, kind: RecordKind) -> int:
        """The highest ``seq`` of ``kind`` in the conversation (0 when there is none)."""

    @abstractmethod
    async def bound_to(self, key: CallerKey, task_id: str) -> list[Record]:
        """The conversation records bound to ``task_id``, oldest first."""

    @abstractmethod
    async def owner_of(self, swarm: str, conversation_id: str) -> CallerKey | None:
        """Whose conversation ``conversation_id`` of ``swarm`` is (``None``: nobody's);
        for an admin observing another caller's conversation."""

    @abstractmethod
    async def list_every(self, swarm: str, kind: RecordKind) -> list[tuple[CallerKey, Record]]:
        """The records of ``kind`` of every caller of ``swarm`` with their caller, ordered
        by ``seq`` then id (an admin's ``mail/list`` of every caller's conversations)."""

    @abstractmethod
    async def shared_with(self, swarm: str, principal: str) -> list[Shared]:
        """The conversations of ``swarm`` having a participant row invited for
        ``principal`` (its ``principal``), whoever's they are: ``(their caller, the
        conversation record, the participant record)``, ordered by the conversation's
        ``seq`` then id (a guest's ``mail/list``; removed participants are in it too)."""


class MemoryConversationStore(ConversationStore):
    """A :class:`ConversationStore` in dictionaries, one per conversation (JSON text, so
    callers get copies)."""

    backend = "memory"

    def __init__(self) -> None:
        #: (caller, conversation id) -> (kind, record id) -> (seq, task id, data)
        self._rows: dict[
            tuple[CallerKey, str], dict[tuple[str, str], tuple[int, str | None, str]]
        ] = {}

    @staticmethod
    def _record(conversation_id: str, kind: str, record_id: str, row: tuple[Any, ...]) -> Record:
        seq, task_id, data = row
        return Record(
            conversation_id=conversation_id,
            kind=kind,  # type: ignore[arg-type]  # stored from a RecordKind
            record_id=record_id,
            seq=seq,
            task_id=task_id,
            data=loads(data),
        )

    async def put(self, key: CallerKey, record: Record) -> None:
        rows = self._rows.setdefault((key, record.conversation_id), {})
        rows[(record.kind, record.record_id)] = (record.seq, record.task_id, dumps(record.data))

    async def get(
        self, key: CallerKey, conversation_id: str, kind: RecordKind, record_id: str
    ) -> Record | None:
        row = self._rows.get((key, conversation_id), {}).get((kind, record_id))
        return None if row is None else self._record(conversation_id, kind, record_id, row)

    async def list_records(
        self, key: CallerKey, kind: RecordKind, conversation_id: str | None = None
    ) -> list[Record]:
        if conversation_id is None:
            ids = [cid for k, cid in self._rows if k == key]
        else:
            ids = [conversation_id]
        found = [
            (row[0], record_id, cid, row)
            for cid in ids
            for (k, record_id), row in self._rows.get((key, cid), {}).items()
            if k == kind
        ]
        found.sort(key=lambda f: (f[0], f[1]))
        return [self._record(cid, kind, record_id, row) for _, record_id, cid, row in found]

    async def max_seq(self, key: CallerKey, conversation_id: str, kind: RecordKind) -> int:
        rows = self._rows.get((key, conversation_id), {})
        return max((row[0] for (k, _), row in rows.items() if k == kind), default=0)

    async def bound_to(self, key: CallerKey, task_id: str) -> list[Record]:
        return [r for r in await self.list_records(key, "conversation") if r.task_id == task_id]

    async def owner_of(self, swarm: str, conversation_id: str) -> CallerKey | None:
        for (key, cid), rows in self._rows.items():
            if key.swarm == swarm and cid == conversation_id and ("conversation", cid) in rows:
                return key
        return None

    async def list_every(self, swarm: str, kind: RecordKind) -> list[tuple[CallerKey, Record]]:
        found = [
            (row[0], record_id, key, cid, row)
            for (key, cid), rows in self._rows.items()
            if key.swarm == swarm
            for (k, record_id), row in rows.items()
            if k == kind
        ]
        found.sort(key=lambda f: (f[0], f[1]))
        return [(key, self._record(cid, kind, rid, row)) for _, rid, key, cid, row in found]

    async def shared_with(self, swarm: str, principal: str) -> list[Shared]:
        found: list[tuple[int, str, Shared]] = []
        for (key, cid), rows in self._rows.items():
            conv = rows.get(("conversation", cid))
            if key.swarm != swarm or conv is None:
                continue
            for (k, record_id), row in rows.items():
                if k == "participant" and loads(row[2]).get("principal") == principal:
                    shared = (
                        key,
                        self._record(cid, "conversation", cid, conv),
                        self._record(cid, "participant", record_id, row),
                    )
                    found.append((conv[0], cid, shared))
        found.sort(key=lambda f: (f[0], f[1]))
        return [shared for _, _, shared in found]
