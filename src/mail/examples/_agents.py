"""How the LLM example agents are built from the factories (private).

Each example agent is a subclass of a factory class that only changes the defaults of
``llm`` and ``system``, plus the original's deprecated ``factory_<kind>_dummy`` function::

    class LiteLLMMathFunction(ExampleAgent, LiteLLMAgentFunction, prompt=SYSPROMPT): ...

    factory_math_dummy = example_factory(LiteLLMMathFunction, "math")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from mail.examples._params import DEFAULT_LLM
from mail.factories import V1_SUBCLASS_ORDER, LiteLLMAgentFunction, deprecated_factory, rebind

__all__ = ["ExampleAgent", "example_factory"]

_Agent = TypeVar("_Agent", bound=LiteLLMAgentFunction)


class ExampleAgent:
    """Mixin of the LLM example agents, listed before their factory class.

    A subclass given ``prompt=...`` takes the factory class's parameters in v1.3.6's order
    for the example agents (``_debug_include_mail_tools`` right after ``use_proxy``), with
    ``llm`` defaulting to :data:`~mail.examples._params.DEFAULT_LLM` and ``system`` to
    ``prompt``. Subclasses without ``prompt`` inherit that constructor.
    """

    if TYPE_CHECKING:  # what type checkers see; at run time the factory class's applies

        def __init__(
            self,
            name: str,
            comm_targets: Sequence[str],
            tools: Sequence[Any],
            llm: str = ...,
            system: str = ...,
            *args: Any,
            **kwargs: Any,
        ) -> None: ...

    def __init_subclass__(cls, *, prompt: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if prompt is not None:
            rebind(move=V1_SUBCLASS_ORDER, llm=DEFAULT_LLM, system=prompt)(cls)


def example_factory(cls: type[_Agent], kind: str) -> Callable[..., _Agent]:
    """The original's deprecated ``factory_<kind>_dummy(comm_targets, tools, user_token="",
    llm=..., system=..., name=kind, ...)``: it warns ``DeprecationWarning`` and returns
    ``cls(...)``."""
    return deprecated_factory(cls, f"factory_{kind}_dummy", name=kind)
