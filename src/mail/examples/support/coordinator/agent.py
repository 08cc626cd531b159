"""The ``coordinator`` agent of the ``support`` example swarm, driven by an LLM.

``python::mail.examples.support.coordinator.agent:LiteLLMCoordinatorFunction`` names this class in swarms.json.
LiteLLM is imported only when the agent first runs.
"""

from __future__ import annotations

from mail.examples._agents import ExampleAgent
from mail.examples.support.coordinator.prompts import SYSPROMPT
from mail.factories.supervisor import LiteLLMSupervisorFunction

__all__ = ["LiteLLMCoordinatorFunction"]


class LiteLLMCoordinatorFunction(ExampleAgent, LiteLLMSupervisorFunction, prompt=SYSPROMPT):
    """The entry agent: it delegates to faq, classifier, sentiment and ends tasks with
    ``task_complete``. Unlike v1.3.6 (a plain agent class that was never offered
    ``task_complete``, so its swarm could not finish a task), it is a supervisor.

    Takes the parameters of
    :class:`~mail.factories.supervisor.LiteLLMSupervisorFunction`, with ``_debug_include_mail_tools`` right
    after ``use_proxy`` as in v1.3.6; ``llm`` defaults to ``"openai/gpt-5-mini"`` and
    ``system`` to :data:`mail.examples.support.coordinator.prompts.SYSPROMPT`.
    """
