"""The weather agent of the example swarms, driven by an LLM.

``python::mail.examples.weather_dummy.agent:LiteLLMWeatherFunction`` names this class in swarms.json. It is
built on :class:`~mail.factories.action.LiteLLMActionAgentFunction`, which imports LiteLLM only when
the agent first runs.
"""

from __future__ import annotations

from typing import Any

from mail.examples._deprecated import deprecated_factory
from mail.examples._params import DEFAULT_LLM
from mail.examples.weather_dummy.prompts import SYSPROMPT
from mail.factories.action import LiteLLMActionAgentFunction

__all__ = ["LiteLLMWeatherFunction", "factory_weather_dummy"]


class LiteLLMWeatherFunction(LiteLLMActionAgentFunction):
    """An action agent that answers forecast requests with ``get_weather_forecast``.

    Takes the parameters of :class:`~mail.factories.action.LiteLLMActionAgentFunction`;
    ``llm`` defaults to ``"openai/gpt-5-mini"`` and ``system`` to
    :data:`mail.examples.weather_dummy.prompts.SYSPROMPT`.
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


#: Deprecated (the original's function): builds a :class:`LiteLLMWeatherFunction`.
factory_weather_dummy = deprecated_factory(
    LiteLLMWeatherFunction, "factory_weather_dummy", "weather"
)
