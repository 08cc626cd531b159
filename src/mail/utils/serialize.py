"""v1.3.6's ``mail.utils.serialize``: MAIL values (messages, events, templates) as JSON."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from enum import Enum
from typing import Any

__all__ = ["dump_mail_result", "serialize_mail_value", "extract_task_body", "export"]


def serialize_mail_value(value: Any, *, exclude_keys: Iterable[str] | None = None) -> Any:
    """``value`` as plain JSON data: pydantic models and dataclasses as dicts, datetimes in
    ISO 8601, UUIDs, paths and enums as strings, sets and tuples as lists; keys named in
    ``exclude_keys`` are left out of every mapping. Anything else becomes ``str(value)``."""
    excluded = frozenset(exclude_keys or ())

    def walk(item: Any) -> Any:
        if item is None or isinstance(item, bool | int | float | str):
            return item
        if isinstance(item, Enum):
            return walk(item.value)
        if isinstance(item, datetime | date):
            return item.isoformat()
        if hasattr(item, "model_dump") and callable(item.model_dump):
            return walk(item.model_dump())
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            return walk({f.name: getattr(item, f.name) for f in dataclasses.fields(item)})
        if isinstance(item, Mapping):
            return {str(k): walk(v) for k, v in item.items() if str(k) not in excluded}
        if isinstance(item, list | tuple | set | frozenset):
            return [walk(v) for v in item]
        return str(item)  # UUIDs, paths and the rest

    return walk(value)


def extract_task_body(raw_result: Any, serialized_result: Any | None = None) -> str:
    """The body of a task's final message (``result["message"]["body"]``), else the JSON of
    ``serialized_result`` (or of the serialized ``raw_result``)."""
    data = serialized_result if serialized_result is not None else serialize_mail_value(raw_result)
    if isinstance(data, Mapping):
        message = data.get("message")
        if isinstance(message, Mapping) and isinstance(message.get("body"), str):
            return str(message["body"])
    if isinstance(data, str):
        return data
    return json.dumps(data)


def dump_mail_result(result: Any, events: Iterable[Any], verbose: bool = False) -> str:
    """The JSON text of ``{"response": result}``, plus ``"events"`` when ``verbose``."""
    payload: dict[str, Any] = {"response": serialize_mail_value(result)}
    if verbose:
        payload["events"] = serialize_mail_value(list(events))
    return json.dumps(payload, indent=2)


def export(swarms: Any) -> str:
    """The JSON text of ``swarms`` (a swarm, template or a list of them) as
    :func:`serialize_mail_value` makes it; an object that is neither a model nor a
    dataclass is exported as its public attributes."""

    def prepare(item: Any) -> Any:
        if hasattr(item, "model_dump") or dataclasses.is_dataclass(item):
            return item
        if isinstance(item, Mapping | str | int | float | bool) or item is None:
            return item
        if isinstance(item, list | tuple):
            return [prepare(v) for v in item]
        return {
            k: prepare(v)
            for k, v in vars(item).items()
            if not k.startswith("_") and not callable(v)
        }

    return json.dumps(serialize_mail_value(prepare(swarms)), indent=2)
