"""Reading the caller's results for breakpoint tool calls."""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

from mail.errors import InvalidMessageError

if TYPE_CHECKING:
    from mail.core.tasks import PendingBreakpoint

__all__ = ["parse_breakpoint_results"]

_FIELD = "kwargs.breakpoint_tool_call_result"


def _content(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def parse_breakpoint_results(
    raw: Any, pending: dict[str, PendingBreakpoint], caller: str | None = None
) -> list[tuple[str, str]]:
    """Match the caller's ``raw`` results to the pending calls: ``[(call_id, content)]``.

    ``raw`` may be a JSON string of the forms below, a list of ``{"call_id", "content"}``
    objects, one such object, ``{"content": ...}`` or a bare value (the last two only
    when exactly one call is pending, optionally narrowed by ``caller``). Raises
    :class:`InvalidMessageError` naming what is wrong: an unknown ``call_id``, a missing
    ``content``, or an unmatched bare result while several calls wait.
    """
    if isinstance(raw, str):
        with contextlib.suppress(ValueError):  # not JSON: the result is the raw text
            raw = json.loads(raw)
    candidates = [cid for cid, p in pending.items() if caller is None or p.agent == caller]
    if caller is not None and not candidates:
        raise InvalidMessageError(
            f"agent '{caller}' has no breakpoint calls waiting",
            field="kwargs.breakpoint_tool_caller",
        )
    if isinstance(raw, dict) and "call_id" in raw:
        raw = [raw]
    if isinstance(raw, list):
        results = [_match(item, i, pending) for i, item in enumerate(raw)]
        seen: set[str] = set()
        for i, (call_id, _) in enumerate(results):
            if call_id in seen:
                raise InvalidMessageError(
                    f"call_id {call_id!r} is answered twice", field=f"{_FIELD}[{i}]"
                )
            seen.add(call_id)
        return results
    if isinstance(raw, dict):
        if "content" not in raw:
            raise InvalidMessageError(
                "an object result needs 'content' (and 'call_id')", field=_FIELD
            )
        raw = raw["content"]
    if len(candidates) != 1:
        waiting = ", ".join(candidates)
        raise InvalidMessageError(
            f"{len(candidates)} breakpoint calls are waiting ({waiting}); send a list of "
            "{'call_id': ..., 'content': ...} objects",
            field=_FIELD,
        )
    return [(candidates[0], _content(raw))]


def _match(item: Any, index: int, pending: dict[str, PendingBreakpoint]) -> tuple[str, str]:
    where = f"{_FIELD}[{index}]"
    if not isinstance(item, dict) or "call_id" not in item or "content" not in item:
        raise InvalidMessageError("must be an object with 'call_id' and 'content'", field=where)
    call_id = item["call_id"]
    if call_id not in pending:
        waiting = ", ".join(pending) or "none"
        raise InvalidMessageError(f"unknown call_id {call_id!r}; waiting: {waiting}", field=where)
    return call_id, _content(item["content"])
