"""Agent-function factories: classes whose instances are MAIL agent functions.

``swarms.json`` files name them by import path, e.g.
``python::mail.factories.supervisor:LiteLLMSupervisorFunction``:

- :class:`MAILAgentFunction` (abstract base), :class:`LiteLLMAgentFunction`
  (``mail.factories.base``)
- :class:`SupervisorFunction`, :class:`LiteLLMSupervisorFunction`
  (``mail.factories.supervisor``)
- :class:`ActionAgentFunction`, :class:`LiteLLMActionAgentFunction`
  (``mail.factories.action``)

Agent functions on a provider's own SDK are in :mod:`mail.factories.openai` and
:mod:`mail.factories.anthropic`. For classes built on these (the examples):
:func:`rebind` and :func:`deprecated_factory` derive v1.3.6's signatures, and
:func:`import_litellm` imports LiteLLM configured as a library.

Importing this package does not import LiteLLM; the first LLM call does.
"""

from __future__ import annotations

from mail.factories._litellm import import_litellm
from mail.factories._signature import V1_SUBCLASS_ORDER, deprecated_factory, rebind
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
    # for classes built on these
    "V1_SUBCLASS_ORDER",
    "deprecated_factory",
    "import_litellm",
    "rebind",
]
