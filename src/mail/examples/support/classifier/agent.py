"""The ``classifier`` agent of the ``support`` example swarm, driven by an LLM.

``python::mail.examples.support.classifier.agent:LiteLLMClassifierFunction`` names this class in swarms.json.
LiteLLM is imported only when the agent first runs.
"""

from __future__ import annotations

from mail.examples._agents import ExampleAgent
from mail.examples.support.classifier.prompts import SYSPROMPT
from mail.factories.action import LiteLLMActionAgentFunction

__all__ = ["LiteLLMClassifierFunction"]


class LiteLLMClassifierFunction(ExampleAgent, LiteLLMActionAgentFunction, prompt=SYSPROMPT):
    """An action agent that answers requests with ``classify_ticket``.

    Takes the parameters of
    :class:`~mail.factories.action.LiteLLMActionAgentFunction`, with ``_debug_include_mail_tools`` right
    after ``use_proxy`` as in v1.3.6; ``llm`` defaults to ``"openai/gpt-5-mini"`` and
    ``system`` to :data:`mail.examples.support.classifier.prompts.SYSPROMPT`.
    """
