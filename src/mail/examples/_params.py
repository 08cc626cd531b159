"""Default settings of the LLM example agents, and their templates' arguments."""

from __future__ import annotations

import importlib
from typing import Any

from mail.errors import SwarmDefinitionError

__all__ = [
    "DEFAULT_LLM",
    "EXAMPLE_AGENTS",
    "agent_params",
    "analyst_agent_params",
    "consultant_agent_params",
    "example_agent_template_args",
    "math_agent_params",
    "supervisor_agent_params",
    "weather_agent_params",
]

#: The model the example agents use unless ``llm`` is given.
DEFAULT_LLM = "openai/gpt-5-mini"

# example name -> (factory reference, example package, action references, is supervisor)
_EXAMPLES: dict[str, tuple[str, str, tuple[str, ...], bool]] = {
    "supervisor": ("mail.factories.supervisor:LiteLLMSupervisorFunction", "supervisor", (), True),
    "weather": (
        "mail.examples.weather_dummy.agent:LiteLLMWeatherFunction",
        "weather_dummy",
        ("mail.examples.weather_dummy.actions:get_weather_forecast",),
        False,
    ),
    "math": (
        "mail.examples.math_dummy.agent:LiteLLMMathFunction",
        "math_dummy",
        ("mail.examples.math_dummy.actions:calculate_expression",),
        False,
    ),
    "consultant": (
        "mail.examples.consultant_dummy.agent:LiteLLMConsultantFunction",
        "consultant_dummy",
        (),
        False,
    ),
    "analyst": (
        "mail.examples.analyst_dummy.agent:LiteLLMAnalystFunction",
        "analyst_dummy",
        (),
        False,
    ),
}
#: The names :func:`example_agent_template_args` accepts.
EXAMPLE_AGENTS: tuple[str, ...] = tuple(_EXAMPLES)


def agent_params(package: str) -> dict[str, Any]:
    """``agent_params`` for the example ``package``: the default model and its prompt reference."""
    return {"llm": DEFAULT_LLM, "system": f"python::mail.examples.{package}.prompts:SYSPROMPT"}


#: ``agent_params`` of the example supervisor.
supervisor_agent_params = agent_params("supervisor")
#: ``agent_params`` of the example weather agent.
weather_agent_params = agent_params("weather_dummy")
#: ``agent_params`` of the example math agent.
math_agent_params = agent_params("math_dummy")
#: ``agent_params`` of the example consultant agent.
consultant_agent_params = agent_params("consultant_dummy")
#: ``agent_params`` of the example analyst agent.
analyst_agent_params = agent_params("analyst_dummy")


def _load(reference: str) -> Any:
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


def example_agent_template_args(name: str, comm_targets: list[str]) -> dict[str, Any]:
    """Keyword arguments of ``MAILAgentTemplate`` for the bundled example agent ``name``.

    ``name`` is one of :data:`EXAMPLE_AGENTS`. The result holds ``name``, ``factory`` (a
    ``python::`` reference), ``comm_targets``, ``actions`` (``MAILAction`` objects, so
    this imports :mod:`mail.api`), ``agent_params``, ``enable_entrypoint`` and
    ``can_complete_tasks`` (both true only for the supervisor). Raises
    :class:`~mail.errors.SwarmDefinitionError` for an unknown name.
    """
    if name not in _EXAMPLES:
        raise SwarmDefinitionError(
            f"unknown example agent {name!r}; choose one of {', '.join(EXAMPLE_AGENTS)}",
            field="name",
        )
    factory, package, actions, supervisor = _EXAMPLES[name]
    return {
        "name": name,
        "factory": f"python::{factory}",
        "comm_targets": list(comm_targets),
        "actions": [_load(reference) for reference in actions],
        "agent_params": agent_params(package),
        "enable_entrypoint": supervisor,
        "can_complete_tasks": supervisor,
    }
