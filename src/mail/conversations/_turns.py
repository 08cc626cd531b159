"""The turn, thread and summary methods: ``mail/turn``, ``mail/turns/list``,
``mail/replay``, ``mail/thread/create``, ``mail/thread/list``, ``mail/summary``, and the
intercepted turns of bound tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from mail.conversations import _access as access
from mail.conversations._access import opt_int, opt_str, req_str
from mail.conversations._base import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    Actor,
    ServiceBase,
    new_id,
    participant_of,
)
from mail.conversations.errors import (
    MailPermissionDeniedError,
    ThreadNestingLimitError,
)
from mail.conversations.models import (
    CLOSED_STATUSES,
    Thread,
    Turn,
    now_ms,
)
from mail.conversations.store import Record, RecordKind
from mail.db.store import CallerKey

__all__ = ["Intercepted", "TurnMethods"]

#: an intercepted turn: its author, its ``mail/turn``-like params and its ``source``
Intercepted = tuple[str, dict[str, Any], dict[str, Any]]


class TurnMethods(ServiceBase):
    """The methods on turns, threads and summaries."""

    async def turn(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/turn``: record an explicit turn (a participant with ``canSend``)."""
        conv = await self._conversation(actor, params)
        self._open(conv)
        self._allowed(await self._member(actor, conv), "canSend")
        self._check_turn_params(params)
        return {"turn": await self.record_turn(actor, conv, params)}

    async def redact(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``x-mail/turn/redact`` (our extension, R7): the turn's content becomes
        ``null`` and its status ``redacted``; emits ``mail.turn.updated``. Allowed to the
        turn's author and the initiator while the conversation is open, and to an admin
        at any time. The conversation's cached summaries are dropped (regenerated on the
        next ``mail/summary``). Redacting a redacted turn changes nothing."""
        conv = await self._conversation(actor, params)
        turn = await self._lookup(actor, conv, "turn", req_str(params, "turnId"))
        reason = opt_str(params, "reason")
        if not actor.admin:
            self._open(conv)
            member = await self._member(actor, conv)
            author = turn.data["participantId"] == actor.participant_id
            if not author and member.data["role"] != "initiator":
                raise MailPermissionDeniedError(
                    "only the turn's author, the initiator or an admin may redact it",
                    permission="redact",
                )
        if turn.data["status"] == "redacted":
            return {"turn": turn.data}
        redaction = {"by": actor.participant_id, "at": now_ms(), "reason": reason}
        turn.data.update(content=None, status="redacted")
        turn.data["metadata"] = {**turn.data["metadata"], "redaction": redaction}
        async with self._lock(actor, conv):
            await self.store.put(actor.key, turn)
        for cached in await self.store.list_records(actor.key, "summary", conv.conversation_id):
            cached.data = {"stale": True}  # it may quote the redacted content
            await self.store.put(actor.key, cached)
        self._emit(
            actor,
            "mail.turn.updated",
            {
                "conversationId": conv.conversation_id,
                "turnId": turn.record_id,
                "status": "redacted",
            },
        )
        return {"turn": turn.data}

    async def intercept(
        self, key: CallerKey, conversation_id: str, items: Sequence[Intercepted]
    ) -> list[Turn]:
        """Record intercepted turns (``(author, params, source)``, in order) in one write;
        authors not yet participants join as ``worker``. Records nothing (silently) when
        mail is off or the conversation is unknown or closed; a ``threadId`` or
        ``inReplyTo`` the conversation does not have is dropped, the turn kept. Raises
        :class:`mail.errors.StorageError` when the store fails."""
        if not self.enabled or not items:
            return []
        conv = await self.store.get(key, conversation_id, "conversation", conversation_id)
        if conv is None or conv.data["status"] in CLOSED_STATUSES:
            return []
        members = await self._members_of(key, conversation_id)
        known, part_seq = set(members[0]), members[1]
        records: list[Record] = []
        events: list[tuple[str, dict[str, Any]]] = []
        async with self._lock(Actor(key=key, participant_id=""), conv):
            turn_seq = await self._last_turn(key, conversation_id)
            for author, params, source in items:
                if author not in known:
                    known.add(author)
                    part_seq += 1
                    joined = self._participant_record(conv, author, part_seq, turn_seq)
                    records.append(joined)
                    events.append(
                        (
                            "mail.participant.joined",
                            {
                                "conversationId": conversation_id,
                                "participant": participant_of(joined),
                            },
                        )
                    )
                turn_seq += 1
                clean = await self._known_refs(key, conv, params)
                turn = self._new_turn(conv, author, clean, source)
                records.append(
                    Record(
                        conversation_id=conversation_id,
                        kind="turn",
                        record_id=turn["id"],
                        seq=turn_seq,
                        task_id=conv.task_id,
                        data=dict(turn),
                    )
                )
                events.append(
                    ("mail.turn.added", {"conversationId": conversation_id, "turn": turn})
                )
            await self.store.put_many(key, records)
            self._noted_turn(key, conversation_id, turn_seq)
            self._members[(key, conversation_id)] = (frozenset(known), part_seq)
        for event_type, data in events:
            self.bus.publish(key, event_type, data, now_ms())
        return [cast(Turn, r.data) for r in records if r.kind == "turn"]

    async def _known_refs(
        self, key: CallerKey, conv: Record, params: dict[str, Any]
    ) -> dict[str, Any]:
        clean = {k: v for k, v in params.items() if k not in ("threadId", "inReplyTo")}
        refs: tuple[tuple[str, RecordKind], ...] = (("threadId", "thread"), ("inReplyTo", "turn"))
        for name, kind in refs:
            ref = params.get(name)
            if isinstance(ref, str) and await self.store.get(key, conv.conversation_id, kind, ref):
                clean[name] = ref
        return clean

    async def turns_list(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/turns/list``: the turns the caller sees, filtered, paged by cursor."""
        conv = await self._conversation(actor, params)
        member = await self._member(actor, conv, reading=True)
        filter_ = params.get("filter") or {}
        thread = opt_str(filter_, "threadId")
        if thread is not None:
            await self._lookup(actor, conv, "thread", thread)
        rows = [
            r
            for r in await self._visible_turns(actor, conv, member)
            if _turn_matches(r.data, filter_)
        ]
        descending = params.get("order", "asc") == "desc"
        if descending:
            rows.reverse()
        after = access.decode_cursor(params.get("cursor"))
        if after is not None:
            rows = [r for r in rows if (r.seq < after[0] if descending else r.seq > after[0])]
        return _page(rows, opt_int(params, "limit", minimum=1), "turns")

    async def replay(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/replay``: the visible turns after ``fromTurnId``, in order."""
        conv = await self._conversation(actor, params)
        member = await self._member(actor, conv, reading=True)
        start = 0
        from_turn = opt_str(params, "fromTurnId")
        if from_turn is not None:
            start = (await self._lookup(actor, conv, "turn", from_turn)).seq
        thread = opt_str(params, "threadId")
        if thread is not None:
            await self._lookup(actor, conv, "thread", thread)
        filter_ = {"threadId": thread, "contentTypes": params.get("contentTypes")}
        after = access.decode_cursor(params.get("cursor"))
        start = max(start, after[0]) if after else start
        rows = [
            r
            for r in await self._visible_turns(actor, conv, member)
            if r.seq > start and _turn_matches(r.data, filter_)
        ]
        return _page(rows, opt_int(params, "limit", minimum=1), "turns")

    # --- threads and summaries --------------------------------------------------------------

    async def thread_create(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/thread/create``: a thread rooted at a turn (``canCreateThreads``)."""
        conv = await self._conversation(actor, params)
        self._open(conv)
        self._allowed(await self._member(actor, conv), "canCreateThreads")
        root = await self._lookup(actor, conv, "turn", req_str(params, "rootTurnId"))
        depth, parent_id = 1, opt_str(params, "parentThreadId")
        if parent_id is not None:
            depth = (await self._lookup(actor, conv, "thread", parent_id)).data["depth"] + 1
        if depth > self.max_thread_depth:
            raise ThreadNestingLimitError(
                f"threads nest at most {self.max_thread_depth} deep", maxDepth=self.max_thread_depth
            )
        thread = Thread(
            id=new_id("thread"),
            conversationId=conv.conversation_id,
            rootTurnId=root.record_id,
            parentThreadId=parent_id,
            subject=opt_str(params, "subject"),
            depth=depth,
            createdBy=actor.participant_id,
            createdAt=now_ms(),
        )
        seq = await self._next_seq(actor, conv, "thread")
        await self._put(actor, conv, "thread", thread["id"], thread, seq)
        self._emit(
            actor, "mail.thread.created", {"conversationId": conv.conversation_id, "thread": thread}
        )
        return {"thread": thread}

    async def thread_list(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/thread/list``: the threads (children of ``parentThreadId`` if given)."""
        conv = await self._conversation(actor, params)
        await self._member(actor, conv, reading=True)
        parent = opt_str(params, "parentThreadId")
        if parent is not None:
            await self._lookup(actor, conv, "thread", parent)
        rows = await self.store.list_records(actor.key, "thread", conv.conversation_id)
        if "parentThreadId" in params:
            rows = [r for r in rows if r.data["parentThreadId"] == parent]
        return {"threads": [r.data for r in rows]}


def _turn_matches(turn: dict[str, Any], filter_: dict[str, Any]) -> bool:
    if filter_.get("threadId") is not None and turn["threadId"] != filter_["threadId"]:
        return False
    types = filter_.get("contentTypes")
    if types and turn["contentType"] not in types:
        return False
    pid = filter_.get("participantId")
    if pid is not None and turn["participantId"] != pid:
        return False
    after = filter_.get("afterTimestamp")
    return after is None or turn["timestamp"] > after


def _page(rows: list[Record], limit: int | None, name: str) -> dict[str, Any]:
    limit = min(limit or DEFAULT_LIMIT, MAX_LIMIT)
    page = rows[:limit]
    cursor = access.encode_cursor([page[-1].seq]) if len(rows) > limit else None
    return {name: [r.data for r in page], "nextCursor": cursor}
