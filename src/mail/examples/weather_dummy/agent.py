"""The weather agent of the example swarms, driven by an LLM.

``python::mail.examples.weather_dummy.agent:LiteLLMWeatherFunction`` names this class in
swarms.json. LiteLLM is imported only when the agent first runs.
"""

from __future__ import annotations

from mail.examples._agents import ExampleAgent, example_factory
from mail.examples._params import weather_agent_params
from mail.examples.weather_dummy.prompts import SYSPROMPT
from mail.factories.action import LiteLLMActionAgentFunction

__all__ = ["LiteLLMWeatherFunction", "factory_weather_dummy", "weather_agent_params"]


class LiteLLMWeatherFunction(ExampleAgent, LiteLLMActionAgentFunction, prompt=SYSPROMPT):
    """An action agent that answers forecast requests with ``get_weather_forecast``.

    Takes the parameters of :class:`~mail.factories.action.LiteLLMActionAgentFunction`,
    with ``_debug_include_mail_tools`` right after ``use_proxy`` as in v1.3.6; ``llm``
    defaults to ``"openai/gpt-5-mini"`` and ``system`` to
    :data:`mail.examples.weather_dummy.prompts.SYSPROMPT`.
    """


#: Deprecated (the original's function): builds a :class:`LiteLLMWeatherFunction`.
factory_weather_dummy = example_factory(LiteLLMWeatherFunction, "weather")
