"""The offline swarm end to end on a real MAILRuntime: routing, actions, final answers."""

from __future__ import annotations

import asyncio
import json
import re
from contextlib import aclosing
from typing import Any

import pytest

from mail.core.agents import AgentCore
from mail.core.message import create_agent_address, create_user_address, make_request
from mail.examples.weather_dummy._forecast import CONDITIONS
from mail.testing import ScriptedAgent

FORMATS = ["responses", "completions"]
FORECAST = re.compile(
    r"^Forecast for (?P<place>[\w .]+) on (?P<date>\d{4}-\d{2}-\d{2}): "
    r"(?P<condition>[a-z ]+), (?P<temperature>-?\d+)°C\.$"
)
WEATHER_EVENTS = [
    "new_message",  # user -> supervisor
    "tool_call",  # send_request
    "new_message",  # supervisor -> weather
    "tool_call",  # get_weather_forecast
    "action_call",
    "action_complete",
    "new_message",  # ::action_complete:: -> weather
    "tool_call",  # send_response
    "new_message",  # weather -> supervisor
    "tool_call",  # task_complete
    "task_complete_call",
    "new_message",  # the final answer
    "task_complete",
]


def event_names(events: list[Any]) -> list[str]:
    return [str(e.event) for e in events]


def tool_calls(events: list[Any]) -> list[str]:
    return [e.extra_data["tool_name"] for e in events if e.event == "tool_call"]


