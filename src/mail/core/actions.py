"""Actions: the non-MAIL tools agents call (weather lookups, calculators, ...)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeAlias

from mail._text import clean_text
from mail.core.tools import AgentToolCall

__all__ = [
    "ActionFunction",
    "ActionOverrideFunction",
    "ActionStatus",
    "ActionCore",
]

logger = logging.getLogger("mail.actions")

#: ``async (args) -> str``; plain functions returning a string are accepted too.
ActionFunction: TypeAlias = Callable[[dict[str, Any]], "Awaitable[str] | str"]
#: ``async (call) -> str | {"content": str, ...}``; replaces every action of a run.
ActionOverrideFunction: TypeAlias = Callable[
    ["AgentToolCall"], "Awaitable[str | dict[str, Any]] | str | dict[str, Any]"
]
ActionStatus: TypeAlias = Literal["success", "error"]


class ActionCore:
    """A named action with its JSON-schema ``parameters`` and the function that runs it."""

    __slots__ = ("function", "name", "parameters")

    def __init__(self, function: ActionFunction, name: str, parameters: dict[str, Any]) -> None:
        self.function = function
        self.name = name
        self.parameters = parameters

    async def execute(
        self,
        call: AgentToolCall,
        actions: dict[str, ActionCore] | None = None,
        action_override: ActionOverrideFunction | None = None,
    ) -> tuple[ActionStatus, str]:
        """Run the action for ``call`` and return ``(status, content)``.

        ``actions`` is accepted for v1.3.6 compatibility and unused: this action runs.

        Never raises for a failing action: its exception becomes an ``"error"`` status
        whose content says what failed. With ``action_override``, the override receives
        the whole call instead and may return a string or a dict with ``content``. Text
        no store holds (a lone surrogate, a NUL character) becomes ``U+FFFD`` in the
        content.
        """
        status, content = await self._execute(call, action_override)
        return status, clean_text(content)

    async def _execute(
        self, call: AgentToolCall, action_override: ActionOverrideFunction | None
    ) -> tuple[ActionStatus, str]:
        if action_override is not None:
            return await _run_override(action_override, call)
        try:
            result = self.function(call.tool_args)
            if inspect.isawaitable(result):
                result = await result
        except Exception as e:  # noqa: BLE001  # an action's failure is reported to the agent
            logger.warning("action %s failed: %s", self.name, e)
            return "error", f"failed to execute action tool: {e}"
        return "success", result if isinstance(result, str) else str(result)

    def __repr__(self) -> str:
        return f"ActionCore(name={self.name!r})"


async def _run_override(
    override: ActionOverrideFunction, call: AgentToolCall
) -> tuple[ActionStatus, str]:
    try:
        result = override(call)
        if inspect.isawaitable(result):
            result = await result
    except Exception as e:  # noqa: BLE001  # reported to the agent like an action failure
        logger.warning("action override for %s failed: %s", call.tool_name, e)
        return "error", f"failed to execute action override tool: {e}"
    if isinstance(result, dict):
        if "content" not in result:
            return "error", "action override returned a dict without 'content'"
        return "success", str(result["content"])
    return "success", str(result)
