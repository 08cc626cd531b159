"""Signatures derived from the one declaration of an agent class's parameters (private).

``LiteLLMAgentFunction.__init__`` declares the parameters of the LLM agents (names, types,
defaults and positional order, CONTRACT 6.2), ``MAILAgentFunction.__init__`` those of every
agent class. v1.3.6 wrote them out again in its subclasses and deprecated functions, with a
few other defaults and, in its LLM subclasses, ``_debug_include_mail_tools`` right after
``use_proxy``. Those signatures are derived here instead:

- :func:`rebind`, a class decorator, gives a subclass its base's parameters with some moved
  or with other defaults;
- :func:`deprecated_factory` builds one of v1.3.6's deprecated functions from its class.

Both bind a call against the derived signature, so a positional call written for v1.3.6
binds as it did (and a bad call raises the ``TypeError`` Python would), then pass every
argument on by keyword. ``inspect.signature`` shows the derived signature.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

__all__ = ["FACTORY_PARAMETERS", "REQUIRED", "V1_SUBCLASS_ORDER", "deprecated_factory", "rebind"]

_Class = TypeVar("_Class", bound=type)
_Agent = TypeVar("_Agent")

#: A default that makes the parameter required.
REQUIRED: Final = inspect.Parameter.empty

#: v1.3.6's LLM subclasses take ``_debug_include_mail_tools`` right after ``use_proxy``.
V1_SUBCLASS_ORDER: Final[Mapping[str, str]] = {"_debug_include_mail_tools": "use_proxy"}

#: The leading parameters of v1.3.6's deprecated factory functions, in their order.
FACTORY_PARAMETERS: Final = (
    "comm_targets",
    "tools",
    "user_token",
    "llm",
    "system",
    "name",
    "enable_entrypoint",
    "enable_interswarm",
    "can_complete_tasks",
    "tool_format",
    "exclude_tools",
    "reasoning_effort",
    "thinking_budget",
    "max_tokens",
    "memory",
    "use_proxy",
)


def rebind(*, move: Mapping[str, str] | None = None, **defaults: Any) -> Callable[[_Class], _Class]:
    """Class decorator: the class's ``__init__`` takes the parameters of its base's.

    ``move`` maps a parameter to the one it follows in the class's positional order;
    ``defaults`` replace the base's defaults. The new ``__init__`` passes every argument by
    keyword to the base's (``super()``'s). Raises ``ValueError`` at decoration for an order
    Python would not accept (a required parameter after one with a default).
    """

    def decorate(cls: _Class) -> _Class:
        owner: Any = cls  # mypy takes no type variable as super()'s first argument
        base = inspect.signature(
            next(vars(b)["__init__"] for b in cls.__mro__[1:] if "__init__" in vars(b))
        )
        params = list(base.parameters.values())
        for name, after in (move or {}).items():
            param = params.pop(_index(params, name))
            params.insert(_index(params, after) + 1, param)
        signature = _signature(params, defaults).replace(return_annotation=base.return_annotation)

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            arguments = _keywords(signature, self, *args, **kwargs)
            del arguments["self"]
            super(owner, self).__init__(**arguments)

        __init__.__qualname__ = f"{cls.__qualname__}.__init__"
        __init__.__module__ = cls.__module__
        __init__.__dict__["__signature__"] = signature  # read by inspect.signature
        setattr(cls, "__init__", __init__)  # noqa: B010  # mypy rejects assigning a method
        return cls

    return decorate


def deprecated_factory(
    cls: Callable[..., _Agent], old: str, *, extra: Sequence[str] = (), **defaults: Any
) -> Callable[..., _Agent]:
    """v1.3.6's deprecated function ``old``: it warns ``DeprecationWarning`` and returns
    ``cls(...)``, which is itself the agent function.

    Its parameters are :data:`FACTORY_PARAMETERS` then ``extra``, taken from ``cls`` with
    ``defaults`` replacing theirs (``name`` needs one; :data:`REQUIRED` removes one); the
    other parameters of ``cls`` are accepted by keyword.
    """
    replacement = f"{cls.__module__}:{getattr(cls, '__qualname__', cls)}"
    by_name = inspect.signature(cls).parameters
    params = [by_name[name] for name in (*FACTORY_PARAMETERS, *extra)]
    var_keyword = inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)
    signature = _signature([*params, var_keyword], defaults)

    def factory(*args: Any, **kwargs: Any) -> _Agent:
        arguments = _keywords(signature, *args, **kwargs)
        warnings.warn(
            f"{cls.__module__}:{old} is deprecated; use {replacement} instead",
            DeprecationWarning,
            stacklevel=2,
        )
        return cls(**arguments)

    factory.__name__ = factory.__qualname__ = old
    factory.__module__ = cls.__module__
    factory.__doc__ = (
        f"Deprecated: build a :class:`{replacement}` (warns ``DeprecationWarning``); "
        "returns the instance, which is itself the agent function."
    )
    factory.__dict__["__signature__"] = signature  # read by inspect.signature
    return factory


def _index(params: list[inspect.Parameter], name: str) -> int:
    return next(i for i, p in enumerate(params) if p.name == name)


def _signature(params: list[inspect.Parameter], defaults: Mapping[str, Any]) -> inspect.Signature:
    unknown = set(defaults) - {p.name for p in params}
    if unknown:
        raise TypeError(f"no parameters named {', '.join(sorted(unknown))}")
    return inspect.Signature(
        [p.replace(default=defaults[p.name]) if p.name in defaults else p for p in params]
    )


def _keywords(signature: inspect.Signature, /, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Bind a call as ``signature`` does; every argument by name, defaults included."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    keywords: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            keywords.update(value)
        else:
            keywords[name] = value
    return keywords
