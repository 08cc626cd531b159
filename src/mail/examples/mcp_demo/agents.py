"""The ``mcp-demo`` swarm's scripted agent: it answers with the tools of an MCP server.

:class:`McpDemoFunction` is an agent factory for swarms.json (``python::mail.examples.
mcp_demo.agents:McpDemoFunction``), stateless and offline like the ``offline`` swarm's
agents (:mod:`mail.examples.offline.agents`): each turn is decided from its history. A
request with two integers ("add 2 and 40") calls ``<server>__add``; any other request
calls ``<server>__word_count`` on the text after the first colon (or the whole request).
Once the tool has answered, the agent completes the task with the tool's result.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mail.examples.offline._history import Transcript
from mail.examples.offline.agents import _OfflineWorker as OfflineWorker

__all__ = ["McpDemoFunction"]

_INTEGER = re.compile(r"-?\d+")


class McpDemoFunction(OfflineWorker):
    """The demo's entry agent. Takes the factory parameters every agent receives (see
    :class:`~mail.examples.offline.agents.OfflineSupervisorFunction`) and ``server``, the
    name of the MCP server whose tools it calls (default ``"calc"``)."""

    def __init__(
        self,
        name: str,
        comm_targets: Sequence[str],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        server: str = "calc",
        **kwargs: Any,
    ) -> None:
        super().__init__(name, comm_targets, tools, action=f"{server}__add", **kwargs)
        self.server = server

    def _choose(self, request: str) -> tuple[str, dict[str, Any]]:
        numbers = _INTEGER.findall(request)
        if len(numbers) >= 2 and "word" not in request.lower():  # noqa: PLR2004  # a and b
            return f"{self.server}__add", {"a": int(numbers[0]), "b": int(numbers[1])}
        text = request.split(":", 1)[1] if ":" in request else request
        return f"{self.server}__word_count", {"text": text.strip()}

    def decide(self, transcript: Transcript, tool_choice: str | dict[str, Any]) -> Any:
        request = next((r for r in reversed(transcript.received) if not r.from_system), None)
        if request is not None:
            # the same request always picks the same tool: the turn stays stateless
            self.action = self._choose(request.message.body)[0]
        return super().decide(transcript, tool_choice)

    def arguments(self, request: str) -> dict[str, Any]:
        return self._choose(request)[1]

    def describe(self, ok: bool, result: Any, args: dict[str, Any]) -> str:
        if ok:
            return f"The MCP tool {self.action} answered: {result}"
        error = str(result).removeprefix("Error: ")
        return f"Sorry, the MCP tool {self.action} failed: {error}"
