"""``mail/summary``: summaries cached per conversation and thread, made by the service's
:class:`~mail.conversations._summarizers.Summarizer` from the public turns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from mail.conversations._access import InvalidParamsError, opt_str
from mail.conversations._base import Actor, ServiceBase
from mail.conversations._summarizers import SECTIONS
from mail.conversations.models import Summary, Turn, now_ms
from mail.conversations.store import Record

__all__ = ["SummaryMethods"]


class SummaryMethods(ServiceBase):
    """``mail/summary``."""

    async def summary(self, actor: Actor, params: dict[str, Any]) -> dict[str, Any]:
        """``mail/summary``: the cached summary of the conversation (or ``scope.threadId``),
        generated when there is none, it lacks a section ``include`` asks for, a turn was
        redacted since, or ``regenerate`` is set. A ``scope`` with ``fromTurnId`` or
        ``toTurnId`` (the turns between them, both included) is summarized each time and
        not cached. The answer is the SDK's (``summary``, the text; ``generated``;
        ``cachedAt``) with our fields (:class:`~mail.conversations.models.Summary`)."""
        conv = await self._conversation(actor, params)
        await self._member(actor, conv, reading=True)
        scope = params.get("scope") or {}
        thread = opt_str(scope, "threadId")
        if thread is not None:
            await self._lookup(actor, conv, "thread", thread)
        span = await self._span(actor, conv, scope)
        include = params.get("include") or {}
        wanted = [name for name in SECTIONS if include.get(name, True) is not False]
        cached = None
        if span is None:
            cached = await self.store.get(actor.key, conv.conversation_id, "summary", thread or "*")
        generated = (
            cached is None
            or bool(params.get("regenerate"))
            or "summary" not in cached.data  # stale, or kept before it was named so
            or any(name not in cached.data for name in wanted)
        )
        named = {k: scope[k] for k in ("threadId", "fromTurnId", "toTurnId") if scope.get(k)}
        data = (
            await self._summarize(actor, conv, named, wanted, span)
            if generated or cached is None
            else cached.data
        )
        kept = {k: v for k, v in data.items() if k not in SECTIONS or k in wanted}
        return {"summary": kept.pop("summary"), **kept, "generated": generated}

    async def _span(
        self, actor: Actor, conv: Record, scope: dict[str, Any]
    ) -> tuple[float, float] | None:
        """The turn positions of ``scope.fromTurnId`` and ``toTurnId`` (``None`` when
        neither is given); a turn the conversation does not have is -32602."""
        if scope.get("fromTurnId") is None and scope.get("toTurnId") is None:
            return None
        span = [0.0, float("inf")]
        for at, name in enumerate(("fromTurnId", "toTurnId")):
            turn_id = scope.get(name)
            if turn_id is None:
                continue
            found = await self.store.get(actor.key, conv.conversation_id, "turn", turn_id)
            if found is None:
                raise InvalidParamsError(
                    f"params.scope.{name}: no turn {turn_id!r} in this conversation",
                    field=f"scope.{name}",
                )
            span[at] = found.seq
        return span[0], span[1]

    async def _summarize(
        self,
        actor: Actor,
        conv: Record,
        scope: dict[str, str],
        sections: Sequence[str],
        span: tuple[float, float] | None,
    ) -> dict[str, Any]:
        rows = await self.store.list_records(actor.key, "turn", conv.conversation_id)
        low, high = span or (0, float("inf"))
        thread = scope.get("threadId")
        public = [
            cast(Turn, r.data)
            for r in rows
            if r.data["visibility"]["type"] == "all"
            and r.data["status"] != "redacted"
            and not r.data["contentType"].startswith("x-")
            and (thread is None or r.data["threadId"] == thread)
            and low <= r.seq <= high
        ]
        made = dict(await self.summarizer(public, sections))
        now = now_ms()
        summary = cast(
            Summary,
            {
                "conversationId": conv.conversation_id,
                "scope": scope,
                "summary": made.pop("text"),
                **made,
                "cachedAt": now,
                "turnCount": len(public),
                "generatedAt": now,
            },
        )
        if span is None:
            await self._put(actor, conv, "summary", thread or "*", summary, 0)
        await self._emit(
            actor,
            "mail.summary.generated",
            {**summary, "generated": True},
        )
        return dict(summary)
