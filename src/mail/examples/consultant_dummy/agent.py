"""The consultant agent of the example swarms, driven by an LLM.

``python::mail.examples.consultant_dummy.agent:LiteLLMConsultantFunction`` names this class in
swarms.json. LiteLLM is imported only when the agent first runs.
"""

from __future__ import annotations

from mail.examples._agents import ExampleAgent, example_factory
from mail.examples._params import consultant_agent_params
from mail.examples.consultant_dummy.prompts import SYSPROMPT
from mail.factories.base import LiteLLMAgentFunction

__all__ = ["LiteLLMConsultantFunction", "factory_consultant_dummy", "consultant_agent_params"]


class LiteLLMConsultantFunction(ExampleAgent, LiteLLMAgentFunction, prompt=SYSPROMPT):
    """An agent that answers open questions with a recommendation and its reasons.

    Takes the parameters of :class:`~mail.factories.base.LiteLLMAgentFunction`, with
    ``_debug_include_mail_tools`` right after ``use_proxy`` as in v1.3.6; ``llm`` defaults
    to ``"openai/gpt-5-mini"`` and ``system`` to
    :data:`mail.examples.consultant_dummy.prompts.SYSPROMPT`.
    """


#: Deprecated (the original's function): builds a :class:`LiteLLMConsultantFunction`.
factory_consultant_dummy = example_factory(LiteLLMConsultantFunction, "consultant")
