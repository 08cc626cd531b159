"""What the ``mail/*`` methods share: the acting participant, the service's state, loading
and permission checks, adding participants and recording turns."""

from __future__ import annotations

import asyncio
import secrets
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, NoReturn, cast

from mail.conversations import _access as access
from mail.conversations._access import InvalidParamsError, req_str
from mail.conversations._summarizers import ExtractiveSummarizer, Summarizer
from mail.conversations.errors import (
    ConversationClosedError,
    ConversationNotFoundError,
    InvalidContentTypeError,
    MailPermissionDeniedError,
    NotAParticipantError,
    ThreadNotFoundError,
    TurnNotFoundError,
)
from mail.conversations.events import EventBus
from mail.conversations.models import (
    CLOSED_STATUSES,
    ROLES,
    Participant,
    Turn,
    default_permissions,
    is_valid_content_type,
    now_ms,
    participant_type,
    visibility_of,
)
from mail.conversations.store import (
    ConversationStore,
    Record,
    RecordKind,
    TurnWrite,
    turn_refs,
)
from mail.db.store import CallerKey

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "Actor",
    "ServiceBase",
    "admits",
    "guests_of",
    "new_id",
    "new_ids",
    "ordered_id",
    "participant_of",
    "turn_of",
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class Actor:
    """Who acts: the rows it acts on (``key``: the caller's own, or, for an admin acting
    on another caller's conversation, that caller's), its participant id, and whether
    it is an admin (R6: admins observe any caller's conversation)."""

    key: CallerKey
    participant_id: str
    admin: bool = False
    #: who holds the key behind it (``role:id`` of the API key; ``None``: the participant
    #: itself), what an invitation is checked against
    principal: str | None = None
    #: acting on another caller's conversation it was invited to (its role is the
    #: invitation's)
    guest: bool = False

    @property
    def holder(self) -> str:
        """The principal acting: :attr:`principal`, or the participant id."""
        return self.principal or self.participant_id


def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(8)}"


def new_ids(prefix: str, count: int) -> list[str]:
    """``count`` ids as :func:`new_id` makes them, from one draw of random bytes."""
    digits = secrets.token_hex(8 * count)
    return [f"{prefix}-{digits[at : at + 16]}" for at in range(0, 16 * count, 16)]


def ordered_id(prefix: str) -> str:
    """A new id that sorts after the ids made before it (12 hex digits of epoch
    milliseconds, then 12 random): the rows of the conversations that are written to,
    mostly recent ones, then share the pages of the indexes keyed by conversation."""
    return f"{prefix}-{time.time_ns() // 1_000_000:012x}{secrets.token_hex(6)}"


