"""The turn, thread and summary methods: ``mail/turn``, ``mail/turns/list``,
``mail/replay``, ``mail/thread/create``, ``mail/thread/list``, ``mail/summary``, and the
intercepted turns of bound tasks."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from mail.conversations import _access as access
from mail.conversations._access import InvalidParamsError, opt_int, opt_str, req_str
from mail.conversations._base import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    Actor,
    ServiceBase,
    guests_of,
    new_id,
    new_ids,
    participant_of,
    turn_of,
)
from mail.conversations.errors import (
    MailPermissionDeniedError,
    ThreadNestingLimitError,
)
from mail.conversations.models import (
    Thread,
    Turn,
    now_ms,
)
from mail.conversations.store import Mark, Record, RecordKind
from mail.db.store import CallerKey

__all__ = ["Intercepted", "TurnMethods", "threads_shown"]

#: an intercepted turn: its author, its ``mail/turn``-like params, its ``source`` and
#: when it happened (the event's ISO-8601 time)
Intercepted = tuple[str, dict[str, Any], dict[str, Any], str]


class TurnMethods(ServiceBase):
    """The methods on turns, threads and summaries."""

    async def turn(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/turn``: record an explicit turn (a participant with ``canSend``), in one
        store write."""
        cid = req_str(params, "conversationId")
        return {"turn": await self.record_turn(actor, cid, params)}

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
            return {"turn": turn_of(turn)}
        redaction = {"by": actor.participant_id, "at": now_ms(), "reason": reason}
        turn.data.update(content=None, status="redacted")
        turn.data["metadata"] = {**turn.data["metadata"], "redaction": redaction}
        async with self._lock(actor, conv):
            await self.store.put(actor.key, turn)
        for cached in await self.store.list_records(actor.key, "summary", conv.conversation_id):
            cached.data = {"stale": True}  # it may quote the redacted content
            await self.store.put(actor.key, cached)
        turn_of(turn)
        await self._emit(
            actor,
            "mail.turn.updated",
            {
                "conversationId": conv.conversation_id,
                "turnId": turn.record_id,
                "status": "redacted",
            },
            turn,
        )
        return {"turn": turn.data}

    async def intercept(
        self,
        key: CallerKey,
        items: Mapping[str, Sequence[Intercepted]],
        marks: Mapping[str, Mark] | None = None,
    ) -> dict[str, list[Turn]]:
        """Record intercepted turns (``(author, params, source, event time)``, in order, by
        conversation id) in one store write, each stamped with its event's time; authors
        not yet participants join as ``worker``. With ``marks``, the conversations' marks
        move on in the same write, and the turns they cover already are left out (see
        :meth:`~mail.conversations.store.ConversationStore.append_turns`). Records
        nothing (silently) when mail is off, and nothing in a conversation that is
        unknown or closed; a ``threadId`` or ``inReplyTo`` the conversation does not have
        is dropped, the turn kept. Returns the turns recorded by conversation. Raises
        :class:`mail.errors.StorageError` when the store fails."""
        if not self.enabled:
            return {}
        ids = iter(new_ids("turn", sum(len(batch) for batch in items.values())))
        turns: dict[str, list[dict[str, Any]]] = {}
        for cid, batch in items.items():
            turns[cid] = []
            for author, said, source, at in batch:
                params = await self._known_refs(key, cid, said) if _refers(said) else said
                turn = self._new_turn(
                    cid, author, params, source, turn_id=next(ids), timestamp=_epoch_ms(at)
                )
                turns[cid].append(cast("dict[str, Any]", turn))
        written = await self.store.append_turns(key, turns, join=self._joined, marks=marks)
        recorded = {
            cid: [cast(Turn, r.data) for r in rows if r.kind == "turn"]
            for cid, rows in written.items()
        }
        await self._publish_written(key, written)
        return recorded

    async def _publish_written(self, key: CallerKey, written: dict[str, list[Record]]) -> None:
        """``mail.participant.joined`` and ``mail.turn.added`` for the rows ``written``, each
        built only when a subscription may take its type (the participants of each
        conversation read once: its guests)."""
        joins = self.bus.listening_to(key, "mail.participant.joined")
        adds = self.bus.listening_to(key, "mail.turn.added")
        if not (joins or adds):
            return
        now = now_ms()
        for cid, rows in written.items():
            people = await self.store.list_records(key, "participant", cid)
            for r in rows:
                if r.kind == "participant" and joins:
                    kind = "mail.participant.joined"
                    data = {"conversationId": cid, "participant": participant_of(r)}
                    self.bus.publish(key, kind, data, now, guests_of(people, kind, data))
                elif r.kind == "turn" and adds:
                    kind, data = "mail.turn.added", {"conversationId": cid, "turn": r.data}
                    self.bus.publish(key, kind, data, now, guests_of(people, kind, data, r))

    @classmethod
    def _joined(cls, conv: Record, author: str, seq: int, turns: int) -> Record:
        """The row of an intercepted author who joins as ``worker``."""
        return cls._participant_record(conv, author, seq, turns)

    async def _known_refs(
        self, key: CallerKey, conversation_id: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        clean = {k: v for k, v in params.items() if k not in ("threadId", "inReplyTo")}
        refs: tuple[tuple[str, RecordKind], ...] = (("threadId", "thread"), ("inReplyTo", "turn"))
        for name, kind in refs:
            ref = params.get(name)
            if isinstance(ref, str) and await self.store.get(key, conversation_id, kind, ref):
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
        after, before = await self._bounds(actor, conv, filter_)
        rows = [
            r
            for r in await self._visible_turns(actor, conv, member)
            if after < r.seq < before and _turn_matches(r.data, filter_)
        ]
        descending = params.get("order", "asc") == "desc"
        if descending:
            rows.reverse()
        cursor = access.decode_cursor(params.get("cursor"), int)
        if cursor is not None:
            rows = [r for r in rows if (r.seq < cursor[0] if descending else r.seq > cursor[0])]
        return _turns_page(rows, opt_int(params, "limit", minimum=1))

    async def _bounds(
        self, actor: Actor, conv: Record, filter_: dict[str, Any]
    ) -> tuple[float, float]:
        """The turn positions ``filter.afterTurnId`` and ``beforeTurnId`` name (both
        exclusive; a turn the conversation does not have is a bad filter: -32602)."""
        bounds = [0.0, math.inf]
        for at, name in enumerate(("afterTurnId", "beforeTurnId")):
            turn_id = filter_.get(name)
            if turn_id is None:
                continue
            found = await self.store.get(actor.key, conv.conversation_id, "turn", turn_id)
            if found is None:
                raise InvalidParamsError(
                    f"params.filter.{name}: no turn {turn_id!r} in this conversation",
                    field=f"filter.{name}",
                )
            bounds[at] = found.seq
        return bounds[0], bounds[1]

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
        since = params.get("fromTimestamp")
        rows = [
            r
            for r in await self._visible_turns(actor, conv, member)
            if r.seq > start
            and _turn_matches(r.data, filter_)
            and (since is None or r.data["timestamp"] >= since)
        ]
        missed = len(rows)
        after = access.decode_cursor(params.get("cursor"), int)
        if after is not None:
            rows = [r for r in rows if r.seq > after[0]]
        return {**_turns_page(rows, opt_int(params, "limit", minimum=1)), "missedCount": missed}

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
        now = now_ms()
        thread = Thread(
            id=new_id("thread"),
            conversationId=conv.conversation_id,
            rootTurnId=root.record_id,
            parentThreadId=parent_id,
            subject=opt_str(params, "subject"),
            depth=depth,
            createdBy=actor.participant_id,
            createdAt=now,
            turnCount=0,
            participantCount=0,
            updatedAt=now,
        )
        seq = await self._next_seq(actor, conv, "thread")
        stored = {k: v for k, v in thread.items() if k not in _COUNTED}
        await self._put(actor, conv, "thread", thread["id"], stored, seq)
        await self._emit(
            actor, "mail.thread.created", {"conversationId": conv.conversation_id, "thread": thread}
        )
        return {"thread": thread}

    async def thread_list(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/thread/list``: the threads (children of ``parentThreadId`` if given)."""
        conv = await self._conversation(actor, params)
        member = await self._member(actor, conv, reading=True)
        parent = opt_str(params, "parentThreadId")
        if parent is not None:
            await self._lookup(actor, conv, "thread", parent)
        rows = await self.store.list_records(actor.key, "thread", conv.conversation_id)
        if "parentThreadId" in params:
            rows = [r for r in rows if r.data["parentThreadId"] == parent]
        after = access.decode_cursor(params.get("cursor"), int)
        if after is not None:
            rows = [r for r in rows if r.seq > after[0]]
        observing = member.data["permissions"].get("canObserve")  # else it counts no turn
        turns = await self._visible_turns(actor, conv, member) if observing else []
        page = _page(rows, opt_int(params, "limit", minimum=1), "threads")
        return {**page, "threads": threads_shown(page["threads"], turns)}


def _epoch_ms(iso: str) -> int:
    """An event's ISO-8601 time in epoch milliseconds (now if it is not one)."""
    try:
        return int(datetime.fromisoformat(iso).timestamp() * 1000)
    except (TypeError, ValueError):
        return now_ms()


def _refers(params: dict[str, Any]) -> bool:
    """Whether a turn's params name a thread or a turn (to be checked)."""
    return "threadId" in params or "inReplyTo" in params


def _turn_matches(turn: dict[str, Any], filter_: dict[str, Any]) -> bool:
    if filter_.get("threadId") is not None and turn["threadId"] != filter_["threadId"]:
        return False
    types = filter_.get("contentTypes")
    if types and turn["contentType"] not in types:
        return False
    pid = filter_.get("participantId")
    if pid is not None and turn["participantId"] != pid:
        return False
    after, before = filter_.get("afterTimestamp"), filter_.get("beforeTimestamp")
    if after is not None and turn["timestamp"] <= after:
        return False
    return before is None or turn["timestamp"] < before


def _page(rows: list[Record], limit: int | None, name: str) -> dict[str, Any]:
    """A page of ``rows`` (as rows: the caller shapes them) under ``name``, with
    ``hasMore`` and ``nextCursor`` (``null`` on the last page)."""
    limit = min(limit or DEFAULT_LIMIT, MAX_LIMIT)
    page, more = rows[:limit], len(rows) > limit
    cursor = access.encode_cursor([page[-1].seq]) if more else None
    return {name: page, "hasMore": more, "nextCursor": cursor}


def _turns_page(rows: list[Record], limit: int | None) -> dict[str, Any]:
    page = _page(rows, limit, "turns")
    return {**page, "turns": [r.data for r in page["turns"]]}


#: a thread's fields counted when it is read (:func:`threads_shown`), never stored
_COUNTED = frozenset({"turnCount", "participantCount", "updatedAt"})


def threads_shown(threads: Sequence[Record], turns: Sequence[Record]) -> list[dict[str, Any]]:
    """Threads as ``mail/*`` answers them: ``turnCount``, ``participantCount`` (authors)
    and ``updatedAt`` (the last turn's time) over ``turns``, the turns the reader sees."""
    counts: dict[str, list[Any]] = {t.record_id: [0, set(), t.data["createdAt"]] for t in threads}
    for turn in turns:
        counted = counts.get(turn.data["threadId"] or "")
        if counted is not None:
            counted[0] += 1
            counted[1].add(turn.data["participantId"])
            counted[2] = max(counted[2], turn.data["timestamp"])
    return [
        {
            **t.data,
            "turnCount": counts[t.record_id][0],
            "participantCount": len(counts[t.record_id][1]),
            "updatedAt": counts[t.record_id][2],
        }
        for t in threads
    ]
