"""``MAILAction`` and the ``@action`` decorator (public through :mod:`mail.api`)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ValidationError

from mail.api._schema_models import model_from_json_schema
from mail.core.actions import ActionCore
from mail.core.tools import json_schema_tool
from mail.errors import SwarmDefinitionError
from mail.swarms_json import parse_action
from mail.swarms_json.references import DEFAULT_POLICY, ReferencePolicy, read_python_string

__all__ = ["ActionLike", "MAILAction", "action", "load_swarm_actions"]

ActionCallable = Callable[[dict[str, Any]], "Awaitable[str] | str"]
#: What may stand for an action where v1.3.6 took ``ActionLike``: a :class:`MAILAction`,
#: or the function of its arguments dict (sync or async) returning the result string.
ActionLike: TypeAlias = "MAILAction | ActionCallable"


class MAILAction:
    """A tool agents can call, backed by a Python function.

    Args:
        name, description: what the agent sees (both non-empty).
        parameters: a JSON Schema object describing the arguments.
        function: the callable taking the arguments dict (sync or async, returning a
            string), or a ``python::module:attr`` string naming it (or naming another
            :class:`MAILAction`, whose function is then used).

    Raises :class:`SwarmDefinitionError` for an empty name or description, parameters
    that are not an object schema, or a function reference that does not resolve.
    """

    def __init__(
        self,
        name: str,
        description: str,
        parameters: dict[str, Any],
        function: str | ActionCallable | MAILAction,
        *,
        policy: ReferencePolicy = DEFAULT_POLICY,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise SwarmDefinitionError("action name must be a non-empty string", field="name")
        if not isinstance(description, str) or not description.strip():
            raise SwarmDefinitionError(f"action '{name}' needs a description", field="description")
        if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
            raise SwarmDefinitionError(
                f"action '{name}': parameters must be an object schema", field="parameters"
            )
        self.name = name
        self.description = description
        self.parameters = parameters
        self.function_ref = function if isinstance(function, str) else None
        resolved: Any = (
            read_python_string(function, policy) if isinstance(function, str) else function
        )
        if isinstance(resolved, MAILAction):
            resolved = resolved.function
        if not callable(resolved):
            raise SwarmDefinitionError(
                f"action '{name}': function {function!r} is not callable", field="function"
            )
        self.function: ActionCallable = resolved
        self._optional = frozenset(
            set(parameters.get("properties", {})) - set(parameters.get("required", ()))
        )

    def __repr__(self) -> str:
        return f"MAILAction(name={self.name!r})"

    async def __call__(self, args: dict[str, Any]) -> str:
        """Run the action's function on ``args`` (awaited when it is async), as the
        original's module-level action functions were called: ``await http_get({"url":
        ...})``. Returns its result string."""
        result = self.function(args)
        return await result if inspect.isawaitable(result) else result

    # --- construction --------------------------------------------------------------------

    @classmethod
    def from_pydantic_model(
        cls,
        model: type[BaseModel],
        function: str | ActionCallable,
        name: str | None = None,
        description: str | None = None,
    ) -> MAILAction:
        """Build an action whose parameters are ``model``'s JSON Schema."""
        doc = inspect.cleandoc(model.__doc__) if model.__doc__ else None
        return cls(
            name=name or model.__name__,
            description=description or doc or "",
            parameters=model.model_json_schema(),
            function=function,
        )

    @classmethod
    def from_swarms_json(
        cls, action_data: dict[str, Any], *, policy: ReferencePolicy = DEFAULT_POLICY
    ) -> MAILAction:
        """Build an action from a ``swarms.json`` action object."""
        spec = parse_action(action_data)
        return cls(
            spec["name"], spec["description"], spec["parameters"], spec["function"], policy=policy
        )

    @classmethod
    def from_swarm_json(
        cls, json_dump: str, *, policy: ReferencePolicy = DEFAULT_POLICY
    ) -> MAILAction:
        """Build an action from the JSON text of a ``swarms.json`` action object."""
        try:
            data = json.loads(json_dump)
        except ValueError as e:
            raise SwarmDefinitionError(f"action JSON is not valid: {e}") from e
        return cls.from_swarms_json(data, policy=policy)

    # --- use -----------------------------------------------------------------------------

    def to_core(self) -> ActionCore:
        """The runtime's view of this action.

        Optional arguments the model sent as ``null`` (strict tool mode makes every
        argument present) are dropped before the function sees them.
        """
        function = self.function
        optional = self._optional
        if not optional:
            return ActionCore(function, self.name, self.parameters)

        def call(args: dict[str, Any]) -> Awaitable[str] | str:
            return function({k: v for k, v in args.items() if not (v is None and k in optional)})

        return ActionCore(call, self.name, self.parameters)

    def to_tool_dict(
        self, style: Literal["completions", "responses"] = "responses"
    ) -> dict[str, Any]:
        """The strict tool spec agents are offered; ``enum``, bounds and nesting are kept."""
        return json_schema_tool(self.name, self.description, self.parameters, style)

    def to_pydantic_model(self, for_tools: bool = False) -> type[BaseModel]:
        """A pydantic model of the parameters (``for_tools``: ignore unknown keys)."""
        return model_from_json_schema(self.name, self.parameters, forbid_extra=not for_tools)

    def to_swarms_json(self) -> dict[str, Any]:
        """The ``swarms.json`` action object (needs a ``python::`` function reference)."""
        if self.function_ref is None:
            raise SwarmDefinitionError(
                f"action '{self.name}' was built from a callable, not a python:: reference",
                field="function",
            )
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "function": self.function_ref,
        }


