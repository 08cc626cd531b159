"""OpenAI agent functions on the ``openai`` SDK (extra ``mail-swarms[openai]``).

Importing this package does not import ``openai``; an agent's first call does. See
:mod:`mail.stdlib.openai.agents` and docs/stdlib.md.
"""

from __future__ import annotations

from mail.stdlib.openai.agents import (
    OpenAIChatCompletionsAgentFunction,
    OpenAIChatCompletionsSupervisorFunction,
    OpenAIResponsesAgentFunction,
    OpenAIResponsesSupervisorFunction,
)

__all__ = [
    "OpenAIChatCompletionsAgentFunction",
    "OpenAIChatCompletionsSupervisorFunction",
    "OpenAIResponsesAgentFunction",
    "OpenAIResponsesSupervisorFunction",
]
