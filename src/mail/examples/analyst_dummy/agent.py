"""The analyst agent of the example swarms, driven by an LLM.

``python::mail.examples.analyst_dummy.agent:LiteLLMAnalystFunction`` names this class in
swarms.json. LiteLLM is imported only when the agent first runs.
"""

from __future__ import annotations

from mail.examples._agents import ExampleAgent, example_factory
from mail.examples._params import analyst_agent_params
from mail.examples.analyst_dummy.prompts import SYSPROMPT
from mail.factories.base import LiteLLMAgentFunction

__all__ = ["LiteLLMAnalystFunction", "factory_analyst_dummy", "analyst_agent_params"]


class LiteLLMAnalystFunction(ExampleAgent, LiteLLMAgentFunction, prompt=SYSPROMPT):
    """An agent that reports what the figures it is sent show.

    Takes the parameters of :class:`~mail.factories.base.LiteLLMAgentFunction`, with
    ``_debug_include_mail_tools`` right after ``use_proxy`` as in v1.3.6; ``llm`` defaults
    to ``"openai/gpt-5-mini"`` and ``system`` to
    :data:`mail.examples.analyst_dummy.prompts.SYSPROMPT`.
    """


#: Deprecated (the original's function): builds a :class:`LiteLLMAnalystFunction`.
factory_analyst_dummy = example_factory(LiteLLMAnalystFunction, "analyst")
