"""The math agent of the example swarms, driven by an LLM.

``python::mail.examples.math_dummy.agent:LiteLLMMathFunction`` names this class in swarms.json.
LiteLLM is imported only when the agent first runs.
"""

from __future__ import annotations

from mail.examples._agents import ExampleAgent, example_factory
from mail.examples._params import math_agent_params
from mail.examples.math_dummy.prompts import SYSPROMPT
from mail.factories.base import LiteLLMAgentFunction

__all__ = ["LiteLLMMathFunction", "factory_math_dummy", "math_agent_params"]


class LiteLLMMathFunction(ExampleAgent, LiteLLMAgentFunction, prompt=SYSPROMPT):
    """An agent that answers arithmetic requests with ``calculate_expression``.

    Takes the parameters of :class:`~mail.factories.base.LiteLLMAgentFunction`, with
    ``_debug_include_mail_tools`` right after ``use_proxy`` as in v1.3.6; ``llm`` defaults
    to ``"openai/gpt-5-mini"`` and ``system`` to
    :data:`mail.examples.math_dummy.prompts.SYSPROMPT`.
    """


#: Deprecated (the original's function): builds a :class:`LiteLLMMathFunction`.
factory_math_dummy = example_factory(LiteLLMMathFunction, "math")
