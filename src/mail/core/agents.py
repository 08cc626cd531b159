"""Agents as the runtime sees them: a function plus its routing flags.

An *agent function* takes the agent's history (a list of chat messages, its newest item
last) and a ``tool_choice`` and returns ``(text, tool_calls)`` with at least one call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from mail.core.tools import MAIL_TOOL_NAMES

if TYPE_CHECKING:
    from mail.core.tools import AgentToolCall

__all__ = ["AgentOutput", "AgentFunction", "AgentCore"]

AgentOutput: TypeAlias = "tuple[str | None, list[AgentToolCall]]"


class AgentFunction(Protocol):
    """``async (messages, tool_choice) -> (text | None, [AgentToolCall, ...])``."""

    def __call__(
        self, messages: list[dict[str, Any]], tool_choice: str | dict[str, Any]
    ) -> Awaitable[AgentOutput]: ...


class AgentCore:
    """An agent of a swarm: its function, whom it may message and what it may do.

    ``comm_targets`` lists local agent names or ``agent@swarm`` addresses; ``actions``
    the names of the swarm actions this agent may call. ``tool_format`` tells the
    runtime which tool-choice shape to force when the step limit is reached;
    ``exclude_tools`` names MAIL tools this agent may not use.
    """

    __slots__ = (
        "actions",
        "can_complete_tasks",
        "comm_targets",
        "enable_entrypoint",
        "enable_interswarm",
        "exclude_tools",
        "function",
        "tool_format",
    )

    def __init__(
        self,
        function: AgentFunction | Callable[..., Awaitable[Any]],
        comm_targets: list[str],
        actions: list[str] | None = None,
        enable_entrypoint: bool = False,
        enable_interswarm: bool = False,
        can_complete_tasks: bool = False,
        tool_format: Literal["completions", "responses"] = "responses",
        exclude_tools: list[str] | None = None,
    ) -> None:
        self.function = function
        self.comm_targets = list(comm_targets)
        self.actions = list(actions or ())
        self.enable_entrypoint = enable_entrypoint
        self.enable_interswarm = enable_interswarm
        self.can_complete_tasks = can_complete_tasks
        self.tool_format = tool_format
        self.exclude_tools = frozenset(exclude_tools or ())

    def can_access_action(self, action_name: str) -> bool:
        """True when this agent lists the action ``action_name``."""
        return action_name in self.actions

    def can_access_action_or_tool(self, name: str) -> bool:
        """True for MAIL tools and for actions this agent lists."""
        return name in MAIL_TOOL_NAMES or self.can_access_action(name)

    def __repr__(self) -> str:
        return (
            f"AgentCore(comm_targets={self.comm_targets!r}, actions={self.actions!r}, "
            f"enable_entrypoint={self.enable_entrypoint}, "
            f"can_complete_tasks={self.can_complete_tasks})"
        )
