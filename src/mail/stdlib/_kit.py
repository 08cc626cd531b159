"""Plumbing shared by the stdlib actions (private): argument checks, the ``Error: ...``
results, building a :class:`~mail.api.MAILAction` from a schema and a function."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mail.api import MAILAction
from mail.errors import MAILError

__all__ = ["ActionFailed", "ActionFunction", "define", "object_arg", "schema", "text_arg"]

ActionFunction = Callable[[dict[str, Any]], Awaitable[str]]


class ActionFailed(MAILError):
    """What an action reports instead of a result; ``str()`` is the ``Error: ...`` text."""

    def __init__(self, message: str) -> None:
        super().__init__(f"Error: {message}")


def text_arg(args: dict[str, Any], key: str) -> str:
    """The non-empty string ``args[key]``; raises :class:`ActionFailed`."""
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ActionFailed(f"'{key}' must be a non-empty string")
    return value


def object_arg(args: dict[str, Any], key: str, *, required: bool) -> dict[str, Any] | None:
    """The JSON object ``args[key]`` (``None`` when optional and absent or null); raises
    :class:`ActionFailed`."""
    value = args.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, dict):
        raise ActionFailed(f"'{key}' must be a JSON object")
    return value


def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """The JSON Schema of an action's arguments."""
    return {"type": "object", "properties": properties, "required": required}


def define(
    name: str, description: str, parameters: dict[str, Any], run: ActionFunction
) -> MAILAction:
    """A :class:`MAILAction` named ``name`` whose function awaits ``run(args)`` and returns
    its text, or the ``Error: ...`` text of an :class:`ActionFailed` it raised."""

    async def function(args: dict[str, Any]) -> str:
        try:
            return await run(args if isinstance(args, dict) else {})
        except ActionFailed as failure:
            return str(failure)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = description
    return MAILAction(name=name, description=description, parameters=parameters, function=function)
