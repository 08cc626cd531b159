"""The weather example: a made-up but repeatable forecast service.

- :mod:`~mail.examples.weather_dummy.prompts` -- ``SYSPROMPT``
- :mod:`~mail.examples.weather_dummy.actions` -- ``get_weather_forecast`` (a ``MAILAction``)
- :mod:`~mail.examples.weather_dummy.types` -- ``action_get_weather_forecast`` (same action)
- :mod:`~mail.examples.weather_dummy.agent` -- ``LiteLLMWeatherFunction``
"""

from __future__ import annotations

__all__: list[str] = []
