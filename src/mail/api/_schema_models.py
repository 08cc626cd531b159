"""Pydantic models from the JSON Schemas of actions, keeping what the schema says.

``enum`` becomes a ``Literal``, numeric and length bounds and patterns become field
constraints, nested objects become nested models, and properties the schema does not
require are optional with their default (or ``None``).
"""

from __future__ import annotations

import re
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from mail.errors import SwarmDefinitionError

__all__ = ["model_from_json_schema"]

_SCALARS: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "null": type(None),
}
_CONSTRAINTS = {
    "minimum": "ge",
    "maximum": "le",
    "exclusiveMinimum": "gt",
    "exclusiveMaximum": "lt",
    "minLength": "min_length",
    "maxLength": "max_length",
    "minItems": "min_length",
    "maxItems": "max_length",
    "pattern": "pattern",
    "multipleOf": "multiple_of",
}


def _model_name(name: str) -> str:
    words = re.split(r"[^0-9A-Za-z]+", name)
    return "".join(w[:1].upper() + w[1:] for w in words if w) or "Model"


def model_from_json_schema(
    name: str, schema: dict[str, Any], *, forbid_extra: bool = True
) -> type[BaseModel]:
    """Build a pydantic model named after ``name`` from an object JSON Schema.

    Raises :class:`SwarmDefinitionError` for schema constructs it cannot represent
    (a non-local ``$ref``, an unknown ``type``).
    """
    return _object_model(_model_name(name), schema, schema, forbid_extra)


def _object_model(
    name: str, schema: dict[str, Any], root: dict[str, Any], forbid: bool
) -> type[BaseModel]:
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    fields: dict[str, Any] = {}
    for key, sub in properties.items():
        annotation = _annotation(f"{name}{_model_name(key)}", sub, root, forbid)
        constraints = (
            {_CONSTRAINTS[k]: v for k, v in sub.items() if k in _CONSTRAINTS}
            if isinstance(sub, dict)
            else {}
        )
        description = sub.get("description") if isinstance(sub, dict) else None
        if key in required:
            fields[key] = (annotation, Field(..., description=description, **constraints))
        else:
            default = sub.get("default") if isinstance(sub, dict) else None
            optional: Any = Optional[annotation]  # noqa: UP045  # the annotation is a run-time value
            fields[key] = (optional, Field(default, description=description, **constraints))
    config = ConfigDict(extra="forbid" if forbid else "ignore", title=schema.get("title") or name)
    model: type[BaseModel] = create_model(name, __config__=config, **fields)
    if schema.get("description"):
        model.__doc__ = schema["description"]
    return model


def _annotation(name: str, schema: Any, root: dict[str, Any], forbid: bool) -> Any:
    if not isinstance(schema, dict) or not schema:
        return Any
    if "$ref" in schema:
        return _annotation(name, _resolve(root, schema["$ref"]), root, forbid)
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    if "const" in schema:
        return Literal[schema["const"]]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            options = tuple(
                _annotation(f"{name}{i}", s, root, forbid) for i, s in enumerate(schema[key])
            )
            return Union[options]  # noqa: UP007  # built at run time
    return _typed(name, schema, root, forbid)


def _typed(name: str, schema: dict[str, Any], root: dict[str, Any], forbid: bool) -> Any:
    kind = schema.get("type")
    if isinstance(kind, list):
        return Union[tuple(_annotation(name, {**schema, "type": k}, root, forbid) for k in kind)]  # noqa: UP007
    if kind == "object" or (kind is None and "properties" in schema):
        return (
            _object_model(name, schema, root, forbid) if "properties" in schema else dict[str, Any]
        )
    if kind == "array":
        return list[_annotation(f"{name}Item", schema.get("items"), root, forbid)]  # type: ignore[misc]
    if kind is None:
        return Any
    if kind not in _SCALARS:
        raise SwarmDefinitionError(f"unsupported JSON Schema type {kind!r}", field="parameters")
    return _SCALARS[kind]


def _resolve(root: dict[str, Any], ref: str) -> Any:
    if not ref.startswith("#/"):
        raise SwarmDefinitionError(f"only local $ref is supported, got {ref!r}", field="parameters")
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, dict) or part not in node:
            raise SwarmDefinitionError(f"$ref {ref!r} points nowhere", field="parameters")
        node = node[part]
    return node
