"""How the offline agents read questions: weather words, places, "tomorrow", arithmetic."""

from __future__ import annotations

import pytest

from mail.examples.offline._text import (
    find_expression,
    find_location,
    is_weather_question,
    wants_tomorrow,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What's the weather in Tokyo?", True),
        ("Will it rain tomorrow?", True),
        ("Give me the forecast", True),
        ("Is it sunny in Rome?", True),
        ("What is the temperature outside?", True),
        ("What is 2 + 2?", False),
        ("Open the window", False),
        ("Hello", False),
    ],
)
def test_weather_questions(text: str, expected: bool) -> None:
    assert is_weather_question(text) is expected


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("What's the weather in Tokyo tomorrow?", "Tokyo"),
        ("forecast for New York City", "New York City"),
        ("weather in San Francisco, CA", "San Francisco"),
        ("Will it rain in St. Louis today?", "St. Louis"),
        ("the weather for tomorrow in Paris.", "Paris"),
        ("Temperature in Celsius in Oslo?", "Oslo"),
        ("Is it sunny at Mount Fuji and what is 2+2?", "Mount Fuji"),
        ("weather in paris", None),
        ("What's the weather like?", None),
    ],
)
def test_places(text: str, place: str | None) -> None:
    assert find_location(text) == place


def test_tomorrow() -> None:
    assert wants_tomorrow("Rain TOMORROW in Lima?")
    assert not wants_tomorrow("Rain today in Lima?")


@pytest.mark.parametrize(
    ("text", "expression"),
    [
        ("What is 12 * (3 + 4)?", "12 * (3 + 4)"),
        ("what is 2+2", "2+2"),
        ("calculate 10 - 3", "10 - 3"),
        ("What is 7 - 2?", "7 - 2"),
        ("Calculate (2+3)*4.", "(2+3)*4"),
        ("what is 2 to the power of 10", "2 ** 10"),
        ("what is 6 times 7 plus 1", "6 * 7 + 1"),
        ("12 x 4", "12 * 4"),
        ("12 \u00d7 4 \u00f7 2", "12 * 4 / 2"),
        ("3^2", "3**2"),
        ("1,000 + 2,500", "1000 + 2500"),
        ("(that is 2+2)", "2+2"),
        ("2 * pi", "2 * pi"),
        ("Please evaluate this expression: 12 * (3 + 4)", "12 * (3 + 4)"),
        ("Weather in Tokyo, and what is 2 * 21?", "2 * 21"),
        ("first 1+1 then 100 * (2 + 3)", "100 * (2 + 3)"),
        ("What's the weather for the next 2-3 days?", None),
        ("It is 5 degrees", None),
        ("version 1.3.6", None),
        ("2024-05-01", None),
        ("what is three times four", None),
        ("Hello", None),
    ],
)
def test_expressions(text: str, expression: str | None) -> None:
    assert find_expression(text) == expression
