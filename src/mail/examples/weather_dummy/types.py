"""The weather example's action under its older name (``action_get_weather_forecast``)."""

from __future__ import annotations

from mail.examples.weather_dummy.actions import get_weather_forecast

__all__ = ["action_get_weather_forecast"]

#: The same :class:`~mail.api.MAILAction` as :data:`~mail.examples.weather_dummy.actions.get_weather_forecast`.
action_get_weather_forecast = get_weather_forecast
