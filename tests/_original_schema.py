"""The message rules of the original's ``MAIL-core.schema.json`` and
``MAIL-interswarm.schema.json`` (v1.3.6), written as one strict JSON Schema.

Stricter than our own ``spec/`` schemas, which also accept what v1.3.6 emits (null swarm
fields, a null ``auth_token``). Every message our runtime emits must pass these rules
(issue 22, item 6):

- the envelope's ``id`` and every payload's ``task_id``, ``request_id`` (requests only),
  ``broadcast_id`` and ``interrupt_id`` are uuids; ``timestamp`` is a date-time;
- ``sender_swarm`` / ``recipient_swarm`` are strings and ``recipient_swarms`` an array of
  strings when present (never null); ``routing_info`` an object when present;
- interswarm: ``message_id``, ``source_swarm``, ``target_swarm``, ``task_owner`` non-empty
  strings, ``task_contributors`` an array of strings, ``msg_type`` one of request, response,
  broadcast, interrupt with the matching payload, ``auth_token`` a string and ``metadata``
  an object when present;
- no other keys anywhere (``additionalProperties: false``).

``broadcast_complete`` (a broadcast payload) is valid in the core envelope, as in v1.3.6.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

__all__ = ["STRICT_SCHEMA", "strict_validator"]

_UUID = {"type": "string", "format": "uuid"}
_ADDRESS = {
    "type": "object",
    "additionalProperties": False,
    "required": ["address_type", "address"],
    "properties": {
        "address_type": {"enum": ["agent", "user", "system", "admin"]},
        "address": {"type": "string"},
    },
}


def _payload(id_key: str, id_schema: dict[str, Any], multi: bool) -> dict[str, Any]:
    recipient: dict[str, Any] = (
        {"recipients": {"type": "array", "items": {"$ref": "#/$defs/address"}}}
        if multi
        else {"recipient": {"$ref": "#/$defs/address"}}
    )
    swarms: dict[str, Any] = (
        {"recipient_swarms": {"type": "array", "items": {"type": "string"}}}
        if multi
        else {"recipient_swarm": {"type": "string"}}
    )
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["task_id", id_key, "sender", *recipient, "subject", "body"],
        "properties": {
            "task_id": _UUID,
            id_key: id_schema,
            "sender": {"$ref": "#/$defs/address"},
            **recipient,
            "subject": {"type": "string"},
            "body": {"type": "string"},
            "sender_swarm": {"type": "string"},
            **swarms,
            "routing_info": {"type": "object"},
        },
    }


_PAYLOADS = {
    "request": _payload("request_id", _UUID, multi=False),
    # a response's request_id has no format in the original's schema
    "response": _payload("request_id", {"type": "string"}, multi=False),
    "broadcast": _payload("broadcast_id", _UUID, multi=True),
    "interrupt": _payload("interrupt_id", _UUID, multi=True),
}
_ENVELOPE_TYPES = {**{t: t for t in _PAYLOADS}, "broadcast_complete": "broadcast"}


def _typed(type_key: str, payload_key: str, types: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "if": {"properties": {type_key: {"const": name}}},
            "then": {"properties": {payload_key: {"$ref": f"#/$defs/{payload}"}}},
        }
        for name, payload in types.items()
    ]


_NON_EMPTY = {"type": "string", "minLength": 1}

STRICT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {
        "address": _ADDRESS,
        **_PAYLOADS,
        "core": {
            "type": "object",
            "additionalProperties": False,
            "required": ["id", "timestamp", "message", "msg_type"],
            "properties": {
                "id": _UUID,
                "timestamp": {"type": "string", "format": "date-time"},
                "msg_type": {"enum": list(_ENVELOPE_TYPES)},
                "message": {"type": "object"},
            },
            "allOf": _typed("msg_type", "message", _ENVELOPE_TYPES),
        },
        "interswarm": {
            "type": "object",
            "additionalProperties": False,
            "required": [
                "message_id",
                "source_swarm",
                "target_swarm",
                "timestamp",
                "payload",
                "msg_type",
                "task_owner",
                "task_contributors",
            ],
            "properties": {
                "message_id": _NON_EMPTY,
                "source_swarm": _NON_EMPTY,
                "target_swarm": _NON_EMPTY,
                "timestamp": {"type": "string", "format": "date-time"},
                "payload": {"type": "object"},
                "msg_type": {"enum": list(_PAYLOADS)},
                "auth_token": {"type": "string"},
                "task_owner": _NON_EMPTY,
                "task_contributors": {"type": "array", "items": {"type": "string"}},
                "metadata": {"type": "object"},
            },
            "allOf": _typed("msg_type", "payload", {t: t for t in _PAYLOADS}),
        },
    },
    "if": {"required": ["payload"]},
    "then": {"$ref": "#/$defs/interswarm"},
    "else": {"$ref": "#/$defs/core"},
}


def strict_validator() -> Draft202012Validator:
    """A validator of :data:`STRICT_SCHEMA` that checks the ``uuid`` and ``date-time`` formats."""
    Draft202012Validator.check_schema(STRICT_SCHEMA)
    return Draft202012Validator(STRICT_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)
