"""Fixtures for the example tests.

Test modules are imported with ``--import-mode=importlib`` and cannot import this file,
so helpers are handed out through fixtures:

* ``chat`` -- builds agent histories by hand: ``chat.user(...)``, ``chat.agent(...)``,
  ``chat.system(...)`` return the runtime's XML user turns; ``await chat.turn(agent,
  history)`` runs an agent and appends its output the way the runtime does;
  ``chat.result(history, call, text)`` appends a tool result.
* ``offline_swarm(tool_format="responses", **kw)`` -- a started :class:`MAILRuntime`
  with the offline agents and the example actions, wired directly with ``AgentCore``
  and ``ActionCore``; shut down after the test.
* ``ask(rt, body, task_id=None, **kw)`` -- submit a user request and wait for the final
  message; returns ``(final, events)``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import pytest

from mail.core.actions import ActionCore
from mail.core.agents import AgentCore
from mail.core.message import (
    build_mail_xml,
    create_agent_address,
    create_system_address,
    create_user_address,
    make_broadcast,
    make_request,
    make_response,
)
from mail.core.runtime import MAILRuntime
from mail.core.tools import AgentToolCall
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

USER = "u1"
SWARM = "demo"


class Chat:
    """Builds the history items an agent would see."""

    task_id = "t-unit"

    def user(
        self, body: str, *, to: str = "supervisor", subject: str = "New Message"
    ) -> dict[str, Any]:
        message = make_request(
            task_id=self.task_id,
            sender=create_user_address(USER),
            recipient=create_agent_address(to),
            subject=subject,
            body=body,
            sender_swarm=SWARM,
            recipient_swarm=SWARM,
        )
        return dict(build_mail_xml(message))

    def agent(
        self,
        sender: str,
        body: str,
        *,
        to: str = "supervisor",
        subject: str = "Re",
        request: bool = False,
    ) -> dict[str, Any]:
        make = make_request if request else make_response
        message = make(
            task_id=self.task_id,
            sender=create_agent_address(sender),
            recipient=create_agent_address(to),
            subject=subject,
            body=body,
        )
        return dict(build_mail_xml(message))

    def system(
        self, subject: str, body: str, *, to: str, broadcast: bool = False
    ) -> dict[str, Any]:
        if broadcast:
            message = make_broadcast(
                task_id=self.task_id,
                sender=create_system_address(SWARM),
                recipients=[create_agent_address(to)],
                subject=subject,
                body=body,
                sender_swarm=SWARM,
                recipient_swarms=[SWARM],
            )
        else:
            message = make_response(
                task_id=self.task_id,
                sender=create_system_address(SWARM),
                recipient=create_agent_address(to),
                subject=subject,
                body=body,
                sender_swarm=SWARM,
                recipient_swarm=SWARM,
            )
        return dict(build_mail_xml(message))

    async def turn(
        self, agent: Any, history: list[dict[str, Any]], tool_choice: Any = "required"
    ) -> list[AgentToolCall]:
        text, calls = await agent(history, tool_choice)
        assert text is None
        assert calls
        first = calls[0]
        if first.completion:
            history.append(first.completion)
        else:
            history.extend(first.responses)
        return calls

    @staticmethod
    def result(history: list[dict[str, Any]], call: AgentToolCall, content: str) -> None:
        history.append(call.create_response_msg(content))


@pytest.fixture
def chat() -> Chat:
    return Chat()


OfflineSwarm = Callable[..., MAILRuntime]


@pytest.fixture
async def offline_swarm() -> AsyncIterator[OfflineSwarm]:
    runtimes: list[MAILRuntime] = []

    def build(
        tool_format: Literal["completions", "responses"] = "responses",
        *,
        agents: dict[str, AgentCore] | None = None,
        actions: dict[str, ActionCore] | None = None,
        max_steps: int | None = None,
    ) -> MAILRuntime:
        wiring: dict[str, Any] = {
            "tools": [],
            "enable_entrypoint": False,
            "enable_interswarm": False,
            "tool_format": tool_format,
            "can_complete_tasks": False,
            "exclude_tools": [],
            "user_token": "",
        }
        cores = {
            "supervisor": AgentCore(
                function=OfflineSupervisorFunction(
                    name="supervisor", comm_targets=["weather", "math"], **wiring
                ),
                comm_targets=["weather", "math"],
                enable_entrypoint=True,
                can_complete_tasks=True,
                tool_format=tool_format,
            ),
            "weather": AgentCore(
                function=OfflineWeatherFunction(
                    name="weather", comm_targets=["supervisor"], **wiring
                ),
                comm_targets=["supervisor"],
                actions=["get_weather_forecast"],
                tool_format=tool_format,
            ),
            "math": AgentCore(
                function=OfflineMathFunction(name="math", comm_targets=["supervisor"], **wiring),
                comm_targets=["supervisor"],
                actions=["calculate_expression"],
                tool_format=tool_format,
            ),
        }
        cores.update(agents or {})
        action_cores = {
            "get_weather_forecast": ActionCore(
                function=get_weather_forecast,
                name="get_weather_forecast",
                parameters=GET_WEATHER_FORECAST_PARAMETERS,
            ),
            "calculate_expression": ActionCore(
                function=calculate_expression,
                name="calculate_expression",
                parameters=CALCULATE_EXPRESSION_PARAMETERS,
            ),
        }
        rt = MAILRuntime(
            cores,
            action_cores if actions is None else actions,
            user_id=USER,
            swarm_name=SWARM,
            entrypoint="supervisor",
        )
        runtimes.append(rt)
        rt.start(max_steps=max_steps)
        return rt

    yield build
    for rt in runtimes:
        await rt.shutdown(timeout=1.0)


@pytest.fixture
def ask() -> Callable[..., Any]:
    async def run(
        rt: MAILRuntime, body: str, task_id: str | None = None, **kwargs: Any
    ) -> tuple[dict[str, Any], list[Any]]:
        task_id = task_id or str(uuid.uuid4())
        message = make_request(
            task_id=task_id,
            sender=create_user_address(USER),
            recipient=create_agent_address("supervisor"),
            subject="New Message",
            body=body,
            sender_swarm=SWARM,
            recipient_swarm=SWARM,
        )
        final = await rt.submit_and_wait(message, timeout=10, **kwargs)
        return dict(final), rt.get_events(task_id)

    return run
