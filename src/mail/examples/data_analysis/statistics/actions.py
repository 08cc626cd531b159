"""The data-analysis swarm's statistics: ``calculate_statistics`` and ``run_correlation``."""

from __future__ import annotations

import math
import statistics
from typing import Any

from mail.examples._actionkit import ArgumentError, make_action

__all__ = [
    "AVAILABLE_METRICS",
    "CALCULATE_STATISTICS_PARAMETERS",
    "RUN_CORRELATION_PARAMETERS",
    "calculate_statistics",
    "run_correlation",
]

#: Every metric ``calculate_statistics`` knows.
AVAILABLE_METRICS: tuple[str, ...] = (
    "mean",
    "median",
    "mode",
    "std",
    "variance",
    "min",
    "max",
    "range",
    "sum",
    "percentile_25",
    "percentile_75",
    "iqr",
)


def _numbers(args: dict[str, Any], key: str, minimum: int = 1) -> list[float]:
    values = args.get(key)
    if (
        not isinstance(values, list)
        or len(values) < minimum
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    ):
        raise ArgumentError(f"Error: '{key}' must be an array of at least {minimum} numbers")
    return [float(v) for v in values]


def _round(value: float) -> float:
    return round(value, 4)


def _metrics(data: list[float]) -> dict[str, float]:
    ordered = sorted(data)
    q1, _, q3 = statistics.quantiles(ordered, n=4) if len(ordered) > 1 else (ordered[0],) * 3
    return {
        "mean": statistics.fmean(data),
        "median": statistics.median(data),
        "mode": statistics.mode(data),
        "std": statistics.stdev(data) if len(data) > 1 else 0.0,
        "variance": statistics.variance(data) if len(data) > 1 else 0.0,
        "min": ordered[0],
        "max": ordered[-1],
        "range": ordered[-1] - ordered[0],
        "sum": math.fsum(data),
        "percentile_25": q1,
        "percentile_75": q3,
        "iqr": q3 - q1,
    }


def _calculate(args: dict[str, Any]) -> dict[str, Any]:
    data = _numbers(args, "data")
    wanted = args.get("metrics", list(AVAILABLE_METRICS))
    if (
        not isinstance(wanted, list)
        or not wanted
        or any(m not in AVAILABLE_METRICS for m in wanted)
    ):
        raise ArgumentError(f"Error: 'metrics' must be a list of: {', '.join(AVAILABLE_METRICS)}")
    every = _metrics(data)
    mean, std = every["mean"], every["std"]
    spread = (
        "low"
        if mean and std / abs(mean) < 0.1
        else "moderate"
        if mean and std / abs(mean) < 0.5
        else "high"
    )
    return {
        "count": len(data),
        "metrics": {name: _round(every[name]) for name in wanted},
        "interpretation": (
            f"{len(data)} values centred on {_round(mean)} (median {_round(every['median'])}) "
            f"with {spread} spread (std {_round(std)})."
        ),
    }


def _strength(r: float) -> str:
    size = abs(r)
    if size >= 0.7:
        return "strong"
    if size >= 0.4:
        return "moderate"
    return "weak" if size >= 0.1 else "none"


def _correlate(args: dict[str, Any]) -> dict[str, Any]:
    x = _numbers(args, "x", 2)
    y = _numbers(args, "y", 2)
    if len(x) != len(y):
        raise ArgumentError("Error: 'x' and 'y' must have the same length")
    try:
        r = statistics.correlation(x, y)
    except statistics.StatisticsError:
        raise ArgumentError("Error: 'x' and 'y' must not be constant") from None
    strength = _strength(r)
    direction = "positive" if r > 0 else "negative" if r < 0 else "none"
    return {
        "correlation_coefficient": _round(r),
        "r_squared": _round(r * r),
        "data_points": len(x),
        "strength": strength,
        "direction": direction,
        "interpretation": f"A {strength} {direction} linear relationship (r = {_round(r)}).",
        "x_stats": {"mean": _round(statistics.fmean(x)), "std": _round(statistics.stdev(x))},
        "y_stats": {"mean": _round(statistics.fmean(y)), "std": _round(statistics.stdev(y))},
    }


#: ``calculate_statistics {data: number[], metrics?: string[]}`` -> JSON ``{count,
#: metrics: {mean, median, mode, std, variance, min, max, range, sum, percentile_25,
#: percentile_75, iqr} (the ones asked for), interpretation}`` or ``"Error: ..."``.
calculate_statistics = make_action(
    "calculate_statistics",
    "Calculate descriptive statistics (mean, median, spread, percentiles) of numbers.",
    {
        "data": {"type": "array", "items": {"type": "number"}, "minItems": 1},
        "metrics": {
            "type": "array",
            "items": {"type": "string", "enum": list(AVAILABLE_METRICS)},
            "description": "Which metrics to return (default: all).",
        },
    },
    ["data"],
    _calculate,
)

#: ``run_correlation {x: number[], y: number[]}`` -> JSON ``{correlation_coefficient,
#: r_squared, data_points, strength, direction, interpretation, x_stats, y_stats}`` or
#: ``"Error: ..."``.
run_correlation = make_action(
    "run_correlation",
    "Compute the Pearson correlation between two equally long series of numbers.",
    {
        "x": {"type": "array", "items": {"type": "number"}, "minItems": 2},
        "y": {"type": "array", "items": {"type": "number"}, "minItems": 2},
    },
    ["x", "y"],
    _correlate,
)

#: The JSON Schema of ``calculate_statistics``'s arguments.
CALCULATE_STATISTICS_PARAMETERS: dict[str, Any] = calculate_statistics.parameters
#: The JSON Schema of ``run_correlation``'s arguments.
RUN_CORRELATION_PARAMETERS: dict[str, Any] = run_correlation.parameters
