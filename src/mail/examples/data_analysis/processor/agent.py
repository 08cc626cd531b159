"""The ``processor`` agent of the ``data-analysis`` example swarm, driven by an LLM.

``python::mail.examples.data_analysis.processor.agent:LiteLLMProcessorFunction`` names this class in swarms.json.
LiteLLM is imported only when the agent first runs.
"""

from __future__ import annotations

from mail.examples._agents import ExampleAgent
from mail.examples.data_analysis.processor.prompts import SYSPROMPT
from mail.factories.action import LiteLLMActionAgentFunction

__all__ = ["LiteLLMProcessorFunction"]


class LiteLLMProcessorFunction(ExampleAgent, LiteLLMActionAgentFunction, prompt=SYSPROMPT):
    """An action agent that answers requests with ``generate_sample_data``, ``parse_csv``.

    Takes the parameters of
    :class:`~mail.factories.action.LiteLLMActionAgentFunction`, with ``_debug_include_mail_tools`` right
    after ``use_proxy`` as in v1.3.6; ``llm`` defaults to ``"openai/gpt-5-mini"`` and
    ``system`` to :data:`mail.examples.data_analysis.processor.prompts.SYSPROMPT`.
    """
