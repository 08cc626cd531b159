"""OpenAI agent functions on the ``openai`` SDK (extra ``mail-swarms[openai]``): re-exports
the classes of :mod:`mail.factories.openai`.

Importing this package does not import ``openai``; an agent's first call does. See
docs/stdlib.md.
"""

from __future__ import annotations

from mail.factories.openai import (
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
