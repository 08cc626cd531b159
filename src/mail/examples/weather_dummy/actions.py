"""The weather example's action, as swarms.json imports it.

``python::mail.examples.weather_dummy.actions:get_weather_forecast`` names the
:class:`~mail.examples._actionkit.ExampleAction` below (a :class:`~mail.api.MAILAction`
that can also be awaited like the original's function: ``await
get_weather_forecast({"location": "Lima", "days_ahead": 0, "metric": True})``); its
function is :func:`mail.examples.weather_dummy._forecast.get_weather_forecast`.
"""

from __future__ import annotations

from mail.examples._actionkit import ExampleAction
from mail.examples.weather_dummy._forecast import (
    GET_WEATHER_FORECAST_DESCRIPTION,
    GET_WEATHER_FORECAST_PARAMETERS,
)
from mail.examples.weather_dummy._forecast import (
    get_weather_forecast as _get_weather_forecast,
)

__all__ = ["WEATHER_FORECAST_PARAMETERS", "get_weather_forecast"]

#: The JSON Schema of the action's arguments (v1.3.6's name).
WEATHER_FORECAST_PARAMETERS = GET_WEATHER_FORECAST_PARAMETERS

#: ``get_weather_forecast {location: str, days_ahead: int 0..14, metric: bool}`` -> JSON
#: ``{"location", "date", "condition", "temperature", "units"}`` or an ``"Error: ..."`` string.
get_weather_forecast = ExampleAction(
    name="get_weather_forecast",
    description=GET_WEATHER_FORECAST_DESCRIPTION,
    parameters=WEATHER_FORECAST_PARAMETERS,
    function=_get_weather_forecast,
)
