"""The weather example: a made-up but repeatable forecast service.

- :mod:`~mail.examples.weather_dummy.prompts` -- ``SYSPROMPT`` (here ``WEATHER_SYSPROMPT``)
- :mod:`~mail.examples.weather_dummy.actions` -- ``get_weather_forecast`` (an awaitable ``MAILAction``)
- :mod:`~mail.examples.weather_dummy.types` -- ``action_get_weather_forecast`` (same action)
- :mod:`~mail.examples.weather_dummy.agent` -- ``LiteLLMWeatherFunction``,
  ``factory_weather_dummy``, ``weather_agent_params``

Importing this package loads :mod:`mail.api` and :mod:`mail.factories` (not LiteLLM).
"""

from __future__ import annotations

from mail.examples.weather_dummy.actions import get_weather_forecast
from mail.examples.weather_dummy.agent import (
    LiteLLMWeatherFunction,
    factory_weather_dummy,
    weather_agent_params,
)
from mail.examples.weather_dummy.prompts import SYSPROMPT as WEATHER_SYSPROMPT
from mail.examples.weather_dummy.types import action_get_weather_forecast

__all__ = [
    "WEATHER_SYSPROMPT",
    "LiteLLMWeatherFunction",
    "action_get_weather_forecast",
    "get_weather_forecast",
    "factory_weather_dummy",
    "weather_agent_params",
]
