"""Which tools each agent class offers the model (CONTRACT 5.4, 15.5), read from the requests
the stub LLM received."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from mail.factories import (
    LiteLLMActionAgentFunction,
    LiteLLMAgentFunction,
    LiteLLMSupervisorFunction,
    SupervisorFunction,
)
from mail.testing.llm import StubLLMServer

BASE = ["send_request", "send_response", "acknowledge_broadcast", "ignore_broadcast"]
BASE += ["await_message", "help"]
FORECAST = {
    "type": "function",
    "name": "get_forecast",
    "description": "Forecast for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}


async def offered(llm: StubLLMServer, agent: Any, user_turn: Any) -> list[str]:
    llm.script("ok")
    await agent([user_turn("hi")])
    names: list[str] = llm.requests[-1].tool_names
    return names


@pytest.mark.parametrize("tool_format", ["completions", "responses"])
async def test_plain_agent_gets_base_tools_then_its_actions(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, tool_format: str
) -> None:
    agent = make_agent(tools=[FORECAST], tool_format=tool_format)

    assert await offered(llm, agent, user_turn) == [*BASE, "get_forecast"]
    target = llm.requests[-1].json["tools"][0]
    params = (
        target["function"]["parameters"] if tool_format == "completions" else target["parameters"]
    )
    assert params["properties"]["target"]["enum"] == ["supervisor"]


async def test_plain_agent_that_may_complete_tasks_gets_task_complete(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    # the original offered it only to supervisor classes (CONTRACT 15.5)
    agent = make_agent(can_complete_tasks=True)

    assert await offered(llm, agent, user_turn) == [*BASE, "task_complete"]


async def test_supervisor_gets_supervisor_tools_and_always_completes(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    agent = make_agent(
        LiteLLMSupervisorFunction,
        name="supervisor",
        comm_targets=["analyst", "weather"],
        tools=[FORECAST],
        can_complete_tasks=False,  # forced on
    )

    names = await offered(llm, agent, user_turn)

    assert names == [*BASE, "get_forecast", "send_interrupt", "send_broadcast", "task_complete"]
    assert agent.can_complete_tasks is True
    assert isinstance(agent, SupervisorFunction)


async def test_supervisor_without_targets_only_gets_its_tools_and_task_complete(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    agent = make_agent(LiteLLMSupervisorFunction, comm_targets=[], tools=[FORECAST])

    assert await offered(llm, agent, user_turn) == ["get_forecast", "task_complete"]


async def test_interswarm_supervisor_gets_interswarm_tools_and_free_targets(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    agent = make_agent(
        LiteLLMSupervisorFunction, comm_targets=["analyst@remote"], enable_interswarm=True
    )

    names = await offered(llm, agent, user_turn)

    assert names == [
        *BASE,
        "send_interrupt",
        "send_broadcast",
        "send_interswarm_broadcast",
        "discover_swarms",
        "task_complete",
    ]
    target = llm.requests[-1].json["tools"][0]["parameters"]["properties"]["target"]
    assert "enum" not in target
    assert "agent-name@swarm-name" in target["description"]


async def test_excluded_tools_are_not_offered(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    agent = make_agent(
        LiteLLMSupervisorFunction,
        comm_targets=["analyst"],
        exclude_tools=["help", "send_broadcast", "task_complete", "get_forecast"],
        tools=[FORECAST],
    )

    names = await offered(llm, agent, user_turn)

    # exclude_tools removes MAIL tools only, never actions
    assert names == [
        "send_request",
        "send_response",
        "acknowledge_broadcast",
        "ignore_broadcast",
        "await_message",
        "get_forecast",
        "send_interrupt",
    ]


async def test_action_agent_never_gets_task_complete(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    agent = make_agent(LiteLLMActionAgentFunction, tools=[FORECAST], can_complete_tasks=True)

    assert await offered(llm, agent, user_turn) == [*BASE, "get_forecast"]
    assert agent.can_complete_tasks is False


async def test_action_agent_without_tools_works(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    # regression: the original raised IndexError on tools=[] (CONTRACT 15.9)
    agent = make_agent(LiteLLMActionAgentFunction, tools=[])

    assert await offered(llm, agent, user_turn) == BASE


async def test_debug_flag_drops_the_base_mail_tools(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    agent = make_agent(LiteLLMSupervisorFunction, tools=[FORECAST], _debug_include_mail_tools=False)

    names = await offered(llm, agent, user_turn)

    assert names == ["get_forecast", "send_interrupt", "send_broadcast", "task_complete"]


class Lookup(BaseModel):
    """Look a word up in the dictionary."""

    word: str = Field(description="The word.")


@pytest.mark.parametrize("tool_format", ["completions", "responses"])
async def test_tools_are_normalized_to_the_agent_format(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, tool_format: str
) -> None:
    completions_spec = {
        "type": "function",
        "function": {"name": "get_forecast", "parameters": FORECAST["parameters"]},
    }
    agent = make_agent(
        comm_targets=[], tools=[completions_spec, FORECAST, Lookup], tool_format=tool_format
    )

    assert await offered(llm, agent, user_turn) == ["get_forecast", "get_forecast", "Lookup"]
    for spec in llm.requests[-1].json["tools"]:
        assert ("function" in spec) is (tool_format == "completions")


def test_a_tool_that_is_not_a_spec_is_a_definition_error() -> None:
    from mail.errors import SwarmDefinitionError

    with pytest.raises(SwarmDefinitionError, match="agent 'x', field 'tools'"):
        LiteLLMAgentFunction("x", [], ["not a tool"], "openai/m")
