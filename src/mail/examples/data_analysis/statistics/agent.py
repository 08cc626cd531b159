"""The ``statistics`` agent of the ``data-analysis`` example swarm, driven by an LLM.

``python::mail.examples.data_analysis.statistics.agent:LiteLLMStatisticsFunction`` names this class in swarms.json.
LiteLLM is imported only when the agent first runs.
"""

from __future__ import annotations

from mail.examples._agents import ExampleAgent
from mail.examples.data_analysis.statistics.prompts import SYSPROMPT
from mail.factories.action import LiteLLMActionAgentFunction

__all__ = ["LiteLLMStatisticsFunction"]


class LiteLLMStatisticsFunction(ExampleAgent, LiteLLMActionAgentFunction, prompt=SYSPROMPT):
    """An action agent that answers requests with ``calculate_statistics``, ``run_correlation``.

    Takes the parameters of
    :class:`~mail.factories.action.LiteLLMActionAgentFunction`, with ``_debug_include_mail_tools`` right
    after ``use_proxy`` as in v1.3.6; ``llm`` defaults to ``"openai/gpt-5-mini"`` and
    ``system`` to :data:`mail.examples.data_analysis.statistics.prompts.SYSPROMPT`.
    """
