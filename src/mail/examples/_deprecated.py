"""The original's deprecated factory functions of the example agents, as thin wrappers."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from mail.examples._params import DEFAULT_LLM

__all__ = ["deprecated_factory"]

_Agent = TypeVar("_Agent")


def deprecated_factory(cls: Callable[..., _Agent], old: str, agent: str) -> Callable[..., _Agent]:
    """A function ``old(comm_targets, tools, user_token="", llm=..., system=None,
    name=agent, **kwargs)`` that warns ``DeprecationWarning`` and returns ``cls(...)``
    (the instance is itself the agent function; ``system=None`` keeps its prompt)."""
    replacement = f"{cls.__module__}:{getattr(cls, '__name__', cls)}"

    def factory(  # the original's positional order
        comm_targets: list[str],
        tools: list[dict[str, Any]],
        user_token: str = "",
        llm: str = DEFAULT_LLM,
        system: str | None = None,
        name: str = agent,
        **kwargs: Any,
    ) -> _Agent:
        warnings.warn(
            f"mail.examples:{old} is deprecated; use {replacement} instead",
            DeprecationWarning,
            stacklevel=2,
        )
        if system is not None:
            kwargs["system"] = system
        return cls(
            name=name,
            comm_targets=comm_targets,
            tools=tools,
            llm=llm,
            user_token=user_token,
            **kwargs,
        )

    factory.__name__ = factory.__qualname__ = old
    factory.__doc__ = (
        f"Deprecated: build a ``{replacement}`` (warns ``DeprecationWarning``); "
        "returns the instance, which is itself the agent function."
    )
    return factory