def action(
    name: str | None = None,
    description: str | None = None,
    model: type[BaseModel] | None = None,
    parameters: dict[str, Any] | None = None,
    style: Literal["completions", "responses"] = "responses",
) -> Callable[[Callable[[Any], Any]], MAILAction]:
    """Turn a one-argument function (sync or async) into a :class:`MAILAction`.

    The description defaults to the docstring. Give either a pydantic ``model`` (the
    arguments are validated into it before the call; the first parameter's annotation is
    used when it is a model) or a JSON Schema ``parameters``. The function must return a
    string (``TypeError`` otherwise). The action keeps ``.callback`` (the original
    function) and ``.parameters_model``. ``style`` is accepted for compatibility.
    """
    if model is not None and parameters is not None:
        raise SwarmDefinitionError("give either model or parameters, not both", field="parameters")

    def wrap(fn: Callable[[Any], Any]) -> MAILAction:
        arg_model = model or _first_param_model(fn)
        schema = (
            parameters
            if parameters is not None
            else (arg_model.model_json_schema() if arg_model else None)
        )
        if schema is None:
            raise SwarmDefinitionError(
                f"action '{fn.__name__}' needs a pydantic model (argument annotation or model=) or parameters",
                field="parameters",
            )
        doc = description or (inspect.cleandoc(fn.__doc__) if fn.__doc__ else "")
        if not doc:
            raise SwarmDefinitionError(
                f"action '{fn.__name__}' needs a description or a docstring", field="description"
            )

        async def run(args: dict[str, Any]) -> str:
            payload: Any = args
            if arg_model is not None:
                try:
                    payload = arg_model.model_validate(args)
                except ValidationError as e:
                    return f"Error: invalid arguments: {e}"
            result = fn(payload)
            if inspect.isawaitable(result):
                result = await result
            if not isinstance(result, str):
                raise TypeError(
                    f"action '{fn.__name__}' must return a str, got {type(result).__name__}"
                )
            return result

        created = MAILAction(name or fn.__name__, doc, schema, run)
        created.callback = fn  # type: ignore[attr-defined]
        created.parameters_model = arg_model  # type: ignore[attr-defined]
        return created

    return wrap


def _first_param_model(fn: Callable[..., Any]) -> type[BaseModel] | None:
    try:
        hints = inspect.get_annotations(fn, eval_str=True)
    except (NameError, TypeError):
        return None
    params = list(inspect.signature(fn).parameters)
    annotation = hints.get(params[0]) if params else None
    return (
        annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    )


def load_swarm_actions(
    inline: Sequence[Mapping[str, Any]], imports: Sequence[str], swarm: str, policy: ReferencePolicy
) -> list[MAILAction]:
    """A swarm's actions: those defined inline and those ``action_imports`` names."""
    actions: dict[str, MAILAction] = {}
    for item in inline:
        try:
            created = MAILAction(
                item["name"],
                item["description"],
                item["parameters"],
                item["function"],
                policy=policy,
            )
        except SwarmDefinitionError as e:
            raise e.located(swarm=swarm) from e
        _add_action(actions, created, swarm)
    for ref in imports:
        try:
            imported = read_python_string(ref, policy)
        except SwarmDefinitionError as e:
            raise SwarmDefinitionError(e.reason, swarm=swarm, field="action_imports") from e
        if not isinstance(imported, MAILAction):
            raise SwarmDefinitionError(
                f"{ref!r} is a {type(imported).__name__}, not a MAILAction",
                swarm=swarm,
                field="action_imports",
            )
        _add_action(actions, imported, swarm)
    return list(actions.values())


def _add_action(actions: dict[str, MAILAction], new: MAILAction, swarm: str) -> None:
    old = actions.get(new.name)
    if old is not None and old is not new and old.function is not new.function:
        raise SwarmDefinitionError(
            f"action '{new.name}' is defined twice", swarm=swarm, field="actions"
        )
    actions[new.name] = new
