"""The LLM swarms of our swarms.json, end to end, against a scripted OpenAI-compatible server.

LiteLLM makes real HTTP calls; the stub plays the LiteLLM proxy (``example``) or the
provider (``example-no-proxy`` with an ``api_base`` agent parameter).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mail.api import MAILSwarmTemplate
from mail.testing.llm import StubLLMServer

SWARMS = Path(__file__).resolve().parents[2] / "swarms.json"

WEATHER_TURNS: list[Any] = [
    # supervisor, on the user's question
    [("send_request", {"target": "weather", "subject": "Forecast", "body": "Tokyo tomorrow?"})],
    # weather: calls its action, then answers once the action completed
    [("get_weather_forecast", {"location": "Tokyo", "days_ahead": 1, "metric": True})],
    [("send_response", {"target": "supervisor", "subject": "Re: Forecast", "body": "Clear, 21 C"})],
    # supervisor: the final answer
    [("task_complete", {"finish_message": "Tokyo tomorrow: clear, 21 C."})],
]


@pytest.fixture
async def llm() -> AsyncIterator[StubLLMServer]:
    async with StubLLMServer() as server:
        yield server


async def run_weather_task(template: MAILSwarmTemplate, llm: StubLLMServer) -> dict[str, Any]:
    llm.script(*WEATHER_TURNS)
    swarm = template.instantiate({"user_token": "user-key-1"}, user_id="alice")
    try:
        final, events = await swarm.post_message(
            "Will it be sunny in Tokyo tomorrow?", show_events=True, timeout=60
        )
    finally:
        await swarm.shutdown()
    assert events is not None
    names = [e.event for e in events]
    assert names.count("action_call") == 1
    assert "action_complete" in names and names[-1] == "task_complete"
    action = next(e for e in events if e.event == "action_complete")
    assert json.loads(action.description.split("\n", 1)[1])["location"] == "Tokyo"
    return {"final": final, "events": events}


async def test_example_swarm_through_the_litellm_proxy(
    llm: StubLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # LiteLLM's proxy provider reads these; they belong to the dependency, not to mail
    monkeypatch.setenv("LITELLM_PROXY_API_BASE", llm.base_url)
    monkeypatch.setenv("LITELLM_PROXY_API_KEY", "proxy-key")
    template = MAILSwarmTemplate.from_swarm_json_file("example", SWARMS)
    result = await run_weather_task(template, llm)
    assert result["final"]["message"]["body"] == "Tokyo tomorrow: clear, 21 C."
    assert len(llm.requests) == len(WEATHER_TURNS)
    first = llm.requests[0]
    assert first.model.endswith("claude-opus-4-5-20251101")
    assert first.authorization == "Bearer user-key-1"  # the caller's token reaches the proxy
    assert "task_complete" in first.tool_names and "send_request" in first.tool_names
    weather_call = llm.requests[1]
    assert "get_weather_forecast" in weather_call.tool_names
    assert "task_complete" not in weather_call.tool_names
    # the system prompt describes the supervisor's contacts, built from the swarm
    system = weather_call.messages[0]
    assert system["role"] == "system"
    assert "Name: supervisor" in system["content"]
    assert "Name: weather" in llm.requests[0].messages[0]["content"]


async def test_example_no_proxy_swarm_with_an_api_base(llm: StubLLMServer) -> None:
    data = {s["name"]: s for s in json.loads(SWARMS.read_text())}["example-no-proxy"]
    for agent in data["agents"]:
        agent["agent_params"].update(api_base=llm.base_url, api_key="provider-key")
    template = MAILSwarmTemplate.from_swarms_json(data)
    result = await run_weather_task(template, llm)
    assert result["final"]["message"]["body"] == "Tokyo tomorrow: clear, 21 C."
    assert {r.model for r in llm.requests} == {"gpt-5-mini"}
    assert {r.authorization for r in llm.requests} == {"Bearer provider-key"}


async def test_an_llm_failure_is_reported_to_the_agent_and_the_task_still_completes(
    llm: StubLLMServer,
) -> None:
    from mail.testing.llm import StubReply

    data = {s["name"]: s for s in json.loads(SWARMS.read_text())}["example-no-proxy"]
    for agent in data["agents"]:
        agent["agent_params"].update(api_base=llm.base_url, api_key="k", max_retries=0, timeout=5)
    template = MAILSwarmTemplate.from_swarms_json(data)
    # the supervisor's first call fails; re-prompted with the error, it answers
    llm.script(
        StubReply.http_error(500), [("task_complete", {"finish_message": "answered after a retry"})]
    )
    swarm = template.instantiate({}, user_id="alice")
    try:
        final, events = await swarm.post_message("hello", show_events=True, timeout=30)
    finally:
        await swarm.shutdown()
    assert final["message"]["body"] == "answered after a retry"
    assert events is not None
    errors = [e for e in events if e.event == "agent_error"]
    assert len(errors) == 1 and "supervisor" in errors[0].description
    retry_prompt = llm.requests[1].messages[-1]["content"]
    assert "::agent_error::" in retry_prompt and "Your previous turn failed" in retry_prompt


async def test_a_failing_llm_is_retried_and_the_providers_words_reach_the_task_events(
    llm: StubLLMServer,
) -> None:
    from mail.core._dispatch import MAX_AGENT_RETRIES
    from mail.testing.llm import StubReply

    data = {s["name"]: s for s in json.loads(SWARMS.read_text())}["example-no-proxy"]
    for agent in data["agents"]:
        agent["agent_params"].update(
            api_base=llm.base_url, api_key="k", max_retries=2, retry_backoff=0.01, timeout=5
        )
    template = MAILSwarmTemplate.from_swarms_json(data)
    llm.rule = lambda _body: StubReply.http_error(503, "model overloaded, try again later")
    swarm = template.instantiate({}, user_id="alice")
    try:
        final, events = await swarm.post_message("hello", show_events=True, timeout=30)
    finally:
        await swarm.shutdown()
    # each turn: one call and two retries; the runtime re-prompts the agent once
    assert len(llm.requests) == 3 * (MAX_AGENT_RETRIES + 1)
    assert events is not None
    errors = [e for e in events if e.event == "agent_error"]
    assert len(errors) == MAX_AGENT_RETRIES + 1
    for error in errors:
        assert "model overloaded, try again later" in error.description
        assert "after 3 attempts" in error.description
    [task_error] = [e for e in events if e.event == "task_error"]
    assert "model overloaded, try again later" in task_error.description
    assert "model overloaded, try again later" in final["message"]["body"]


async def test_the_example_rule_plays_the_swarm_for_any_number_of_tasks() -> None:
    from mail.testing.llm import example_swarm_rule

    data = {s["name"]: s for s in json.loads(SWARMS.read_text())}["example-no-proxy"]
    async with StubLLMServer(rule=example_swarm_rule) as llm:
        for agent in data["agents"]:
            agent["agent_params"].update(api_base=llm.base_url, api_key="k", timeout=10)
        swarm = MAILSwarmTemplate.from_swarms_json(data).instantiate({}, user_id="alice")
        try:
            weather, _ = await swarm.post_message("Weather in Lisbon tomorrow?", timeout=60)
            math, _ = await swarm.post_message("What is 12 * (3 + 4)?", timeout=60)
            again, _ = await swarm.post_message("Is it raining in New York?", timeout=60)
        finally:
            await swarm.shutdown()
    assert weather["message"]["body"].startswith("Lisbon on ")
    assert math["message"]["body"] == "12 * (3 + 4) = 84"
    assert again["message"]["body"].startswith("New York on ")
    assert llm.unscripted == 0
