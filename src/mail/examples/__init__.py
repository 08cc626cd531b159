"""Example agents, prompts and actions, and an offline demo swarm.

The modules below are the ``python::`` paths that swarms.json files refer to:

- :mod:`mail.examples.supervisor.prompts` -- ``SYSPROMPT``, ``SYSPROMPT_NO_INTERSWARM_MASTER``
- :mod:`mail.examples.weather_dummy` -- ``prompts:SYSPROMPT``,
  ``actions:get_weather_forecast`` (alias ``types:action_get_weather_forecast``),
  ``agent:LiteLLMWeatherFunction``
- :mod:`mail.examples.math_dummy` -- ``prompts:SYSPROMPT``,
  ``actions:calculate_expression`` (alias ``types:action_calculate_expression``),
  ``agent:LiteLLMMathFunction``
- :mod:`mail.examples.consultant_dummy` and :mod:`mail.examples.analyst_dummy` --
  ``prompts:SYSPROMPT``, ``agent:LiteLLMConsultantFunction`` / ``agent:LiteLLMAnalystFunction``
- :mod:`mail.examples.offline` -- scripted agents that answer weather and arithmetic
  questions without an LLM (``agents:OfflineSupervisorFunction``, ...)

The ``*_agent_params`` dicts are ready-made ``agent_params`` for the LLM agents, and
:func:`example_agent_template_args` gives ``MAILAgentTemplate.from_example`` what it
needs to build one of them (``supervisor``, ``weather``, ``math``, ``consultant``,
``analyst``). Importing
this package (or any example module) does not import LiteLLM.
"""

from __future__ import annotations

from mail.examples._params import EXAMPLE_AGENTS, agent_params, example_agent_template_args

__all__ = [
    "supervisor_agent_params",
    "weather_agent_params",
    "math_agent_params",
    "consultant_agent_params",
    "analyst_agent_params",
    "EXAMPLE_AGENTS",
    "example_agent_template_args",
]

#: ``agent_params`` of the example supervisor.
supervisor_agent_params = agent_params("supervisor")
#: ``agent_params`` of the example weather agent.
weather_agent_params = agent_params("weather_dummy")
#: ``agent_params`` of the example math agent.
math_agent_params = agent_params("math_dummy")
#: ``agent_params`` of the example consultant agent.
consultant_agent_params = agent_params("consultant_dummy")
#: ``agent_params`` of the example analyst agent.
analyst_agent_params = agent_params("analyst_dummy")
