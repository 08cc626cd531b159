"""How the LLM example agents are built from the factories (private).

Each example agent is a subclass of a factory class that only changes the defaults of
``llm`` and ``system``, plus the original's deprecated ``factory_<kind>_dummy`` function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from mail.examples._params import DEFAULT_LLM
from mail.factories._signature import V1_SUBCLASS_ORDER, deprecated_factory, rebind
from mail.factories.base import LiteLLMAgentFunction

__all__ = ["example_agent", "example_factory"]

_Agent = TypeVar("_Agent", bound=LiteLLMAgentFunction)


def example_agent(prompt: str) -> Callable[[type[_Agent]], type[_Agent]]:
    """Class decorator of an example agent: ``llm`` defaults to :data:`DEFAULT_LLM` and
    ``system`` to ``prompt``; the parameters are in v1.3.6's order for these classes
    (``_debug_include_mail_tools`` right after ``use_proxy``)."""
    return rebind(move=V1_SUBCLASS_ORDER, llm=DEFAULT_LLM, system=prompt)


def example_factory(cls: type[_Agent], kind: str) -> Callable[..., _Agent]:
    """The original's deprecated ``factory_<kind>_dummy(comm_targets, tools, user_token="",
    llm=..., system=..., name=kind, ...)``: it warns ``DeprecationWarning`` and returns
    ``cls(...)``."""
    return deprecated_factory(cls, f"factory_{kind}_dummy", name=kind)
