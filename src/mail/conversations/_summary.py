"""``mail/summary``: summaries cached per conversation and thread, made by the service's
:class:`~mail.conversations._summarizers.Summarizer` from the public turns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from mail.conversations._access import opt_str
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
        redacted since, or ``regenerate`` is set."""
        conv = await self._conversation(actor, params)
        await self._member(actor, conv, reading=True)
        thread = opt_str(params.get("scope") or {}, "threadId")
        if thread is not None:
            await self._lookup(actor, conv, "thread", thread)
        include = params.get("include") or {}
        wanted = [name for name in SECTIONS if include.get(name, True) is not False]
        cached = await self.store.get(actor.key, conv.conversation_id, "summary", thread or "*")
        if (
            cached is None
            or params.get("regenerate")
            or cached.data.get("stale")
            or any(name not in cached.data for name in wanted)
        ):
            cached = await self._summarize(actor, conv, thread, wanted)
        data = {k: v for k, v in cached.data.items() if include.get(k, True) is not False}
        return {"summary": data}

    async def _summarize(
        self, actor: Actor, conv: Record, thread: str | None, sections: Sequence[str]
    ) -> Record:
        rows = await self.store.list_records(actor.key, "turn", conv.conversation_id)
        public = [
            cast(Turn, r.data)
            for r in rows
            if r.data["visibility"]["type"] == "all"
            and r.data["status"] != "redacted"
            and not r.data["contentType"].startswith("x-")
            and (thread is None or r.data["threadId"] == thread)
        ]
        made = await self.summarizer(public, sections)
        summary = cast(
            Summary,
            {
                "conversationId": conv.conversation_id,
                "scope": {"threadId": thread} if thread else {},
                **made,
                "turnCount": len(public),
                "generatedAt": now_ms(),
            },
        )
        record = await self._put(actor, conv, "summary", thread or "*", summary, 0)
        self._emit(
            actor,
            "mail.summary.generated",
            {"conversationId": conv.conversation_id, "summary": summary},
        )
        return record