class ServiceBase:
    """The state and shared steps of :class:`~mail.conversations.service.ConversationService`.

    ``enabled=False`` makes every method raise
    :class:`~mail.conversations.errors.MailNotEnabledError` (10010); ``max_thread_depth``
    bounds thread nesting (10009 beyond it); ``summarizer`` makes ``mail/summary``'s
    summaries (extractive by default).
    """

    def __init__(
        self,
        store: ConversationStore,
        *,
        bus: EventBus | None = None,
        enabled: bool = True,
        max_thread_depth: int = 8,
        summarizer: Summarizer | None = None,
    ) -> None:
        self.summarizer: Summarizer = summarizer or ExtractiveSummarizer()
        self.store = store
        self.bus = bus or EventBus()
        self.enabled = enabled
        self.max_thread_depth = max_thread_depth
        #: told ``(key, task_id, conversation_id)`` when a conversation is bound to a task
        self.binder: Callable[[CallerKey, str, str], None] | None = None
        #: the principal a new participant's id stands for (an invitation gives that
        #: principal access); raises :class:`ParticipantNotFoundError` for an unknown
        #: one; ``None``: every id stands for itself
        self.principal_of: Callable[[str], str] | None = None
        #: writes the intercepted turns of a bound conversation's task that are not yet
        #: (the interceptor's), before a method reads or changes the conversation
        self.catch_up: Callable[[CallerKey, Record], Awaitable[None]] | None = None
        # one lock per conversation being changed in this process (status changes, closes,
        # redactions: read, check, write); gone once nobody holds it
        self._locks: weakref.WeakValueDictionary[tuple[CallerKey, str], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    def _lock(self, actor: Actor, conv: Record) -> asyncio.Lock:
        """The lock of ``conv`` in this process (turn numbers are the store's affair)."""
        key = (actor.key, conv.conversation_id)
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    # --- loading and checks ---------------------------------------------------------------

    async def _emit(
        self,
        actor: Actor,
        event_type: str,
        data: dict[str, Any],
        turn: Record | None = None,
        people: list[Record] | None = None,
    ) -> None:
        """Publish an event of the conversation ``data["conversationId"]`` (of a ``turn``:
        its row), with the guests it reaches (among ``people``, its participant rows, read
        when not given)."""
        if people is None:
            people = await self.store.list_records(actor.key, "participant", data["conversationId"])
        guests = guests_of(people, event_type, data, turn)
        self.bus.publish(actor.key, event_type, data, now_ms(), guests)

    async def _conversation(self, actor: Actor, params: dict[str, Any]) -> Record:
        """The conversation ``params`` names, its intercepted turns caught up first (when
        it is bound to a task and open); raises 10000 when there is none."""
        cid = req_str(params, "conversationId")
        record = await self.store.get(actor.key, cid, "conversation", cid)
        if record is None:
            raise ConversationNotFoundError(f"no conversation {cid!r}", conversationId=cid)
        await self._catch_up(actor.key, record)
        return record

    async def _catch_up(self, key: CallerKey, conv: Record) -> None:
        if self.catch_up is not None and self._behind(conv):
            await self.catch_up(key, conv)

    def _behind(self, conv: Record) -> bool:
        """Whether ``conv`` may lack intercepted turns (bound to a task, open, and they are
        written here)."""
        open_ = conv.data["status"] not in CLOSED_STATUSES
        return conv.task_id is not None and open_ and self.catch_up is not None

    @staticmethod
    def _open(conv: Record) -> None:
        if conv.data["status"] in CLOSED_STATUSES:
            raise ConversationClosedError(
                f"conversation {conv.conversation_id!r} is {conv.data['status']}",
                conversationId=conv.conversation_id,
            )

    async def _member(
        self, actor: Actor, conv: Record, pid: str | None = None, *, reading: bool = False
    ) -> Record:
        """The participant ``pid`` (the actor by default); raises 10002 when absent. An
        admin that is no participant ``reading`` the conversation reads as an observer
        (default permissions, full history) that is not recorded."""
        pid = pid or actor.participant_id
        record = await self.store.get(actor.key, conv.conversation_id, "participant", pid)
        return self._present(actor, conv, pid, record, reading=reading)

    def _present(
        self, actor: Actor, conv: Record, pid: str, record: Record | None, *, reading: bool
    ) -> Record:
        """:meth:`_member` from the participant row ``record`` of ``pid`` read already."""
        if (record is None or record.data["leftAt"] is not None) and reading and actor.admin:
            return self._participant_record(conv, actor.participant_id, 0, 0, "observer")
        if record is None or record.data["leftAt"] is not None:
            raise NotAParticipantError(
                f"{pid!r} is not a participant of {conv.conversation_id!r}",
                conversationId=conv.conversation_id,
                participantId=pid,
            )
        return record

    @staticmethod
    def _allowed(member: Record, permission: str) -> None:
        if not member.data["permissions"].get(permission):
            raise MailPermissionDeniedError(
                f"participant {member.record_id!r} lacks {permission}", permission=permission
            )

    async def _lookup(self, actor: Actor, conv: Record, kind: RecordKind, rid: str) -> Record:
        record = await self.store.get(actor.key, conv.conversation_id, kind, rid)
        if record is None:
            self._missing(kind, rid)
        return record

    @staticmethod
    def _missing(kind: RecordKind, rid: str) -> NoReturn:
        if kind == "turn":
            raise TurnNotFoundError(f"no turn {rid!r}", turnId=rid)
        raise ThreadNotFoundError(f"no thread {rid!r}", threadId=rid)

    async def _put(
        self, actor: Actor, conv: Record, kind: RecordKind, rid: str, data: Any, seq: int
    ) -> Record:
        record = Record(
            conversation_id=conv.conversation_id,
            kind=kind,
            record_id=rid,
            seq=seq,
            task_id=conv.task_id,
            data=dict(data),
        )
        await self.store.put(actor.key, record)
        return record

    async def shown(self, key: CallerKey, conv: Record) -> dict[str, Any]:
        """The conversation as ``mail/*`` answers it: with ``participantCount``, the
        participants that have not left."""
        rows = await self.store.list_records(key, "participant", conv.conversation_id)
        count = sum(1 for r in rows if r.data["leftAt"] is None)
        return {**conv.data, "participantCount": count}

    async def _touch(self, actor: Actor, conv: Record) -> None:
        conv.data["updatedAt"] = now_ms()
        await self.store.put(actor.key, conv)

    async def _next_seq(self, actor: Actor, conv: Record, kind: RecordKind) -> int:
        return await self.store.max_seq(actor.key, conv.conversation_id, kind) + 1

    async def _add_participant(
        self, actor: Actor, conv: Record, pid: str, role: Any, permissions: Any
    ) -> Participant:
        self._check_role(role, permissions)
        after = await self.store.max_seq(actor.key, conv.conversation_id, "turn")
        seq = await self._next_seq(actor, conv, "participant")
        record = self._participant_record(conv, pid, seq, after, role, permissions)
        record.data["principal"] = (
            actor.holder if pid == actor.participant_id else self._principal(pid)
        )
        await self.store.put(actor.key, record)
        participant = participant_of(record)
        await self._emit(
            actor,
            "mail.participant.joined",
            {"conversationId": conv.conversation_id, "participant": participant},
        )
        return participant

    def _principal(self, pid: str) -> str:
        """The principal an invited ``pid`` stands for (raises 10005 for none)."""
        return pid if self.principal_of is None else self.principal_of(pid)

    @staticmethod
    def _check_role(role: Any, permissions: Any) -> None:
        if role not in ROLES:
            raise InvalidParamsError(f"role must be one of {ROLES}", field="role")
        if permissions is not None and not isinstance(permissions, dict):
            raise InvalidParamsError("permissions must be an object", field="permissions")

    @staticmethod
    def _participant_record(
        conv: Record,
        pid: str,
        seq: int,
        joined_after_turn: int,
        role: Any = "worker",
        permissions: Any = None,
    ) -> Record:
        """The stored row of a new participant (``joinedAfterTurn``: how many turns the
        conversation had, for ``historyAccess: from-join``)."""
        participant = Participant(
            id=pid,
            conversationId=conv.conversation_id,
            type=participant_type(pid),
            role=role,
            permissions=default_permissions(role, permissions),
            joinedAt=now_ms(),
            leftAt=None,
        )
        return Record(
            conversation_id=conv.conversation_id,
            kind="participant",
            record_id=pid,
            seq=seq,
            task_id=conv.task_id,
            data={**participant, "joinedAfterTurn": joined_after_turn},
        )

    # --- turns (shared) ----------------------------------------------------------------------------

    @staticmethod
    def _check_turn_params(params: dict[str, Any]) -> None:
        """10008 for a content type neither well-known nor ``x-*`` (the rest of a turn's
        params is checked by their model)."""
        content_type = req_str(params, "contentType")
        if not is_valid_content_type(content_type):
            raise InvalidContentTypeError(
                f"content type {content_type!r} is neither well-known nor x-*",
                contentType=content_type,
            )

    async def record_turn(
        self,
        actor: Actor,
        conversation_id: str,
        params: dict[str, Any],
        *,
        catch_up: bool = True,
    ) -> Turn:
        """Store a turn of ``actor`` in the conversation ``conversation_id`` (params as
        ``mail/turn``'s, their model checked) and emit ``mail.turn.added``, in one store
        write that checks what ``mail/turn`` checks (see :meth:`_may_send`). A
        conversation bound to a task is caught up first (with ``catch_up``): then the
        turn waits for its intercepted turns and is checked again."""
        turn = self._new_turn(conversation_id, actor.participant_id, params, None)
        check = partial(self._may_send, actor, conversation_id, params)
        found = await self.store.add_turn(actor.key, dict(turn), partial(check, catch_up))
        if found.turn is None and found.conversation is not None:
            await self._catch_up(actor.key, found.conversation)
            found = await self.store.add_turn(actor.key, dict(turn), partial(check, False))
        data = {"conversationId": conversation_id, "turn": turn}
        await self._emit(actor, "mail.turn.added", data, found.turn, found.people)
        return turn

    def _may_send(
        self, actor: Actor, cid: str, params: dict[str, Any], catch_up: bool, found: TurnWrite
    ) -> bool:
        """Whether the turn of ``actor`` with ``params`` goes into the conversation ``cid`` as
        :meth:`~mail.conversations.store.ConversationStore.add_turn` ``found`` it, in the
        order ``mail/turn`` checks: 10000 (no conversation), ``False`` while it is to be
        caught up (``catch_up``), 10001 (closed), 10002 (not a participant), 10003 (no
        ``canSend``), 10008 (content type), 10006/10007 (no ``inReplyTo`` turn or
        ``threadId`` thread)."""
        conv = found.conversation
        if conv is None:
            raise ConversationNotFoundError(f"no conversation {cid!r}", conversationId=cid)
        if catch_up and self._behind(conv):
            return False
        self._open(conv)
        pid = actor.participant_id
        me = next((r for r in found.people if r.record_id == pid), None)
        self._allowed(self._present(actor, conv, pid, me, reading=False), "canSend")
        self._check_turn_params(params)
        named = {(r.kind, r.record_id) for r in found.refs}
        for kind, rid in turn_refs(params):
            if (kind, rid) not in named:
                self._missing(kind, rid)
        return True

    @staticmethod
    def _new_turn(
        conversation_id: str,
        author: str,
        params: dict[str, Any],
        source: dict[str, Any] | None,
        *,
        turn_id: str | None = None,
        timestamp: int | None = None,
    ) -> Turn:
        return Turn(
            id=turn_id or new_id("turn"),
            conversationId=conversation_id,
            participant=author,
            participantId=author,
            timestamp=now_ms() if timestamp is None else timestamp,
            contentType=params["contentType"],
            content=params["content"],
            threadId=params.get("threadId"),
            inReplyTo=params.get("inReplyTo"),
            visibility=visibility_of(params.get("visibility")),
            source=cast(Any, source or EXPLICIT),
            metadata=params.get("metadata") or {},
            status="recorded",
        )

    async def _visible_turns(self, actor: Actor, conv: Record, member: Record) -> list[Record]:
        self._allowed(member, "canObserve")
        viewer = participant_of(member)
        joined = int(member.data.get("joinedAfterTurn", 0))
        rows = await self.store.list_records(actor.key, "turn", conv.conversation_id)
        return [r for r in rows if access.visible(turn_of(r), r.seq, viewer, joined)]


#: the ``source`` of a turn recorded by ``mail/turn`` (or ``mail/create``'s initial turn)
EXPLICIT = {"type": "explicit", "method": "mail/turn"}


#: what a participant's row keeps beside its wire object: how many turns there were when
#: it joined, the principal it stands for, who removed it
_INTERNAL = frozenset({"joinedAfterTurn", "principal", "removedBy"})


def participant_of(record: Record) -> Participant:
    """A participant's row as ``mail/*`` answers it (without what the row keeps beside
    it; with ``conversationId`` and ``type``, which the row does not keep)."""
    data = {k: v for k, v in record.data.items() if k not in _INTERNAL}
    data["conversationId"] = record.conversation_id
    data["type"] = participant_type(record.record_id)
    return cast(Participant, data)


def admits(record: Record | None, actor: Actor) -> bool:
    """Whether the participant row ``record`` (of another caller's conversation) gives
    ``actor`` access: it is the actor's participant, was invited for the actor's
    principal, and was not removed by someone else."""
    if record is None or record.data.get("removedBy"):
        return False
    return bool(record.data.get("principal", record.record_id) == actor.holder)


def guests_of(
    people: list[Record], event_type: str, data: dict[str, Any], turn: Record | None = None
) -> dict[str, str]:
    """The participants (of ``people``, a conversation's rows) an event reaches, with the
    principal each was invited for: those present (not gone, not removed) that read what
    it tells as ``mail/*`` shows it them (a ``turn``'s event: the participants that see the
    turn in ``mail/turns/list``; a summary: those that observe); and the participant an
    event of its leaving names."""
    gone = data.get("participantId") if event_type == "mail.participant.left" else None
    found: dict[str, str] = {}
    for row in people:
        principal = row.data.get("principal")
        if principal is not None and (row.record_id == gone or _reads(row, event_type, turn)):
            found[row.record_id] = str(principal)
    return found


def _reads(member: Record, event_type: str, turn: Record | None) -> bool:
    if member.data["leftAt"] is not None or member.data.get("removedBy"):
        return False
    if turn is None and event_type != "mail.summary.generated":
        return True
    viewer = participant_of(member)
    if not viewer["permissions"].get("canObserve"):
        return False
    joined = int(member.data.get("joinedAfterTurn", 0))
    return turn is None or access.visible(turn_of(turn), turn.seq, viewer, joined)


def turn_of(record: Record) -> Turn:
    """A turn's row, with the fields of the SDK's ``Turn`` that rows written before they
    were added lack (``participant``, ``source.method``, ``visibility.ids``), filled in
    place."""
    data = record.data
    if "participant" not in data:
        data["participant"] = data["participantId"]
        if data["source"].get("type") == "explicit":
            data["source"] = {**data["source"], "method": "mail/turn"}
        if data["visibility"].get("type") == "participants":
            data["visibility"] = visibility_of(data["visibility"])
    return cast(Turn, data)
