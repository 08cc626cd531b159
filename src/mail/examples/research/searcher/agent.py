"""The ``searcher`` agent of the ``research`` example swarm, driven by an LLM.

``python::mail.examples.research.searcher.agent:LiteLLMSearcherFunction`` names this class in swarms.json.
LiteLLM is imported only when the agent first runs.
"""

from __future__ import annotations

from mail.examples._agents import ExampleAgent
from mail.examples.research.searcher.prompts import SYSPROMPT
from mail.factories.action import LiteLLMActionAgentFunction

__all__ = ["LiteLLMSearcherFunction"]


class LiteLLMSearcherFunction(ExampleAgent, LiteLLMActionAgentFunction, prompt=SYSPROMPT):
    """An action agent that answers requests with ``search_topic``, ``extract_facts``.

    Takes the parameters of
    :class:`~mail.factories.action.LiteLLMActionAgentFunction`, with ``_debug_include_mail_tools`` right
    after ``use_proxy`` as in v1.3.6; ``llm`` defaults to ``"openai/gpt-5-mini"`` and
    ``system`` to :data:`mail.examples.research.searcher.prompts.SYSPROMPT`.
    """
