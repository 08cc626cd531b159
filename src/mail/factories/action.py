"""Action agent functions: agents that work through their action tools and never complete
tasks.

Their ``tools`` may be specs in either tool format or pydantic model classes; all are
normalized to the agent's ``tool_format``. An action agent without tools is valid: it is
offered the MAIL tools only (the original raised ``IndexError``).
"""

from __future__ import annotations

from typing import ClassVar

from mail.factories._signature import REQUIRED, V1_SUBCLASS_ORDER, deprecated_factory, rebind
from mail.factories.base import LiteLLMAgentFunction, MAILAgentFunction

__all__ = ["ActionAgentFunction", "LiteLLMActionAgentFunction", "action_agent_factory"]


class ActionAgentFunction(MAILAgentFunction):
    """Abstract action agent: :class:`MAILAgentFunction` that cannot complete tasks.

    ``can_complete_tasks`` is accepted for compatibility and always False.
    """

    completes_tasks: ClassVar[bool | None] = False


@rebind(move=V1_SUBCLASS_ORDER)
class LiteLLMActionAgentFunction(LiteLLMAgentFunction, ActionAgentFunction):
    """A LiteLLM-backed action agent.

    Takes the parameters of :class:`LiteLLMAgentFunction`, with
    ``_debug_include_mail_tools`` right after ``use_proxy`` as v1.3.6 did.
    ``can_complete_tasks`` is always False.
    """


#: Deprecated: ``action_agent_factory(comm_targets, tools, user_token, llm, system,
#: name="action", ...)`` warns ``DeprecationWarning`` and returns a
#: :class:`LiteLLMActionAgentFunction`.
action_agent_factory = deprecated_factory(
    LiteLLMActionAgentFunction,
    "action_agent_factory",
    extra=("_debug_include_mail_tools", "print_llm_streams"),
    name="action",
    user_token=REQUIRED,
    system=REQUIRED,
)
