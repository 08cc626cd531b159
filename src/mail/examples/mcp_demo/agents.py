"""The ``mcp-demo`` swarm's scripted agent: it answers with the tools of an MCP server.

:class:`McpDemoFunction` is an agent factory for swarms.json (``python::mail.examples.
mcp_demo.agents:McpDemoFunction``), stateless and offline like the ``offline`` swarm's
agents (:mod:`mail.examples.offline.agents`): each turn is decided from its history. A
request with two integers ("add 2 and 40") calls ``<server>__add``; a request that asks to
count words ("count the words: one two") calls ``<server>__word_count`` on the text after
the first colon (or the whole request). Once the tool has answered, the agent completes
the task with the tool's result. Anything else ("hello") gets an answer saying that no
tool fits and what the agent can do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mail.examples.offline._history import Transcript
from mail.examples.offline.agents import _answer as answer
from mail.examples.offline.agents import _OfflineWorker as OfflineWorker

__all__ = ["McpDemoFunction"]

_INTEGER = re.compile(r"-?\d+")
_COUNTING = re.compile(r"\b(count|words?)\b", re.IGNORECASE)
_GREETING = re.compile(r"^\W*(hello|hi|hey|good (morning|afternoon|evening))\b", re.IGNORECASE)


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

    def _choose(self, request: str) -> tuple[str, dict[str, Any]] | None:
        """The tool and its arguments for ``request``; ``None`` when no tool fits."""
        numbers = _INTEGER.findall(request)
        counting = _COUNTING.search(request) is not None
        if len(numbers) >= 2 and not counting:  # noqa: PLR2004  # a and b
            return f"{self.server}__add", {"a": int(numbers[0]), "b": int(numbers[1])}
        if counting:
            text = request.split(":", 1)[1] if ":" in request else request
            return f"{self.server}__word_count", {"text": text.strip()}
        return None

    def no_tool(self, request: str) -> str:
        """The answer to a request no tool fits (a greeting is greeted back)."""
        greeting = _GREETING.match(request) is not None
        none = "Hello! I have no tool for a greeting" if greeting else "None of my tools fits that"
        return (
            f"{none}. I can add two integers with the MCP tool "
            f"{self.server}__add (try: add 2 and 40) or count words with "
            f"{self.server}__word_count (try: count the words: one two three)."
        )

    def decide(self, transcript: Transcript, tool_choice: str | dict[str, Any]) -> Any:
        request = next((r for r in reversed(transcript.received) if not r.from_system), None)
        if request is not None:
            # the same request always picks the same tool: the turn stays stateless
            choice = self._choose(request.message.body)
            if choice is None:
                return answer(request, self.no_tool(request.message.body))
            self.action = choice[0]
        return super().decide(transcript, tool_choice)

    def arguments(self, request: str) -> dict[str, Any]:
        choice = self._choose(request)
        return choice[1] if choice is not None else {}

    def describe(self, ok: bool, result: Any, args: dict[str, Any]) -> str:
        if ok:
            return f"The MCP tool {self.action} answered: {result}"
        error = str(result).removeprefix("Error: ")
        return f"Sorry, the MCP tool {self.action} failed: {error}"
