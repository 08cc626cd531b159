"""The weather example's action: its output, its determinism and its argument errors."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from typing import Any

import pytest

from mail.examples.weather_dummy._forecast import (
    CONDITIONS,
    GET_WEATHER_FORECAST_PARAMETERS,
    forecast,
    get_weather_forecast,
)

DAY = date(2025, 3, 14)


async def test_forecast_has_the_documented_keys_and_types() -> None:
    before = datetime.now(UTC).date()
    raw = await get_weather_forecast({"location": "Tokyo", "days_ahead": 1, "metric": True})
    after = datetime.now(UTC).date()
    result = json.loads(raw)
    assert set(result) == {"location", "date", "condition", "temperature", "units"}
    assert result["location"] == "Tokyo"
    assert result["condition"] in CONDITIONS
    assert isinstance(result["temperature"], int)
    assert result["units"] == "C"
    if before == after:  # not across midnight (UTC)
        assert result == forecast("Tokyo", 1, True, before)
        assert result["date"] == date.fromordinal(before.toordinal() + 1).isoformat()


async def test_the_same_question_gets_the_same_answer() -> None:
    args = {"location": "Paris", "days_ahead": 0, "metric": False}
    assert await get_weather_forecast(args) == await get_weather_forecast(dict(args))


def test_forecast_depends_on_location_days_and_day_of_month_only() -> None:
    base = forecast("Oslo", 2, True, DAY)
    assert forecast("Oslo", 2, True, DAY) == base
    assert forecast("  oslo ", 2, True, DAY) | {"location": "Oslo"} == base  # case and spaces
    assert (
        forecast("Oslo", 2, True, date(2024, 7, 14)) | {"date": base["date"]} == base
    )  # same day of month
    others = [forecast("Oslo", 2, True, date(2025, 3, d)) for d in range(1, 29)]
    assert len({(f["condition"], f["temperature"]) for f in others}) > 1
    assert base["date"] == "2025-03-16"


def test_fahrenheit_is_the_same_temperature_converted() -> None:
    for place in ("Oslo", "Lima", "Cairo", "Perth", "Quito", "Reykjavik"):
        celsius = forecast(place, 0, True, DAY)
        fahrenheit = forecast(place, 0, False, DAY)
        assert fahrenheit["units"] == "F"
        assert fahrenheit["condition"] == celsius["condition"]
        assert fahrenheit["temperature"] == round(celsius["temperature"] * 9 / 5 + 32)


def test_values_stay_in_range_and_cover_every_condition() -> None:
    results = [forecast(f"place {i}", i % 15, True, DAY) for i in range(3000)]
    temperatures = {r["temperature"] for r in results}
    assert min(temperatures) == -15
    assert max(temperatures) == 35
    assert {r["condition"] for r in results} == set(CONDITIONS)
    fahrenheit = {forecast(f"place {i}", 0, False, DAY)["temperature"] for i in range(3000)}
    assert min(fahrenheit) >= 5
    assert max(fahrenheit) <= 95


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"days_ahead": 0, "metric": True}, "Error: 'location' must be a non-empty string"),
        (
            {"location": "", "days_ahead": 0, "metric": True},
            "Error: 'location' must be a non-empty string",
        ),
        (
            {"location": "  ", "days_ahead": 0, "metric": True},
            "Error: 'location' must be a non-empty string",
        ),
        (
            {"location": 42, "days_ahead": 0, "metric": True},
            "Error: 'location' must be a non-empty string",
        ),
        (
            {"location": "Rome", "metric": True},
            "Error: 'days_ahead' must be an integer between 0 and 14",
        ),
        (
            {"location": "Rome", "days_ahead": "1", "metric": True},
            "Error: 'days_ahead' must be an integer between 0 and 14",
        ),
        (
            {"location": "Rome", "days_ahead": True, "metric": True},
            "Error: 'days_ahead' must be an integer between 0 and 14",
        ),
        (
            {"location": "Rome", "days_ahead": 1.0, "metric": True},
            "Error: 'days_ahead' must be an integer between 0 and 14",
        ),
        (
            {"location": "Rome", "days_ahead": -1, "metric": True},
            "Error: 'days_ahead' must be an integer between 0 and 14",
        ),
        (
            {"location": "Rome", "days_ahead": 15, "metric": True},
            "Error: 'days_ahead' must be an integer between 0 and 14",
        ),
        ({"location": "Rome", "days_ahead": 0}, "Error: 'metric' must be a boolean"),
        (
            {"location": "Rome", "days_ahead": 0, "metric": "yes"},
            "Error: 'metric' must be a boolean",
        ),
        ({"location": "Rome", "days_ahead": 0, "metric": 1}, "Error: 'metric' must be a boolean"),
    ],
)
async def test_argument_errors_are_returned_as_text(args: dict[str, Any], error: str) -> None:
    assert await get_weather_forecast(args) == error


def test_parameters_schema_requires_every_argument() -> None:
    schema = GET_WEATHER_FORECAST_PARAMETERS
    assert schema["type"] == "object"
    assert schema["required"] == ["location", "days_ahead", "metric"]
    assert schema["properties"]["days_ahead"] | {"description": ""} == {
        "type": "integer",
        "minimum": 0,
        "maximum": 14,
        "description": "",
    }
