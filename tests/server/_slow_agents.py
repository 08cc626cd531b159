"""A slow entrypoint for the cluster tests: the offline supervisor, ``delay`` seconds
(``agent_params``) per turn, as an LLM would take. Questions that are neither weather nor
arithmetic it answers itself, with no action: such a turn can be run again."""

from __future__ import annotations

import asyncio
from typing import Any

from mail.core.tools import AgentToolCall
from mail.examples.offline.agents import OfflineSupervisorFunction


class SlowSupervisor(OfflineSupervisorFunction):
    def __init__(self, *args: Any, delay: float = 1.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.delay = float(delay)

    async def __call__(
        self, messages: list[dict[str, Any]], tool_choice: str | dict[str, Any] = "required"
    ) -> tuple[str | None, list[AgentToolCall]]:
        await asyncio.sleep(self.delay)
        return await super().__call__(messages, tool_choice)
