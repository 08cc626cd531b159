"""Shared plumbing of the example actions (private): schemas, argument checks, results."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from mail.api import MAILAction

__all__ = [
    "ArgumentError",
    "ExampleAction",
    "choice_arg",
    "digest_int",
    "int_arg",
    "make_action",
    "text_arg",
]


class ArgumentError(Exception):
    """A bad argument; its message is the ``"Error: ..."`` text the action returns."""


#: The example actions' class: a :class:`~mail.api.MAILAction`, which can also be awaited
#: as a function of the arguments dict, like the original's example actions: ``await
#: classify_ticket({"text": "..."})`` returns the result string.
ExampleAction = MAILAction


def text_arg(args: dict[str, Any], key: str, *, required: bool = True) -> str:
    """The non-empty string ``args[key]`` (``""`` when optional and absent)."""
    value = args.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise ArgumentError(f"Error: '{key}' must be a non-empty string")
    return value


def int_arg(args: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    """The integer ``args[key]`` in ``low..high`` (``default`` when absent)."""
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ArgumentError(f"Error: '{key}' must be an integer between {low} and {high}")
    return value


def choice_arg(
    args: dict[str, Any], key: str, choices: tuple[str, ...], default: str | None
) -> str:
    """``args[key]``, one of ``choices`` (``default`` when absent and not None)."""
    value = args.get(key, default)
    if value not in choices:
        raise ArgumentError(f"Error: '{key}' must be one of {', '.join(choices)}")
    return str(value)


def digest_int(*parts: object) -> int:
    """A stable number derived from ``parts`` (the examples' stand-in for randomness)."""
    seed = "|".join(str(part) for part in parts).encode()
    return int.from_bytes(hashlib.sha256(seed).digest()[:8], "big")


def make_action(
    name: str,
    description: str,
    properties: dict[str, Any],
    required: list[str],
    compute: Callable[[dict[str, Any]], dict[str, Any]],
) -> ExampleAction:
    """An :class:`ExampleAction` whose function returns ``json.dumps(compute(args))``,
    or the ``"Error: ..."`` text of an :class:`ArgumentError`; it never raises."""

    async def run(args: dict[str, Any]) -> str:
        try:
            return json.dumps(compute(args))
        except ArgumentError as error:
            return str(error)

    run.__name__ = run.__qualname__ = name
    run.__doc__ = description
    function: Callable[[dict[str, Any]], Awaitable[str]] = run
    schema = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return ExampleAction(name=name, description=description, parameters=schema, function=function)
