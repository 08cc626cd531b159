"""The math example's action: exact results, formatting, every error string, and safety."""

from __future__ import annotations

import json
import time
from decimal import Decimal
from typing import Any

import pytest

from mail.examples.math_dummy._calculator import (
    CALCULATE_EXPRESSION_PARAMETERS,
    CalculationError,
    calculate_expression,
    evaluate,
)

SYNTAX = "Error: invalid syntax"
DIV_ZERO = "Error: division by zero"
EXPRESSION = "Error: 'expression' must be a non-empty string"
PRECISION = "Error: 'precision' must be an integer between 0 and 12"
UNABLE = "Error: unable to evaluate expression"
NOT_FINITE = "Error: result is not a finite number"


async def calc(expression: Any, **extra: Any) -> Any:
    raw = await calculate_expression({"expression": expression, **extra})
    return json.loads(raw) if raw.startswith("{") else raw


async def test_integer_result() -> None:
    assert await calc("12 * (3 + 4)") == {
        "expression": "12 * (3 + 4)",
        "result": "84",
        "formatted_result": "84",
        "precision": 6,
        "is_integer": True,
    }


async def test_decimal_arithmetic_is_exact() -> None:
    result = await calc(" 0.1 + 0.2 ")
    assert result["expression"] == "0.1 + 0.2"
    assert result["result"] == "0.3"
    assert result["formatted_result"] == "0.300000"
    assert result["is_integer"] is False


async def test_precision_rounds_only_the_formatted_result() -> None:
    result = await calc("10 / 3", precision=2)
    assert result["result"].startswith("3.3333333333333333333")
    assert result["formatted_result"] == "3.33"
    assert result["precision"] == 2
    assert (await calc("2 / 3", precision=0))["formatted_result"] == "1"
    assert (await calc("2 / 3", precision=12))["formatted_result"] == "0.666666666667"
    assert (await calc("1 / 8", precision=None))["precision"] == 6


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("-7 // 2", "-4"),  # floor division, as in Python
        ("-7 % 3", "2"),  # the remainder takes the divisor's sign
        ("7 % -3", "-2"),
        ("7.5 // 2", "3"),
        ("2 ** 10", "1024"),
        ("2 ** -2", "0.25"),
        ("2 ** 100", str(2**100)),
        ("-(3 - 5)", "2"),
        ("+-+4", "-4"),
        ("1e3", "1000"),
        ("1_000 + 0x10", "1016"),
        ("((2))", "2"),
        ("1.50 * 2", "3"),
        ("-0.0", "0"),
    ],
)
async def test_operators(expression: str, result: str) -> None:
    assert (await calc(expression))["result"] == result


async def test_constants() -> None:
    assert (await calc("pi"))["formatted_result"] == "3.141593"
    assert (await calc("e"))["formatted_result"] == "2.718282"
    assert (await calc("tau", precision=12))["formatted_result"] == "6.283185307180"
    assert (await calc("pi"))["result"].startswith("3.14159265358979323846264338327950288")


async def test_very_small_and_very_large_results_use_e_notation() -> None:
    assert (await calc("10 ** -70"))["result"] == "1E-70"
    big = await calc("7 ** 1000")
    assert "E+" in big["result"]
    assert big["is_integer"] is True


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"expression": "2 +"}, SYNTAX),
        ({"expression": "2 3"}, SYNTAX),
        ({"expression": "(1"}, SYNTAX),
        ({"expression": "1 / 0"}, DIV_ZERO),
        ({"expression": "1 // 0"}, DIV_ZERO),
        ({"expression": "1 % 0.0"}, DIV_ZERO),
        ({"expression": "0 ** -1"}, DIV_ZERO),
        ({"expression": ""}, EXPRESSION),
        ({"expression": "   "}, EXPRESSION),
        ({"expression": 42}, EXPRESSION),
        ({}, EXPRESSION),
        ({"expression": "1", "precision": 13}, PRECISION),
        ({"expression": "1", "precision": -1}, PRECISION),
        ({"expression": "1", "precision": "2"}, PRECISION),
        ({"expression": "1", "precision": 2.0}, PRECISION),
        ({"expression": "1", "precision": True}, PRECISION),
        ({"expression": "(-8) ** 0.5"}, UNABLE),
        ({"expression": "10 ** 70 // 3"}, UNABLE),
        ({"expression": "(10 ** 9999) ** 11"}, NOT_FINITE),
        ({"expression": "1e999999999"}, NOT_FINITE),
    ],
)
async def test_errors(args: dict[str, Any], error: str) -> None:
    assert await calculate_expression(args) == error


@pytest.mark.parametrize(
    "expression",
    [
        "x + 1",
        "__import__('os').system('true')",
        "abs(-1)",
        "(1).real",
        "pi.real",
        "[1, 2]",
        "{1: 2}",
        "'a' * 3",
        "2j",
        "True + 1",
        "None",
        "1 if 1 else 2",
        "1 < 2",
        "not 1",
        "~1",
        "3 ^ 2",
        "1 << 2",
        "lambda: 1",
        "(y := 2)",
        "[x for x in (1, 2)]",
        "pi[0]",
        "2 @ 3",
        "f'{1}'",
    ],
)
async def test_only_arithmetic_is_evaluated(expression: str) -> None:
    assert await calc(expression) == UNABLE


@pytest.mark.parametrize(
    "expression",
    ["9 ** 9 ** 9", "2 ** 10 ** 100", "10 ** 100000", "(2 ** 0.5) ** 123456", "1" + "+1" * 400],
)
async def test_huge_work_is_refused_quickly(expression: str) -> None:
    start = time.perf_counter()
    assert await calc(expression) in {UNABLE, NOT_FINITE}
    assert time.perf_counter() - start < 0.5


async def test_trivial_bases_may_have_huge_exponents() -> None:
    assert (await calc("1 ** 1000000"))["result"] == "1"
    assert (await calc("0 ** 1000000"))["result"] == "0"


def test_evaluate_returns_a_decimal_and_raises_calculation_errors() -> None:
    assert evaluate("6 * 7") == Decimal(42)
    with pytest.raises(CalculationError, match=r"^Error: division by zero$"):
        evaluate("1/0")


def test_parameters_schema() -> None:
    schema = CALCULATE_EXPRESSION_PARAMETERS
    assert schema["required"] == ["expression"]
    assert schema["properties"]["precision"]["minimum"] == 0
    assert schema["properties"]["precision"]["maximum"] == 12
