"""Breakpoint tool calls: reading the caller's results, resuming the paused task with them."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from mail.core._scheduler import Scheduler
from mail.core._system_messages import SystemMessages
from mail.core.events import EventName
from mail.core.tasks import MAILTask, PendingBreakpoint, TaskState
from mail.errors import InvalidMessageError, TaskStateError

__all__ = ["parse_breakpoint_results", "resume_breakpoints"]

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


def resume_breakpoints(
    task: MAILTask,
    kwargs: dict[str, Any],
    *,
    scheduler: Scheduler,
    histories: dict[str, list[dict[str, Any]]],
    system: SystemMessages,
) -> None:
    """Answer the task's pending breakpoint calls with the caller's results (``kwargs``
    ``breakpoint_tool_call_result`` and optionally ``breakpoint_tool_caller``).

    Each agent whose calls are all answered is prompted again; while calls of other
    agents still wait, the task pauses again and those prompts wait in its stash. Raises
    :class:`TaskStateError` when the task is not paused on breakpoint calls and
    :class:`InvalidMessageError` for missing or unmatched results, before anything changes.
    """
    if task.state is not TaskState.WAITING_BREAKPOINT or not task.pending_breakpoints:
        raise TaskStateError(
            f"task '{task.task_id}' has no breakpoint tool calls waiting for results"
        )
    if "breakpoint_tool_call_result" not in kwargs:
        raise InvalidMessageError("is required to resume from a breakpoint tool call", field=_FIELD)
    results = parse_breakpoint_results(
        kwargs["breakpoint_tool_call_result"],
        task.pending_breakpoints,
        kwargs.get("breakpoint_tool_caller"),
    )
    resolved_agents: set[str] = set()
    for call_id, content in results:
        pending = task.pending_breakpoints.pop(call_id)
        history = histories.setdefault(f"{task.task_id}::{pending.agent}", [])
        history.append(pending.call.create_response_msg(content))
        task.log.emit(
            EventName.BREAKPOINT_ACTION_COMPLETE,
            f"breakpoint action complete (caller = {pending.agent}):\n{content}",
        )
        resolved_agents.add(pending.agent)
    still_waiting = {p.agent for p in task.pending_breakpoints.values()}
    if still_waiting:
        task.open_turn()  # a turn that ends below: the task pauses again
    else:
        scheduler.reopen(task)
    for agent in sorted(resolved_agents - still_waiting):
        scheduler.put(system.action_complete_broadcast(task.task_id, agent))
    if still_waiting:
        remaining = [p.normalized for p in task.pending_breakpoints.values()]
        scheduler.finish(
            task, TaskState.WAITING_BREAKPOINT, system.breakpoint_tool_call(task.task_id, remaining)
        )
