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
  questions without an LLM (``agents:OfflineSupervisorFunction``, ...), and
  ``team:OfflineCoordinatorFunction``, the entry agent of the offline team swarms
- :mod:`mail.examples.support`, :mod:`mail.examples.data_analysis` and
  :mod:`mail.examples.research` -- the original's team swarms: one subpackage per agent
  (``agent``, ``prompts``, ``actions``) and ``offline`` (their scripted agents)

The ``*_agent_params`` dicts are ready-made ``agent_params`` for the LLM agents (and
``LiteLLM{Weather,Math,Consultant,Analyst}Function`` the agent classes and
``factory_{weather,math,consultant,analyst}_dummy`` the original's deprecated functions
that build them, both loaded on first use), and
:func:`example_agent_template_args` gives ``MAILAgentTemplate.from_example`` what it
needs to build one of them (``supervisor``, ``weather``, ``math``, ``consultant``,
``analyst``). Importing
this package (or any example module) does not import LiteLLM.
"""

from __future__ import annotations

import importlib
from typing import Any

from mail.examples._params import (
    EXAMPLE_AGENTS,
    analyst_agent_params,
    consultant_agent_params,
    example_agent_template_args,
    math_agent_params,
    supervisor_agent_params,
    weather_agent_params,
)

__all__ = [
    "supervisor_agent_params",
    "weather_agent_params",
    "math_agent_params",
    "consultant_agent_params",
    "analyst_agent_params",
    "EXAMPLE_AGENTS",
    "example_agent_template_args",
    "LiteLLMWeatherFunction",
    "LiteLLMMathFunction",
    "LiteLLMConsultantFunction",
    "LiteLLMAnalystFunction",
    "factory_weather_dummy",
    "factory_math_dummy",
    "factory_consultant_dummy",
    "factory_analyst_dummy",
]

_KINDS = {"weather": "Weather", "math": "Math", "consultant": "Consultant", "analyst": "Analyst"}
# name -> module: the agent classes and the deprecated factories load mail.factories, so
# they are imported only when asked for and importing this package stays light
_LAZY = {
    name: f"mail.examples.{kind}_dummy.agent"
    for kind, title in _KINDS.items()
    for name in (f"factory_{kind}_dummy", f"LiteLLM{title}Function")
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
