"""Where conversations are kept: the :class:`ConversationStore` interface and its
in-memory implementation.

Every row belongs to a caller (:class:`~mail.db.CallerKey`, as tasks do) and to one
conversation. A row is a *record*: its ``kind`` (``conversation``, ``participant``,
``turn``, ``thread``, ``summary``), its id within the conversation and kind, an ordering
``seq`` and its wire object (:mod:`mail.conversations.models`) as JSON. A conversation
record carries the task it is bound to, so that a task's messages find their
conversation. The SQL implementations (:mod:`mail.conversations._sql_store`) use the
task store's own connection and the ``conversation_records`` table its migrations create.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mail.db.store import CallerKey, dumps, loads

__all__ = ["ConversationStore", "MemoryConversationStore", "Record", "RecordKind"]

RecordKind = Literal["conversation", "participant", "turn", "thread", "summary"]


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


class MemoryConversationStore(ConversationStore):
    """A :class:`ConversationStore` in a dictionary (JSON text, so callers get copies)."""

    backend = "memory"

    def __init__(self) -> None:
        self._rows: dict[tuple[CallerKey, str, str, str], tuple[int, str | None, str]] = {}

    def _record(self, row_key: tuple[CallerKey, str, str, str]) -> Record:
        _, conversation_id, kind, record_id = row_key
        seq, task_id, data = self._rows[row_key]
        return Record(
            conversation_id=conversation_id,
            kind=kind,  # type: ignore[arg-type]  # stored from a RecordKind
            record_id=record_id,
            seq=seq,
            task_id=task_id,
            data=loads(data),
        )

    async def put(self, key: CallerKey, record: Record) -> None:
        row_key = (key, record.conversation_id, record.kind, record.record_id)
        self._rows[row_key] = (record.seq, record.task_id, dumps(record.data))

    async def get(
        self, key: CallerKey, conversation_id: str, kind: RecordKind, record_id: str
    ) -> Record | None:
        row_key = (key, conversation_id, kind, record_id)
        return self._record(row_key) if row_key in self._rows else None

    async def list_records(
        self, key: CallerKey, kind: RecordKind, conversation_id: str | None = None
    ) -> list[Record]:
        found = [
            row_key
            for row_key in self._rows
            if row_key[0] == key
            and row_key[2] == kind
            and (conversation_id is None or row_key[1] == conversation_id)
        ]
        found.sort(key=lambda k: (self._rows[k][0], k[3]))
        return [self._record(k) for k in found]

    async def max_seq(self, key: CallerKey, conversation_id: str, kind: RecordKind) -> int:
        return max(
            (
                seq
                for (k, c, kd, _), (seq, _, _) in self._rows.items()
                if k == key and c == conversation_id and kd == kind
            ),
            default=0,
        )

    async def bound_to(self, key: CallerKey, task_id: str) -> list[Record]:
        return [r for r in await self.list_records(key, "conversation") if r.task_id == task_id]

    async def owner_of(self, swarm: str, conversation_id: str) -> CallerKey | None:
        for key, cid, kind, rid in self._rows:
            if key.swarm == swarm and kind == "conversation" and cid == rid == conversation_id:
                return key
        return None

    async def list_every(self, swarm: str, kind: RecordKind) -> list[tuple[CallerKey, Record]]:
        found = [k for k in self._rows if k[0].swarm == swarm and k[2] == kind]
        found.sort(key=lambda k: (self._rows[k][0], k[3]))
        return [(k[0], self._record(k)) for k in found]
