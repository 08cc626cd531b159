"""The 13 ``mail/*`` methods over a :class:`~mail.conversations.store.ConversationStore`.

Each method takes the acting participant (:class:`Actor`: the caller's store key and its
participant id) and the request's ``params`` (the seed's camelCase object), checks them,
and returns the result object (shapes in ``docs/map-mail.md``). Failures raise the
:mod:`mail.conversations.errors` family (10000-10010, or
:class:`~mail.conversations._access.InvalidParamsError`, -32602). Every change emits its
``mail.*`` event on the :class:`~mail.conversations.events.EventBus`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from mail.conversations import _access as access
from mail.conversations._access import InvalidParamsError, opt_int, opt_str, req_str
from mail.conversations._base import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    Actor,
    admits,
    ordered_id,
    participant_of,
)
from mail.conversations._lifecycle import LifecycleMethods
from mail.conversations._params import parse_params
from mail.conversations._summary import SummaryMethods
from mail.conversations._turns import TurnMethods, threads_shown
from mail.conversations.errors import (
    ConversationNotFoundError,
    MailNotEnabledError,
    MailPermissionDeniedError,
    ParticipantAlreadyJoinedError,
    ParticipantNotFoundError,
)
from mail.conversations.events import ALL_CALLERS
from mail.conversations.models import (
    Conversation,
    Participant,
    default_permissions,
    now_ms,
)
from mail.conversations.store import Record, Shared
from mail.db.store import CallerKey

__all__ = ["GUEST", "METHODS", "Actor", "ConversationService"]

#: the field of a conversation ``mail/list`` shows a guest (our extension): its
#: participant there, ``{participantId, role, leftAt}``
GUEST = "x-guest"
#: the ``mail/*`` methods, by JSON-RPC name: the :class:`ConversationService` method
METHODS: dict[str, str] = {
    "mail/create": "create",
    "mail/get": "get",
    "mail/list": "list_conversations",
    "mail/close": "close",
    "mail/join": "join",
    "mail/leave": "leave",
    "mail/invite": "invite",
    "mail/turn": "turn",
    "mail/turns/list": "turns_list",
    "mail/thread/create": "thread_create",
    "mail/thread/list": "thread_list",
    "mail/summary": "summary",
    "mail/replay": "replay",
    # our extension (R7): redaction, the one change that emits mail.turn.updated
    "x-mail/turn/redact": "redact",
}


class ConversationService(TurnMethods, SummaryMethods, LifecycleMethods):
    """MAP Mail over a conversation store (see :class:`~mail.conversations._base.ServiceBase`
    for the arguments)."""

    async def call(self, method: str, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """Run the ``mail/*`` ``method``; raises ``KeyError`` for an unknown one. The params
        are checked before anything is read or written (-32602 naming the parameter, see
        :mod:`mail.conversations._params`). An admin naming another caller's conversation
        acts on that caller's rows (R6)."""
        handler: Callable[[Actor, dict[str, Any]], Awaitable[dict[str, Any]]] = getattr(
            self, METHODS[method]
        )
        if not self.enabled:
            raise MailNotEnabledError("MAP Mail is not enabled on this server")
        parse_params(method, params)
        cid = params.get("conversationId")
        if not isinstance(cid, str) or method == "mail/create":
            return await handler(actor, params)
        if actor.admin:
            return await handler(await self._as_owner(actor, cid), params)
        try:
            return await handler(actor, params)
        except ConversationNotFoundError:  # not the caller's: shared with it, maybe
            invited = await self._as_invited(actor, cid)
            if invited is None:
                raise
            return await handler(invited, params)

    async def _as_owner(self, actor: Actor, conversation_id: str) -> Actor:
        if await self.store.get(actor.key, conversation_id, "conversation", conversation_id):
            return actor
        owner = await self.store.owner_of(actor.key.swarm, conversation_id)
        if owner is None:
            return actor  # the method answers 10000
        return replace(actor, key=owner)

    async def _as_invited(self, actor: Actor, conversation_id: str) -> Actor | None:
        """The actor on the rows of the caller owning ``conversation_id`` when one of its
        participants was invited for the actor's principal (``None``: not shared with
        it)."""
        owner = await self.store.owner_of(actor.key.swarm, conversation_id)
        if owner is None or owner == actor.key:
            return None
        member = await self.store.get(owner, conversation_id, "participant", actor.participant_id)
        return replace(actor, key=owner, guest=True) if admits(member, actor) else None

    # --- conversations --------------------------------------------------------------------

    async def create(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/create``: a new active conversation; the caller joins as initiator."""
        kind = params.get("type", "mixed")
        metadata = params.get("metadata") or {}
        now = now_ms()
        cid = ordered_id("conv")
        data = Conversation(
            id=cid,
            type=kind,
            status="active",
            subject=opt_str(params, "subject"),
            parentConversationId=opt_str(params, "parentConversationId"),
            parentTurnId=opt_str(params, "parentTurnId"),
            taskId=opt_str(params, "taskId"),
            metadata=metadata,
            participantCount=0,  # not stored: counted when read (shown)
            createdBy=actor.participant_id,
            createdAt=now,
            updatedAt=now,
        )
        await self._check_parents(actor, data)
        initial = params.get("initialTurn")
        if initial is not None:
            self._check_turn_params(initial)
        conv = Record(
            conversation_id=cid,
            kind="conversation",
            record_id=cid,
            seq=now,
            task_id=data["taskId"],
            data={k: v for k, v in data.items() if k != "participantCount"},
        )
        people = self._initial_people(actor, conv, params.get("initialParticipants"))
        await self.store.put_many(actor.key, [conv, *people])  # all or nothing
        if data["taskId"] is not None and self.binder is not None:
            self.binder(actor.key, data["taskId"], cid)
        await self._emit(
            actor,
            "mail.created",
            {
                "conversationId": cid,
                "type": kind,
                "subject": data["subject"],
                "createdBy": actor.participant_id,
            },
        )
        joined = [participant_of(p) for p in people]
        for participant in joined:
            await self._emit(
                actor,
                "mail.participant.joined",
                {"conversationId": cid, "participant": participant},
            )
        me = joined[0]
        shown = {**conv.data, "participantCount": len(joined)}
        result: dict[str, Any] = {"conversation": shown, "participant": me}
        if initial is not None:
            result["initialTurn"] = await self.record_turn(actor, cid, initial, catch_up=False)
        return result

    def _initial_people(self, actor: Actor, conv: Record, others: Any) -> list[Record]:
        """The rows of a new conversation's participants: the caller as initiator, then
        ``initialParticipants`` (an id given twice joins once)."""
        people = [self._participant_record(conv, actor.participant_id, 1, 0, "initiator")]
        people[0].data["principal"] = actor.holder
        for other in others or []:
            if other["id"] in {p.record_id for p in people}:
                continue
            role, permissions = other.get("role", "worker"), other.get("permissions")
            person = self._participant_record(
                conv, other["id"], len(people) + 1, 0, role, permissions
            )
            person.data["principal"] = self._principal(other["id"])
            people.append(person)
        return people

    async def _check_parents(self, actor: Actor, data: Conversation) -> None:
        parent = data["parentConversationId"]
        if parent is None:
            return
        found = await self.store.get(actor.key, parent, "conversation", parent)
        if found is None:
            raise ConversationNotFoundError(f"no conversation {parent!r}", conversationId=parent)
        turn = data["parentTurnId"]
        if turn is not None:
            await self._lookup(actor, found, "turn", turn)

    async def get(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/get``: the conversation, with the ``include``d parts."""
        conv = await self._conversation(actor, params)
        member = await self._member(actor, conv, reading=True)
        include = params.get("include") or {}
        participants = await self._participants(actor, conv)
        shown = {**conv.data, "participantCount": len(participants)}
        result: dict[str, Any] = {"conversation": shown}
        if include.get("participants"):
            result["participants"] = participants
        turns = await self._visible_turns(actor, conv, member)
        threads = await self.store.list_records(actor.key, "thread", conv.conversation_id)
        if include.get("threads"):
            result["threads"] = threads_shown(threads, turns)
        recent = opt_int(include, "recentTurns")
        if recent:
            result["recentTurns"] = [t.data for t in turns[-recent:]]
        if include.get("stats"):
            result["stats"] = _stats(turns, len(participants), len(threads))
        return result

    async def _participants(self, actor: Actor, conv: Record) -> list[Participant]:
        rows = await self.store.list_records(actor.key, "participant", conv.conversation_id)
        return [participant_of(r) for r in rows if r.data["leftAt"] is None]

    async def list_conversations(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/list``: the caller's conversations and those shared with it (each marked
        ``x-guest``: its participant there), oldest first, ``limit`` per page; with
        ``filter.taskId`` (our extension) only those bound to that task; with
        ``filter["x-allCallers"]`` (admins only, else 10003) every caller's."""
        filter_ = params.get("filter") or {}
        task_id = filter_.get("taskId")  # our extension: the conversations bound to a task
        limit = min(opt_int(params, "limit", minimum=1) or DEFAULT_LIMIT, MAX_LIMIT)
        after = access.decode_cursor(params.get("cursor"), int, str)
        guests: dict[str, Record] = {}  # conversation id -> the caller's participant row
        if filter_.get(ALL_CALLERS):
            if not actor.admin:
                raise MailPermissionDeniedError(
                    f"only an admin may list with {ALL_CALLERS}", permission=ALL_CALLERS
                )
            rows = await self.store.list_every(actor.key.swarm, "conversation")
            if task_id is not None:
                rows = [(k, r) for k, r in rows if r.task_id == task_id]
        else:
            rows, guests = await self._reachable(actor, task_id)
        if after is not None:
            rows = [(k, r) for k, r in rows if [r.seq, r.record_id] > after]
        picked: list[Record] = []
        for key, row in rows:
            if len(picked) > limit:
                break
            if await self._listed(key, row, filter_):
                picked.append(row)
        page, more = picked[:limit], len(picked) > limit
        cursor = access.encode_cursor([page[-1].seq, page[-1].record_id]) if more else None
        owners = {row.record_id: key for key, row in rows}
        shown = [await self.shown(owners[r.record_id], r) for r in page]
        for conversation in shown:
            member = guests.get(conversation["id"])
            if member is not None:
                conversation[GUEST] = {
                    "participantId": member.record_id,
                    "role": member.data["role"],
                    "leftAt": member.data["leftAt"],
                }
        return {"conversations": shown, "hasMore": more, "nextCursor": cursor}

    async def _reachable(
        self, actor: Actor, task_id: Any
    ) -> tuple[list[tuple[CallerKey, Record]], dict[str, Record]]:
        """The caller's conversations and those shared with it (bound to ``task_id`` when
        given), with their callers, oldest first; and the caller's participant row in
        each shared one, by conversation id."""
        if task_id is not None:
            own = await self.store.bound_to(actor.key, task_id)
        else:
            own = await self.store.list_records(actor.key, "conversation")
        shared = await self._shared_with(actor, task_id)
        rows = [(actor.key, r) for r in own] + [(key, conv) for key, conv, _ in shared]
        rows.sort(key=lambda owned: (owned[1].seq, owned[1].record_id))
        return rows, {conv.record_id: member for _, conv, member in shared}

    async def hosts_of(self, actor: Actor) -> set[CallerKey]:
        """The callers whose conversations are shared with the actor (for its
        subscriptions); none when mail is off."""
        if not self.enabled:
            return set()
        return {key for key, _, _ in await self._shared_with(actor, None)}

    async def _shared_with(self, actor: Actor, task_id: Any) -> list[Shared]:
        """The other callers' conversations shared with the actor (bound to ``task_id``
        when given): those with a participant row of the actor that admits it."""
        found = await self.store.shared_with(actor.key.swarm, actor.holder)
        return [
            (key, conv, member)
            for key, conv, member in found
            if key != actor.key
            and member.record_id == actor.participant_id
            and admits(member, actor)
            and (task_id is None or conv.task_id == task_id)
        ]

    async def _listed(self, key: CallerKey, row: Record, filter_: dict[str, Any]) -> bool:
        if filter_.get("type") and row.data["type"] not in filter_["type"]:
            return False
        if filter_.get("status") and row.data["status"] not in filter_["status"]:
            return False
        if not _created_within(row.data, filter_):
            return False
        pid = filter_.get("participantId")
        if pid is None:
            return True
        member = await self.store.get(key, row.conversation_id, "participant", str(pid))
        return member is not None and member.data["leftAt"] is None

    async def close(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/close``: status ``completed`` (the initiator or a moderator), or, with
        ``status: "archived"``, ``archived`` (an admin; a closed conversation too)."""
        conv = await self._conversation(actor, params)
        reason = opt_str(params, "reason")
        status = params.get("status", "completed")
        if status == "archived":
            if not actor.admin:
                raise MailPermissionDeniedError("only an admin may archive", permission="archive")
            return await self.close_as(actor, conv, "archived", reason)
        self._open(conv)
        member = await self._member(actor, conv)
        if member.data["role"] not in ("initiator", "moderator"):
            raise MailPermissionDeniedError(
                "only the initiator or a moderator may close", permission="close"
            )
        return await self.close_as(actor, conv, "completed", reason)

    # --- participants ---------------------------------------------------------------------

    async def join(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/join``: the caller joins (again); ``catchUp`` returns recent history."""
        conv = await self._conversation(actor, params)
        self._open(conv)
        found = await self.store.get(
            actor.key, conv.conversation_id, "participant", actor.participant_id
        )
        if found is not None and found.data["leftAt"] is None:
            raise ParticipantAlreadyJoinedError(
                f"{actor.participant_id!r} already joined", participantId=actor.participant_id
            )
        foreign = actor.admin and conv.data["createdBy"] != actor.participant_id
        role = params.get("role") or ("observer" if foreign else "worker")
        if foreign and role != "observer":
            raise MailPermissionDeniedError(
                "an admin joins another caller's conversation as observer", permission="role"
            )
        granted = default_permissions(role)
        if actor.guest and found is not None:  # back in: as the invitation made it
            role = params.get("role") or found.data["role"]
            if role != found.data["role"]:
                raise MailPermissionDeniedError(
                    f"invited as {found.data['role']}, {actor.participant_id!r} joins as that",
                    permission="role",
                )
            granted = found.data["permissions"]
        narrowed = access.narrowing(granted, params.get("permissions"))
        if actor.guest and found is not None:
            narrowed = {**granted, **narrowed}
        catch_up = params.get("catchUp")
        after_turn = await self._catch_up_turn(actor, conv, catch_up)  # checked before joining
        participant = await self._add_participant(
            actor, conv, actor.participant_id, role, narrowed or None
        )
        shown = await self.shown(actor.key, conv)
        result: dict[str, Any] = {"conversation": shown, "participant": participant}
        if isinstance(catch_up, dict):
            result["history"] = await self._history(actor, conv, catch_up, after_turn)
            if catch_up.get("includeSummary"):
                whole = {"conversationId": conv.conversation_id}
                result["summary"] = (await self.summary(actor, whole))["summary"]
        return result

    async def _catch_up_turn(self, actor: Actor, conv: Record, catch_up: Any) -> int | None:
        """The position of the turn ``catchUp.from`` names, if it names one (-32602 for a
        turn the conversation does not have)."""
        since = catch_up.get("from") if isinstance(catch_up, dict) else None
        if not isinstance(since, str):
            return None
        found = await self.store.get(actor.key, conv.conversation_id, "turn", since)
        if found is None:
            raise InvalidParamsError(
                f"params.catchUp.from: no turn {since!r} in this conversation",
                field="catchUp.from",
            )
        return found.seq

    async def _history(
        self, actor: Actor, conv: Record, catch_up: dict[str, Any], after_turn: int | None
    ) -> list[dict[str, Any]]:
        """``mail/join``'s ``history``: the last ``limit`` visible turns after the turn
        ``catchUp.from`` names (at ``after_turn``), or at or after the time it gives."""
        member = await self._member(actor, conv)
        rows = await self._visible_turns(actor, conv, member)
        since = catch_up.get("from")
        if after_turn is not None:
            rows = [r for r in rows if r.seq > after_turn]
        elif since is not None:
            rows = [r for r in rows if r.data["timestamp"] >= since]
        limit = opt_int(catch_up, "limit", minimum=1) or DEFAULT_LIMIT
        return [r.data for r in rows[-limit:]]

    async def leave(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/leave``: the caller leaves (or removes ``participantId``: ``canRemove``);
        10001 when the conversation is closed."""
        conv = await self._conversation(actor, params)
        self._open(conv)
        member = await self._member(actor, conv)
        pid = opt_str(params, "participantId") or actor.participant_id
        if pid != actor.participant_id:
            self._allowed(member, "canRemove")
            gone = await self.store.get(actor.key, conv.conversation_id, "participant", pid)
            if gone is None or gone.data["leftAt"] is not None:
                raise ParticipantNotFoundError(f"no participant {pid!r}", participantId=pid)
            member = gone
            member.data["removedBy"] = actor.participant_id  # its access ends
        reason = opt_str(params, "reason")
        member.data["leftAt"] = now_ms()
        await self.store.put(actor.key, member)
        await self._emit(
            actor,
            "mail.participant.left",
            {"conversationId": conv.conversation_id, "participantId": pid, "reason": reason},
        )
        return {
            "success": True,
            "conversationId": conv.conversation_id,
            "participantId": pid,
            "leftAt": member.data["leftAt"],
        }

    async def invite(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/invite``: add a participant (``canInvite``)."""
        conv = await self._conversation(actor, params)
        self._open(conv)
        self._allowed(await self._member(actor, conv), "canInvite")
        invited = params["participant"]
        pid = req_str(invited, "id")
        found = await self.store.get(actor.key, conv.conversation_id, "participant", pid)
        if found is not None and found.data["leftAt"] is None:
            raise ParticipantAlreadyJoinedError(f"{pid!r} already joined", participantId=pid)
        participant = await self._add_participant(
            actor, conv, pid, invited.get("role", "worker"), invited.get("permissions")
        )
        return {
            "invited": True,
            "conversationId": conv.conversation_id,
            "participant": participant,
            "message": opt_str(params, "message"),
        }


def _created_within(data: dict[str, Any], filter_: dict[str, Any]) -> bool:
    """``mail/list``'s ``createdAfter``, ``createdBefore`` (both exclusive) and
    ``parentConversationId``."""
    after, before = filter_.get("createdAfter"), filter_.get("createdBefore")
    if after is not None and data["createdAt"] <= after:
        return False
    if before is not None and data["createdAt"] >= before:
        return False
    parent = filter_.get("parentConversationId")
    return parent is None or data["parentConversationId"] == parent


def _stats(turns: list[Record], participants: int, threads: int) -> dict[str, Any]:
    """``mail/get``'s ``stats``: the SDK's names and ours (``turnCount``,
    ``participantCount``, ``lastTurnAt``), over the turns the reader sees."""
    by_type: dict[str, int] = {}
    for turn in turns:
        kind = turn.data["contentType"]
        by_type[kind] = by_type.get(kind, 0) + 1
    return {
        "totalTurns": len(turns),
        "turnsByContentType": by_type,
        "activeParticipants": participants,
        "threadCount": threads,
        "turnCount": len(turns),
        "participantCount": participants,
        "lastTurnAt": turns[-1].data["timestamp"] if turns else None,
    }
