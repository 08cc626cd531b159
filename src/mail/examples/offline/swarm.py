"""The offline demo swarm, ready to run: as a swarms.json entry or as a runtime.

Agents ``supervisor`` (entrypoint, completes tasks), ``weather`` and ``math``; actions
``get_weather_forecast`` and ``calculate_expression``. No LLM and no network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from mail.core.actions import ActionCore
from mail.core.agents import AgentCore
from mail.examples.math_dummy._calculator import (
    CALCULATE_EXPRESSION_PARAMETERS,
    calculate_expression,
)
from mail.examples.offline.agents import (
    OfflineMathFunction,
    OfflineSupervisorFunction,
    OfflineWeatherFunction,
)
from mail.examples.weather_dummy._forecast import (
    GET_WEATHER_FORECAST_PARAMETERS,
    get_weather_forecast,
)

if TYPE_CHECKING:
    from mail.core.runtime import MAILRuntime

__all__ = ["offline_runtime", "offline_swarm_definition"]

_AGENTS = "python::mail.examples.offline.agents"


def offline_swarm_definition(
    name: str = "offline",
    version: str = "1.3.6",
    tool_format: Literal["completions", "responses"] = "responses",
) -> dict[str, Any]:
    """A swarms.json swarm object for the offline demo swarm (a new dict on every call).

    Its actions come from ``action_imports`` (the ``MAILAction`` objects of
    :mod:`mail.examples.weather_dummy.actions` and :mod:`mail.examples.math_dummy.actions`).
    """

    def agent(agent_name: str, factory: str, targets: list[str], **extra: Any) -> dict[str, Any]:
        return {
            "name": agent_name,
            "factory": f"{_AGENTS}:{factory}",
            "comm_targets": targets,
            "tool_format": tool_format,
            "agent_params": {},
            **extra,
        }

    return {
        "name": name,
        "version": version,
        "description": "Offline demo swarm: scripted agents for weather and arithmetic, no LLM.",
        "keywords": ["demo", "offline"],
        "public": True,
        "entrypoint": "supervisor",
        "agents": [
            agent(
                "supervisor",
                "OfflineSupervisorFunction",
                ["weather", "math"],
                enable_entrypoint=True,
                can_complete_tasks=True,
            ),
            agent(
                "weather",
                "OfflineWeatherFunction",
                ["supervisor"],
                actions=["get_weather_forecast"],
            ),
            agent("math", "OfflineMathFunction", ["supervisor"], actions=["calculate_expression"]),
        ],
        "actions": [],
        "action_imports": [
            "python::mail.examples.weather_dummy.actions:get_weather_forecast",
            "python::mail.examples.math_dummy.actions:calculate_expression",
        ],
    }


def offline_runtime(
    user_id: str = "offline-user",
    *,
    swarm_name: str = "offline",
    tool_format: Literal["completions", "responses"] = "responses",
    **runtime_kwargs: Any,
) -> MAILRuntime:
    """A :class:`~mail.core.runtime.MAILRuntime` running the offline swarm for ``user_id``.

    ``runtime_kwargs`` go to the runtime (``user_role``, ``breakpoint_tools``, ...). Start
    it with ``runtime.start()`` (or use ``run_task``) and stop it with ``shutdown()``.
    """
    wiring: dict[str, Any] = {"tools": [], "tool_format": tool_format}
    agents = {
        "supervisor": AgentCore(
            OfflineSupervisorFunction("supervisor", ["weather", "math"], **wiring),
            ["weather", "math"],
            enable_entrypoint=True,
            can_complete_tasks=True,
            tool_format=tool_format,
        ),
        "weather": AgentCore(
            OfflineWeatherFunction("weather", ["supervisor"], **wiring),
            ["supervisor"],
            actions=["get_weather_forecast"],
            tool_format=tool_format,
        ),
        "math": AgentCore(
            OfflineMathFunction("math", ["supervisor"], **wiring),
            ["supervisor"],
            actions=["calculate_expression"],
            tool_format=tool_format,
        ),
    }
    actions = {
        "get_weather_forecast": ActionCore(
            get_weather_forecast, "get_weather_forecast", GET_WEATHER_FORECAST_PARAMETERS
        ),
        "calculate_expression": ActionCore(
            calculate_expression, "calculate_expression", CALCULATE_EXPRESSION_PARAMETERS
        ),
    }
    # here, not at the top: loading the swarm's agents (this package) needs no runtime
    from mail.core.runtime import MAILRuntime  # noqa: PLC0415

    return MAILRuntime(
        agents,
        actions,
        user_id,
        swarm_name=swarm_name,
        entrypoint="supervisor",
        **runtime_kwargs,
    )
