"""Supervisor agent functions: agents that may interrupt, broadcast and complete tasks.

A supervisor is offered, besides the tools of any agent, ``send_interrupt`` and
``send_broadcast`` (when it has comm targets), ``send_interswarm_broadcast`` and
``discover_swarms`` (when interswarm is enabled) and always ``task_complete``
(CONTRACT 5.4); ``can_complete_tasks`` is forced to True.
"""

from __future__ import annotations

from typing import ClassVar

from mail.factories._signature import REQUIRED, V1_SUBCLASS_ORDER, deprecated_factory, rebind
from mail.factories.base import LiteLLMAgentFunction, MAILAgentFunction

__all__ = ["SupervisorFunction", "LiteLLMSupervisorFunction", "supervisor_factory"]


@rebind(move={"can_complete_tasks": "tools"}, can_complete_tasks=True)
class SupervisorFunction(MAILAgentFunction):
    """Abstract supervisor: :class:`MAILAgentFunction` with supervisor tools.

    Takes the parameters of :class:`MAILAgentFunction` with ``can_complete_tasks`` (default
    True) right after ``tools``, as v1.3.6 did; it is accepted for compatibility and always
    True.
    """

    supervisor_tools: ClassVar[bool] = True
    completes_tasks: ClassVar[bool | None] = True


@rebind(move=V1_SUBCLASS_ORDER, can_complete_tasks=True)
class LiteLLMSupervisorFunction(LiteLLMAgentFunction, SupervisorFunction):
    """A LiteLLM-backed supervisor.

    Takes the parameters of :class:`LiteLLMAgentFunction`, with
    ``_debug_include_mail_tools`` right after ``use_proxy`` as v1.3.6 did.
    ``can_complete_tasks`` is always True; ``user_token`` is used like any LiteLLM agent's
    (the original dropped it, so proxy calls carried an empty bearer).
    """


#: Deprecated: ``supervisor_factory(comm_targets, tools, user_token, llm, system,
#: name="supervisor", enable_entrypoint=True, ...)`` warns ``DeprecationWarning`` and returns
#: a :class:`LiteLLMSupervisorFunction`.
supervisor_factory = deprecated_factory(
    LiteLLMSupervisorFunction,
    "supervisor_factory",
    extra=("stream_tokens", "print_llm_streams", "default_tool_choice"),
    name="supervisor",
    enable_entrypoint=True,
    user_token=REQUIRED,
    system=REQUIRED,
)
