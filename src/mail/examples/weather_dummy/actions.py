"""The weather example's action, as swarms.json imports it.

``python::mail.examples.weather_dummy.actions:get_weather_forecast`` names the
:class:`~mail.api.MAILAction` below; its function is
:func:`mail.examples.weather_dummy._forecast.get_weather_forecast`.
"""

from __future__ import annotations

from mail.api import MAILAction
from mail.examples.weather_dummy._forecast import (
    GET_WEATHER_FORECAST_DESCRIPTION,
    GET_WEATHER_FORECAST_PARAMETERS,
)
from mail.examples.weather_dummy._forecast import (
    get_weather_forecast as _get_weather_forecast,
)

__all__ = ["get_weather_forecast"]

#: ``get_weather_forecast {location: str, days_ahead: int 0..14, metric: bool}`` -> JSON
#: ``{"location", "date", "condition", "temperature", "units"}`` or an ``"Error: ..."`` string.
get_weather_forecast = MAILAction(
    name="get_weather_forecast",
    description=GET_WEATHER_FORECAST_DESCRIPTION,
    parameters=GET_WEATHER_FORECAST_PARAMETERS,
    function=_get_weather_forecast,
)
