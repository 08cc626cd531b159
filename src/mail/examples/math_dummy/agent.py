"""The math agent of the example swarms, driven by an LLM.

``python::mail.examples.math_dummy.agent:LiteLLMMathFunction`` names this class in swarms.json. It is
built on :class:`~mail.factories.base.LiteLLMAgentFunction`, which imports LiteLLM only when
the agent first runs.
"""

from __future__ import annotations

from typing import Any

from mail.examples._deprecated import deprecated_factory
from mail.examples._params import DEFAULT_LLM
from mail.examples.math_dummy.prompts import SYSPROMPT
from mail.factories.base import LiteLLMAgentFunction

__all__ = ["LiteLLMMathFunction", "factory_math_dummy"]


class LiteLLMMathFunction(LiteLLMAgentFunction):
    """An agent that answers arithmetic requests with ``calculate_expression``.

    Takes the parameters of :class:`~mail.factories.base.LiteLLMAgentFunction`;
    ``llm`` defaults to ``"openai/gpt-5-mini"`` and ``system`` to
    :data:`mail.examples.math_dummy.prompts.SYSPROMPT`.
    """

    def __init__(
        self,
        name: str,
        comm_targets: list[str],
        tools: list[dict[str, Any]],
        llm: str = DEFAULT_LLM,
        system: str = SYSPROMPT,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            name=name, comm_targets=comm_targets, tools=tools, llm=llm, system=system, **kwargs
        )


#: Deprecated (the original's function): builds a :class:`LiteLLMMathFunction`.
factory_math_dummy = deprecated_factory(LiteLLMMathFunction, "factory_math_dummy", "math")
