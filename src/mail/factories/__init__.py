"""Agent-function factories: classes whose instances are MAIL agent functions.

``swarms.json`` files name them by import path, e.g.
``python::mail.factories.supervisor:LiteLLMSupervisorFunction``:

- :class:`MAILAgentFunction` (abstract base), :class:`LiteLLMAgentFunction`
  (``mail.factories.base``)
- :class:`SupervisorFunction`, :class:`LiteLLMSupervisorFunction`
  (``mail.factories.supervisor``)
- :class:`ActionAgentFunction`, :class:`LiteLLMActionAgentFunction`
  (``mail.factories.action``)

Importing this package does not import LiteLLM; the first LLM call does.
"""

from __future__ import annotations

from mail.factories.action import (
    ActionAgentFunction,
    LiteLLMActionAgentFunction,
    action_agent_factory,
)
from mail.factories.base import (
    THINKING_BUDGETS,
    AgentFunction,
    AgentOutputError,
    LiteLLMAgentFunction,
    LLMCallError,
    MAILAgentFunction,
    ReasoningEffort,
    base_agent_factory,
)
from mail.factories.supervisor import (
    LiteLLMSupervisorFunction,
    SupervisorFunction,
    supervisor_factory,
)

__all__ = [
    # the protocol every agent function meets (mail.core.agents.AgentFunction)
    "AgentFunction",
    # classes
    "MAILAgentFunction",
    "LiteLLMAgentFunction",
    "SupervisorFunction",
    "LiteLLMSupervisorFunction",
    "ActionAgentFunction",
    "LiteLLMActionAgentFunction",
    # errors
    "AgentOutputError",
    "LLMCallError",
    # parameters
    "ReasoningEffort",
    "THINKING_BUDGETS",
    # deprecated closures
    "base_agent_factory",
    "supervisor_factory",
    "action_agent_factory",
]
