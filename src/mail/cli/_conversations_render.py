"""MAP Mail conversations as lines of text, for ``mail conversations`` / ``mail
conversation ID`` and the REPL's commands of the same names."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mail.client import MAILClient

__all__ = ["conversation_lines", "fetch_conversation", "listing_lines"]


def _when(ms: Any) -> str:
    from datetime import UTC, datetime  # noqa: PLC0415

    if not isinstance(ms, int):
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def listing_lines(page: Mapping[str, Any], *, more: str) -> list[str]:
    """The lines of a ``mail/list`` page: one per conversation, then ``more: <more> CURSOR``
    when there is a next page."""
    lines = [] if page["conversations"] else ["no conversations"]
    for conv in page["conversations"]:
        task = f"  task {conv['taskId']}" if conv.get("taskId") else ""
        lines.append(
            f"{conv['id']}  {conv['status']:<9}  {conv['type']:<12}  "
            f"{_when(conv.get('createdAt'))}  {conv.get('subject') or ''}{task}"
        )
    if page.get("nextCursor"):
        lines.append(f"more: {more} {page['nextCursor']}")
    return lines


async def fetch_conversation(client: MAILClient, cid: str) -> dict[str, Any]:
    """``mail/get`` of ``cid`` with its participants, threads and stats, plus ``turns``:
    every turn the caller may read, in order. Raises what the client raises."""
    got = dict(
        await client.mail_get(
            conversationId=cid, include={"participants": True, "threads": True, "stats": True}
        )
    )
    turns: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"conversationId": cid, "limit": 500}
        if cursor:
            params["cursor"] = cursor
        page = await client.mail_turns_list(**params)
        turns += page["turns"]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    got["turns"] = turns
    return got


def _turn_text(turn: dict[str, Any]) -> str:
    if turn.get("status") == "redacted":
        return "[redacted]"
    content = turn.get("content")
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    if turn.get("contentType") == "x-tool-call" and isinstance(content, dict):
        return f"{content.get('toolName')}({json.dumps(content.get('toolArgs'))})"
    return json.dumps(content, ensure_ascii=False)


def conversation_lines(got: dict[str, Any]) -> list[str]:
    """What :func:`fetch_conversation` found, as lines: the conversation, its participants,
    threads and turns."""
    conv = got["conversation"]
    lines = [
        f"conversation: {conv['id']}",
        f"status:       {conv['status']}",
        f"subject:      {conv.get('subject') or ''}",
        f"task:         {conv.get('taskId') or ''}",
        "participants: " + ", ".join(f"{p['id']} ({p['role']})" for p in got["participants"]),
    ]
    lines += [
        f"thread {thread['id']} at {thread['rootTurnId']} (depth {thread['depth']}): "
        f"{thread.get('subject') or ''}"
        for thread in got["threads"]
    ]
    for turn in got["turns"]:
        where = f" [{turn['threadId']}]" if turn.get("threadId") else ""
        lines.append(
            f"{_when(turn['timestamp'])}  {turn['participantId']}{where}  "
            f"{turn['contentType']}: {_turn_text(turn)}"
        )
    return lines
