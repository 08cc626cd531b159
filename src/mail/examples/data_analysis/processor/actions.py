"""The data-analysis swarm's data sources: ``generate_sample_data`` and ``parse_csv``.

Sample data is computed from the dataset name and row index (no randomness, no
service), so the same request always gets the same table.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import Any, NamedTuple

from mail.examples._actionkit import (
    ArgumentError,
    choice_arg,
    digest_int,
    int_arg,
    make_action,
    text_arg,
)

__all__ = [
    "CATEGORIES",
    "DATASET_GENERATORS",
    "GENERATE_SAMPLE_DATA_PARAMETERS",
    "GENERATORS",
    "PARSE_CSV_PARAMETERS",
    "PRODUCTS",
    "REGIONS",
    "SUBSCRIPTION_TYPES",
    "DatasetGenerator",
    "generate_sample_data",
    "parse_csv",
]

#: The regions of the ``sales`` rows.
REGIONS: tuple[str, ...] = ("north", "south", "east", "west")
#: The products of the ``sales`` rows.
PRODUCTS: tuple[str, ...] = ("Widget", "Gadget", "Gizmo", "Doohickey", "Sprocket")
#: The subscription plans of the ``users`` rows.
SUBSCRIPTION_TYPES: tuple[str, ...] = ("free", "basic", "premium", "enterprise")
#: The product categories of the ``inventory`` rows.
CATEGORIES: tuple[str, ...] = ("electronics", "clothing", "home", "sports", "books")


def _sales_row(i: int) -> dict[str, Any]:
    n = digest_int("sales", i)
    units = 50 + n % 150
    return {
        "month": f"M{i % 12 + 1:02d}",
        "region": REGIONS[i % len(REGIONS)],
        "product": PRODUCTS[(n >> 24) % len(PRODUCTS)],
        "units": units,
        "revenue": round(units * (9.5 + (n >> 8) % 50 / 10), 2),
    }


def _users_row(i: int) -> dict[str, Any]:
    n = digest_int("users", i)
    sessions = 1 + n % 40
    return {
        "user_id": f"U{i + 1:04d}",
        "age": 18 + (n >> 8) % 50,
        "subscription": SUBSCRIPTION_TYPES[(n >> 24) % len(SUBSCRIPTION_TYPES)],
        "sessions": sessions,
        "minutes": sessions * (3 + (n >> 16) % 12),
    }


def _inventory_row(i: int) -> dict[str, Any]:
    n = digest_int("inventory", i)
    return {
        "sku": f"SKU-{i + 1:04d}",
        "category": CATEGORIES[(n >> 24) % len(CATEGORIES)],
        "stock": n % 500,
        "reorder_level": 50 + (n >> 8) % 50,
        "unit_cost": round(1 + (n >> 16) % 9900 / 100, 2),
    }


def _weather_row(i: int) -> dict[str, Any]:
    n = digest_int("weather", i)
    return {
        "day": i + 1,
        "temperature": round(-5 + (n % 400) / 10, 1),
        "humidity": 30 + (n >> 8) % 60,
        "rainfall": round((n >> 16) % 300 / 10, 1),
    }


class DatasetGenerator(NamedTuple):
    """One dataset ``generate_sample_data`` offers: what it holds and how row ``i`` is made."""

    description: str
    columns: tuple[str, ...]
    row: Callable[[int], dict[str, Any]]


#: dataset name -> its :class:`DatasetGenerator`; the names are ``generate_sample_data``'s
#: ``dataset`` choices.
DATASET_GENERATORS: dict[str, DatasetGenerator] = {
    "sales": DatasetGenerator(
        "Monthly sales by region and product",
        ("month", "region", "product", "units", "revenue"),
        _sales_row,
    ),
    "users": DatasetGenerator(
        "Sign-ups, plans and activity per user",
        ("user_id", "age", "subscription", "sessions", "minutes"),
        _users_row,
    ),
    "inventory": DatasetGenerator(
        "Stock levels per product",
        ("sku", "category", "stock", "reorder_level", "unit_cost"),
        _inventory_row,
    ),
    "weather": DatasetGenerator(
        "Daily weather readings", ("day", "temperature", "humidity", "rainfall"), _weather_row
    ),
}
#: dataset name -> the function making its row ``i`` (deterministic in the dataset and ``i``).
GENERATORS: dict[str, Callable[[int], dict[str, Any]]] = {
    name: generator.row for name, generator in DATASET_GENERATORS.items()
}


def _generate(args: dict[str, Any]) -> dict[str, Any]:
    dataset = choice_arg(args, "dataset", tuple(DATASET_GENERATORS), None)
    rows = int_arg(args, "rows", 10, 1, 1000)
    generator = DATASET_GENERATORS[dataset]
    return {
        "dataset": dataset,
        "description": generator.description,
        "columns": list(generator.columns),
        "row_count": rows,
        "data": [generator.row(i) for i in range(rows)],
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
        "dataset": {"type": "string", "enum": list(DATASET_GENERATORS)},
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

#: The JSON Schema of ``generate_sample_data``'s arguments.
GENERATE_SAMPLE_DATA_PARAMETERS: dict[str, Any] = generate_sample_data.parameters
#: The JSON Schema of ``parse_csv``'s arguments.
PARSE_CSV_PARAMETERS: dict[str, Any] = parse_csv.parameters
