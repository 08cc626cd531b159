"""v1.3.6 import path: re-exports the OpenAI agent functions of :mod:`mail.factories.openai`
(``python::mail.stdlib.openai.agents:OpenAIResponsesSupervisorFunction`` keeps working)."""

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