def is_subsequence(needle: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(item in it for item in needle)


@pytest.mark.parametrize("tool_format", FORMATS)
async def test_weather_question(offline_swarm: Any, ask: Any, tool_format: str) -> None:
    rt = offline_swarm(tool_format)
    final, events = await ask(rt, "What's the weather in Tokyo tomorrow?")
    assert final["msg_type"] == "broadcast_complete"
    assert final["message"]["subject"] == "::task_complete::"
    match = FORECAST.match(final["message"]["body"])
    assert match is not None, final["message"]["body"]
    assert match["place"] == "Tokyo"
    assert match["condition"] in CONDITIONS
    assert -15 <= int(match["temperature"]) <= 35
    assert event_names(events) == WEATHER_EVENTS
    assert tool_calls(events) == [
        "send_request",
        "get_weather_forecast",
        "send_response",
        "task_complete",
    ]
    [action] = [e for e in events if e.event == "action_call"]
    assert '"location":"Tokyo","days_ahead":1,"metric":true' in action.description
    [result] = [e for e in events if e.event == "action_complete"]
    forecast = json.loads(result.description.split("\n", 1)[1])
    assert forecast["date"] == match["date"]
    assert forecast["temperature"] == int(match["temperature"])


@pytest.mark.parametrize("tool_format", FORMATS)
async def test_math_question(offline_swarm: Any, ask: Any, tool_format: str) -> None:
    rt = offline_swarm(tool_format)
    final, events = await ask(rt, "What is 12 * (3 + 4)?")
    assert final["message"]["body"] == "12 * (3 + 4) = 84"
    assert tool_calls(events) == [
        "send_request",
        "calculate_expression",
        "send_response",
        "task_complete",
    ]
    assert event_names(events)[-3:] == ["task_complete_call", "new_message", "task_complete"]


async def test_both_questions_in_one_message(offline_swarm: Any, ask: Any) -> None:
    rt = offline_swarm()
    final, events = await ask(rt, "Weather in Paris today, and what is 10 / 4?")
    body = final["message"]["body"]
    lines = body.split("\n")
    assert lines[0] == "Here is what I found:"
    assert FORECAST.match(lines[1].removeprefix("- "))
    assert "Paris" in lines[1]
    assert lines[2] == "- 10 / 4 = 2.5"
    names = event_names(events)
    assert names.count("action_call") == 2
    assert names.count("action_complete") == 2
    assert names.count("task_complete_call") == 1
    calls = tool_calls(events)
    assert calls[:2] == ["send_request", "send_request"]  # both requests in the first turn
    assert sorted(calls) == sorted(
        ["send_request"] * 2
        + ["get_weather_forecast", "calculate_expression"]
        + ["send_response"] * 2
        + ["await_message", "task_complete"]
    )
    assert calls[-1] == "task_complete"
    assert is_subsequence(
        ["new_message", "tool_call", "tool_call", "action_call", "task_complete_call"], names
    )


@pytest.mark.parametrize("tool_format", FORMATS)
async def test_neither(offline_swarm: Any, ask: Any, tool_format: str) -> None:
    rt = offline_swarm(tool_format)
    final, events = await ask(rt, "Tell me a joke")
    assert final["message"]["body"].startswith(
        "Hello! I am the supervisor of an offline demo swarm"
    )
    assert event_names(events) == [
        "new_message",
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]


async def test_action_errors_reach_the_user_as_sentences(offline_swarm: Any, ask: Any) -> None:
    rt = offline_swarm()
    final, _ = await ask(rt, "calculate 1 / (2 - 2)")
    assert (
        final["message"]["body"] == "Sorry, I could not evaluate '1 / (2 - 2)': division by zero."
    )
    final, _ = await ask(rt, "what is 10 / 3")
    assert final["message"]["body"] == "10 / 3 ≈ 3.333333"
    final, _ = await ask(rt, "what is 9 ** 9 ** 9")
    assert final["message"]["body"] == (
        "Sorry, I could not evaluate '9 ** 9 ** 9': unable to evaluate expression."
    )


async def test_many_questions_at_once(offline_swarm: Any, ask: Any) -> None:
    rt = offline_swarm()
    questions = [f"What is {n} * {n}?" for n in range(1, 21)]
    answers = await asyncio.gather(*(ask(rt, q) for q in questions))
    assert [final["message"]["body"] for final, _ in answers] == [
        f"{n} * {n} = {n * n}" for n in range(1, 21)
    ]


async def test_follow_up_in_the_same_task(offline_swarm: Any, ask: Any) -> None:
    rt = offline_swarm("completions")
    first, _ = await ask(rt, "What is 2 + 2?", task_id="t-follow")
    assert first["message"]["body"] == "2 + 2 = 4"
    second, _ = await ask(rt, "And 3 * 3?", task_id="t-follow", resume_from="user_response")
    assert second["message"]["body"] == "3 * 3 = 9"


async def test_missing_action_is_reported(offline_swarm: Any, ask: Any) -> None:
    rt = offline_swarm(actions={})
    final, events = await ask(rt, "Weather in Lima?")
    assert final["message"]["body"] == (
        "Sorry, I could not get a forecast for Lima: action not found"
    )
    assert "action_error" in event_names(events)


async def test_failing_helper_ends_with_an_apology(offline_swarm: Any) -> None:
    gate = asyncio.Event()  # math fails once the weather answer has reached the supervisor
    broken = AgentCore(
        ScriptedAgent([RuntimeError("out of order")], gate=gate),
        ["supervisor"],
        actions=["calculate_expression"],
    )
    rt = offline_swarm(agents={"math": broken})
    question = make_request(
        task_id="t-sorry",
        sender=create_user_address("u1"),
        recipient=create_agent_address("supervisor"),
        subject="New Message",
        body="Weather in Oslo and 1 + 1?",
    )
    task = await rt.submit(question)
    async with asyncio.timeout(10), aclosing(task.log.follow()) as log:
        async for event in log:
            sent = event.extra_data.get("full_message", {}).get("message", {})
            if sent.get("sender", {}).get("address") == "weather":
                break
    gate.set()
    final = await rt.wait_for_task("t-sorry", timeout=10)
    events = rt.get_events("t-sorry")
    body = final["message"]["body"]
    assert body.startswith("Sorry, I could not finish this: Agent 'math' failed")
    assert "out of order" in body
    assert "Oslo" in body  # what arrived before the failure is kept
    assert event_names(events).count("task_complete_call") == 1


async def test_step_limit_is_respected(offline_swarm: Any, ask: Any) -> None:
    rt = offline_swarm(max_steps=2)
    final, _ = await ask(rt, "Weather in Oslo?")
    assert final["message"]["body"].startswith("Sorry, I could not finish this: I ran out of steps")


async def test_breakpoint_on_the_forecast_action() -> None:
    from mail.examples.offline import offline_runtime

    rt = offline_runtime("u1", breakpoint_tools=["get_weather_forecast"])
    rt.start()

    def message(body: str) -> Any:
        return make_request(
            task_id="t-bp",
            sender=create_user_address("u1"),
            recipient=create_agent_address("supervisor"),
            subject="New Message",
            body=body,
        )

    try:
        paused = await rt.submit_and_wait(message("Weather in Oslo?"), timeout=10)
        assert paused["message"]["subject"] == "::breakpoint_tool_call::"
        [call] = json.loads(paused["message"]["body"])
        assert json.loads(call["arguments"]) == {
            "location": "Oslo",
            "days_ahead": 0,
            "metric": True,
        }
        answer = {
            "location": "Oslo",
            "date": "2030-01-01",
            "condition": "clear",
            "temperature": 3,
            "units": "C",
        }
        final = await rt.submit_and_wait(
            message(""),
            timeout=10,
            resume_from="breakpoint_tool_call",
            breakpoint_tool_caller="weather",
            breakpoint_tool_call_result=[
                {"call_id": call["call_id"], "content": json.dumps(answer)}
            ],
        )
    finally:
        await rt.shutdown(timeout=1.0)
    assert final["message"]["body"] == "Forecast for Oslo on 2030-01-01: clear, 3°C."
