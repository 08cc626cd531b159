"""The weather example's forecast: made up, but the same answer for the same question.

A forecast is derived from a SHA-256 digest of the location (case and surrounding
spaces ignored), the number of days ahead and the current day of the month (UTC), so it
is stable within a day and needs no network.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, date, datetime, timedelta
from typing import Any

__all__ = [
    "CONDITIONS",
    "GET_WEATHER_FORECAST_DESCRIPTION",
    "GET_WEATHER_FORECAST_PARAMETERS",
    "MAX_DAYS_AHEAD",
    "forecast",
    "get_weather_forecast",
]

#: Every condition a forecast may report.
CONDITIONS: tuple[str, ...] = (
    "clear",
    "mostly clear",
    "partly cloudy",
    "mostly cloudy",
    "overcast",
    "light precipitation",
    "moderate precipitation",
    "heavy precipitation",
)
#: The furthest day a forecast may be asked for.
MAX_DAYS_AHEAD = 14
_MIN_CELSIUS, _MAX_CELSIUS = -15, 35

ERROR_LOCATION = "Error: 'location' must be a non-empty string"
ERROR_DAYS_AHEAD = f"Error: 'days_ahead' must be an integer between 0 and {MAX_DAYS_AHEAD}"
ERROR_METRIC = "Error: 'metric' must be a boolean"

GET_WEATHER_FORECAST_DESCRIPTION = (
    "Get the weather forecast for a location: the date, the sky condition and the "
    "temperature, in Celsius or Fahrenheit."
)

GET_WEATHER_FORECAST_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "location": {
            "type": "string",
            "description": "The place to forecast, for example 'Tokyo' or 'San Francisco'.",
        },
        "days_ahead": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_DAYS_AHEAD,
            "description": "How many days from today: 0 for today, 1 for tomorrow.",
        },
        "metric": {
            "type": "boolean",
            "description": "True for degrees Celsius, false for degrees Fahrenheit.",
        },
    },
    "required": ["location", "days_ahead", "metric"],
    "additionalProperties": False,
}


def forecast(location: str, days_ahead: int, metric: bool, today: date) -> dict[str, Any]:
    """Return the forecast for ``location``, ``days_ahead`` days after ``today``.

    The result has the keys ``location``, ``date`` (ISO), ``condition`` (one of
    :data:`CONDITIONS`), ``temperature`` (int: -15..35 in Celsius, 5..95 in Fahrenheit)
    and ``units`` (``"C"`` or ``"F"``).
    """
    place = location.strip()
    seed = f"{place.casefold()}|{days_ahead}|{today.day}".encode()
    digest = hashlib.sha256(seed).digest()
    condition = CONDITIONS[digest[0] % len(CONDITIONS)]
    span = _MAX_CELSIUS - _MIN_CELSIUS + 1
    celsius = _MIN_CELSIUS + int.from_bytes(digest[1:3], "big") % span
    return {
        "location": place,
        "date": (today + timedelta(days=days_ahead)).isoformat(),
        "condition": condition,
        "temperature": celsius if metric else round(celsius * 9 / 5 + 32),
        "units": "C" if metric else "F",
    }


async def get_weather_forecast(args: dict[str, Any]) -> str:
    """Forecast the weather; the action behind ``get_weather_forecast``.

    ``args``: ``location`` (non-empty str), ``days_ahead`` (int 0..14), ``metric``
    (bool), all required. Returns the JSON of :func:`forecast` for today's date (UTC),
    or ``"Error: 'location' must be a non-empty string"``, ``"Error: 'days_ahead' must
    be an integer between 0 and 14"`` or ``"Error: 'metric' must be a boolean"``.
    Never raises.
    """
    location = args.get("location")
    days_ahead = args.get("days_ahead")
    metric = args.get("metric")
    if not isinstance(location, str) or not location.strip():
        return ERROR_LOCATION
    if (
        isinstance(days_ahead, bool)
        or not isinstance(days_ahead, int)
        or not 0 <= days_ahead <= MAX_DAYS_AHEAD
    ):
        return ERROR_DAYS_AHEAD
    if not isinstance(metric, bool):
        return ERROR_METRIC
    today = datetime.now(UTC).date()
    return json.dumps(forecast(location, days_ahead, metric, today))
