"""The data-analysis swarm's data sources: ``generate_sample_data`` and ``parse_csv``.

Sample data is computed from the dataset name and row index (no randomness, no
service), so the same request always gets the same table.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from mail.examples._actionkit import (
    ArgumentError,
    choice_arg,
    digest_int,
    int_arg,
    make_action,
    text_arg,
)

__all__ = ["DATASETS", "generate_sample_data", "parse_csv"]

#: dataset -> (description, columns)
DATASETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "sales": ("Monthly sales by region", ("month", "region", "units", "revenue")),
    "users": ("Sign-ups and activity per user", ("user_id", "age", "sessions", "minutes")),
    "inventory": ("Stock levels per product", ("sku", "stock", "reorder_level", "unit_cost")),
    "weather": ("Daily weather readings", ("day", "temperature", "humidity", "rainfall")),
}
_REGIONS = ("north", "south", "east", "west")


def _row(dataset: str, i: int) -> dict[str, Any]:
    n = digest_int(dataset, i)
    if dataset == "sales":
        units = 50 + n % 150
        return {
            "month": f"M{i % 12 + 1:02d}",
            "region": _REGIONS[i % 4],
            "units": units,
            "revenue": round(units * (9.5 + (n >> 8) % 50 / 10), 2),
        }
    if dataset == "users":
        sessions = 1 + n % 40
        return {
            "user_id": f"U{i + 1:04d}",
            "age": 18 + (n >> 8) % 50,
            "sessions": sessions,
            "minutes": sessions * (3 + (n >> 16) % 12),
        }
    if dataset == "inventory":
        return {
            "sku": f"SKU-{i + 1:04d}",
            "stock": n % 500,
            "reorder_level": 50 + (n >> 8) % 50,
            "unit_cost": round(1 + (n >> 16) % 9900 / 100, 2),
        }
    return {
        "day": i + 1,
        "temperature": round(-5 + (n % 400) / 10, 1),
        "humidity": 30 + (n >> 8) % 60,
        "rainfall": round((n >> 16) % 300 / 10, 1),
    }


def _generate(args: dict[str, Any]) -> dict[str, Any]:
    dataset = choice_arg(args, "dataset", tuple(DATASETS), None)
    rows = int_arg(args, "rows", 10, 1, 1000)
    description, columns = DATASETS[dataset]
    return {
        "dataset": dataset,
        "description": description,
        "columns": list(columns),
        "row_count": rows,
        "data": [_row(dataset, i) for i in range(rows)],
    }


def _convert(value: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            continue
    return value


def _type_of(values: list[Any]) -> str:
    if values and all(isinstance(v, int) for v in values):
        return "integer"
    if values and all(isinstance(v, int | float) for v in values):
        return "number"
    return "string"


def _parse(args: dict[str, Any]) -> dict[str, Any]:
    text = text_arg(args, "data")
    reader = csv.reader(io.StringIO(text.strip()))
    header = [name.strip() for name in next(reader, [])]
    if not header or not all(header):
        raise ArgumentError("Error: 'data' must start with a header row of column names")
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    for line, cells in enumerate(reader, start=2):
        if len(cells) != len(header):
            errors.append(f"line {line}: expected {len(header)} fields, got {len(cells)}")
            continue
        rows.append({k: _convert(v.strip()) for k, v in zip(header, cells, strict=True)})
    return {
        "success": not errors,
        "columns": header,
        "column_types": {k: _type_of([row[k] for row in rows]) for k in header},
        "row_count": len(rows),
        "data": rows,
        "parse_errors": errors,
    }


#: ``generate_sample_data {dataset: sales|users|inventory|weather, rows?: int 1..1000 (10)}``
#: -> JSON ``{dataset, description, columns, row_count, data}`` or ``"Error: ..."``.
generate_sample_data = make_action(
    "generate_sample_data",
    "Generate a sample dataset (sales, users, inventory or weather) to analyze.",
    {
        "dataset": {"type": "string", "enum": list(DATASETS)},
        "rows": {
            "type": "integer",
            "minimum": 1,
            "maximum": 1000,
            "description": "Number of rows (default 10).",
        },
    },
    ["dataset"],
    _generate,
)

#: ``parse_csv {data: str}`` -> JSON ``{success, columns, column_types, row_count, data,
#: parse_errors}`` or ``"Error: ..."``.
parse_csv = make_action(
    "parse_csv",
    "Parse CSV text (a header row, then one row per line) into typed records.",
    {"data": {"type": "string", "description": "The CSV text."}},
    ["data"],
    _parse,
)
