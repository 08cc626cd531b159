"""The offline agents, called directly with hand-built histories (no runtime)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mail.errors import SwarmDefinitionError
from mail.examples.offline import (
    OfflineMathFunction,
    OfflineSupervisorFunction,
    OfflineWeatherFunction,
)
from mail.examples.offline._history import Transcript, action_result

FORMATS = ["responses", "completions"]
WIRING: dict[str, Any] = {
    "tools": [],
    "enable_entrypoint": True,
    "enable_interswarm": False,
    "can_complete_tasks": True,
    "exclude_tools": [],
    "user_token": "secret",
}


def supervisor(tool_format: str = "responses", targets: list[str] | None = None) -> Any:
    return OfflineSupervisorFunction(
        name="supervisor",
        comm_targets=["weather", "math"] if targets is None else targets,
        tool_format=tool_format,
        **WIRING,
    )


def names(calls: list[Any]) -> list[str]:
    return [c.tool_name for c in calls]


# --- supervisor ---------------------------------------------------------------------------


@pytest.mark.parametrize("tool_format", FORMATS)
async def test_weather_question_becomes_a_request_to_weather(chat: Any, tool_format: str) -> None:
    history = [chat.user("What's the weather in Tokyo tomorrow?")]
    [call] = await chat.turn(supervisor(tool_format), history)
    assert call.tool_name == "send_request"
    assert call.tool_args["target"] == "weather"
    assert "Tokyo" in call.tool_args["body"]
    assert "tomorrow" in call.tool_args["body"]
    if tool_format == "completions":
        assert history[-1]["role"] == "assistant"
        assert history[-1]["tool_calls"][0]["function"]["name"] == "send_request"
        assert call.responses == []
    else:
        assert history[-1]["type"] == "function_call"
        assert json.loads(history[-1]["arguments"]) == call.tool_args
        assert call.completion == {}


async def test_math_question_becomes_a_request_to_math(chat: Any) -> None:
    [call] = await chat.turn(supervisor(), [chat.user("calculate 6 times 7")])
    assert call.tool_args["target"] == "math"
    assert call.tool_args["body"].endswith(": 6 * 7")


async def test_both_questions_in_one_turn_then_wait_then_combine(chat: Any) -> None:
    agent = supervisor("completions")
    history = [chat.user("Weather in Paris, and what is 2 ** 8?")]
    calls = await chat.turn(agent, history)
    assert [(c.tool_name, c.tool_args["target"]) for c in calls] == [
        ("send_request", "weather"),
        ("send_request", "math"),
    ]
    for call in calls:
        chat.result(history, call, "SUCCESS: message sent")
    history.append(chat.agent("math", "2 ** 8 = 256"))  # the second request answers first
    assert names(await chat.turn(agent, history)) == ["await_message"]
    history.append(chat.system("::help::", "===== SUMMARY =====", to="supervisor", broadcast=True))
    assert names(await chat.turn(agent, history)) == ["await_message"]
    history.append(chat.agent("weather", "Forecast for Paris on 2025-03-14: clear, 20°C."))
    [final] = await chat.turn(agent, history)
    assert final.tool_name == "task_complete"
    assert final.tool_args["finish_message"] == (
        "Here is what I found:\n- Forecast for Paris on 2025-03-14: clear, 20°C.\n- 2 ** 8 = 256"
    )
    history.append(chat.system("::help::", "late", to="supervisor", broadcast=True))
    assert names(await chat.turn(agent, history)) == ["ignore_broadcast"]


async def test_other_messages_are_answered_directly(chat: Any) -> None:
    [call] = await chat.turn(supervisor(), [chat.user("Hi! Who are you?")])
    assert call.tool_name == "task_complete"
    text = call.tool_args["finish_message"]
    assert "offline" in text
    assert "weather" in text
    assert "12 * (3 + 4)" in text


async def test_missing_helpers_are_explained(chat: Any) -> None:
    [call] = await chat.turn(supervisor(targets=["math"]), [chat.user("Weather in Lima?")])
    assert call.tool_name == "task_complete"
    assert call.tool_args["finish_message"] == "I have no weather agent to ask for a forecast."
    [call] = await chat.turn(supervisor(targets=[]), [chat.user("Hello")])
    assert "no helpers" in call.tool_args["finish_message"]


async def test_helpers_are_found_by_name(chat: Any) -> None:
    agent = supervisor(targets=["weather_agent@other", "calculator"])
    [call] = await chat.turn(agent, [chat.user("Weather in Lima and 1+1?")])
    assert call.tool_args["target"] == "weather_agent@other"


@pytest.mark.parametrize(
    "subject", ["::agent_error::", "::tool_call_error::", "::invalid_recipient::"]
)
async def test_error_notices_end_the_task_with_an_apology(chat: Any, subject: str) -> None:
    agent = supervisor()
    history = [chat.user("Weather in Rome and 2+2?")]
    for call in await chat.turn(agent, history):
        chat.result(history, call, "SUCCESS: message sent")
    history.append(chat.agent("math", "2+2 = 4"))
    await chat.turn(agent, history)
    history.append(chat.system(subject, "Agent 'weather' failed: boom.\nmore", to="supervisor"))
    [call] = await chat.turn(agent, history)
    assert call.tool_name == "task_complete"
    assert call.tool_args["finish_message"] == (
        "Sorry, I could not finish this: Agent 'weather' failed: boom.\n\n"
        "What I found so far:\n- 2+2 = 4"
    )


async def test_step_limit_forces_an_answer(chat: Any) -> None:
    agent = supervisor()
    history = [chat.user("Weather in Rome?")]
    for call in await chat.turn(agent, history):
        chat.result(history, call, "SUCCESS: message sent")
    history.append(
        chat.system(
            "::maximum_steps_reached::", "You must now call `task_complete`", to="supervisor"
        )
    )
    [call] = await chat.turn(agent, history, {"type": "function", "name": "task_complete"})
    assert call.tool_name == "task_complete"
    assert call.tool_args["finish_message"].startswith("Sorry, I could not finish this: I ran out")


async def test_a_new_user_message_starts_a_new_question(chat: Any) -> None:
    agent = supervisor()
    history = [chat.user("What is 1+1?")]
    for call in await chat.turn(agent, history):
        chat.result(history, call, "SUCCESS: message sent")
    history.append(chat.agent("math", "1+1 = 2"))
    [done] = await chat.turn(agent, history)
    assert done.tool_args["finish_message"] == "1+1 = 2"
    chat.result(history, done, "SUCCESS: task completed")
    history.append(chat.user("And the weather in Bern?"))
    [call] = await chat.turn(agent, history)
    assert call.tool_args["target"] == "weather"
    assert "Bern" in call.tool_args["body"]


async def test_questions_from_other_agents_get_a_response(chat: Any) -> None:
    agent = supervisor()
    history = [chat.agent("boss@hq", "Hello there", subject="Hi", request=True)]
    [call] = await chat.turn(agent, history)
    assert call.tool_name == "send_response"
    assert call.tool_args["target"] == "boss@hq"
    assert call.tool_args["subject"] == "Re: Hi"


async def test_nothing_to_do_without_a_question(chat: Any) -> None:
    history = [chat.system("::help::", "help text", to="supervisor", broadcast=True)]
    assert names(await chat.turn(supervisor(), history)) == ["ignore_broadcast"]


# --- workers --------------------------------------------------------------------------------


@pytest.mark.parametrize("tool_format", FORMATS)
async def test_weather_runs_the_action_then_answers(chat: Any, tool_format: str) -> None:
    agent = OfflineWeatherFunction(
        name="weather", comm_targets=["supervisor"], tool_format=tool_format
    )
    history = [
        chat.agent(
            "supervisor",
            "What is the weather forecast for Tokyo tomorrow?",
            to="weather",
            subject="Weather forecast",
            request=True,
        )
    ]
    [call] = await chat.turn(agent, history)
    assert call.tool_name == "get_weather_forecast"
    assert call.tool_args == {"location": "Tokyo", "days_ahead": 1, "metric": True}
    result = {
        "location": "Tokyo",
        "date": "2025-03-15",
        "condition": "overcast",
        "temperature": 12,
        "units": "C",
    }
    chat.result(history, call, "SUCCESS: " + json.dumps(result))
    history.append(
        chat.system(
            "::action_complete::", "Action completed successfully", to="weather", broadcast=True
        )
    )
    [answer] = await chat.turn(agent, history)
    assert answer.tool_name == "send_response"
    assert answer.tool_args == {
        "target": "supervisor",
        "subject": "Re: Weather forecast",
        "body": "Forecast for Tokyo on 2025-03-15: overcast, 12°C.",
    }
    chat.result(history, answer, "SUCCESS: message sent")
    history.append(chat.system("::help::", "help", to="weather", broadcast=True))
    assert names(await chat.turn(agent, history)) == ["ignore_broadcast"]


async def test_weather_defaults_and_action_errors(chat: Any) -> None:
    agent = OfflineWeatherFunction(name="weather", comm_targets=["supervisor"])
    history = [chat.agent("supervisor", "Any rain?", to="weather", subject="Q", request=True)]
    [call] = await chat.turn(agent, history)
    assert call.tool_args == {"location": "San Francisco", "days_ahead": 0, "metric": True}
    chat.result(history, call, "SUCCESS: Error: 'location' must be a non-empty string")
    history.append(
        chat.system(
            "::action_complete::", "Action completed successfully", to="weather", broadcast=True
        )
    )
    [answer] = await chat.turn(agent, history)
    assert answer.tool_args["body"] == (
        "Sorry, I could not get a forecast for San Francisco: 'location' must be a non-empty string"
    )


async def test_math_runs_the_action_then_answers(chat: Any) -> None:
    agent = OfflineMathFunction(name="math", comm_targets=["supervisor"], tool_format="completions")
    history = [
        chat.agent(
            "supervisor",
            "Please evaluate this expression: 10 / 4",
            to="math",
            subject="Calculation",
            request=True,
        )
    ]
    [call] = await chat.turn(agent, history)
    assert call.tool_name == "calculate_expression"
    assert call.tool_args == {"expression": "10 / 4"}
    payload = {
        "expression": "10 / 4",
        "result": "2.5",
        "formatted_result": "2.500000",
        "precision": 6,
        "is_integer": False,
    }
    chat.result(history, call, "SUCCESS: " + json.dumps(payload))
    history.append(
        chat.system(
            "::action_complete::", "Action completed successfully", to="math", broadcast=True
        )
    )
    [answer] = await chat.turn(agent, history)
    assert answer.tool_args["body"] == "10 / 4 = 2.5"


async def test_math_reports_errors_and_unparsable_requests(chat: Any) -> None:
    agent = OfflineMathFunction(name="math", comm_targets=["supervisor"])
    history = [chat.agent("supervisor", "square root of two", to="math", request=True)]
    [call] = await chat.turn(agent, history)
    assert call.tool_args == {"expression": "square root of two"}
    chat.result(history, call, "SUCCESS: Error: invalid syntax")
    history.append(
        chat.system(
            "::action_complete::", "Action completed successfully", to="math", broadcast=True
        )
    )
    [answer] = await chat.turn(agent, history)
    assert (
        answer.tool_args["body"]
        == "Sorry, I could not evaluate 'square root of two': invalid syntax."
    )


async def test_worker_answers_an_error_notice_once(chat: Any) -> None:
    agent = OfflineMathFunction(name="math", comm_targets=["supervisor"], action="calc")
    history = [chat.agent("supervisor", "1+1", to="math", request=True)]
    [call] = await chat.turn(agent, history)
    assert call.tool_name == "calc"
    chat.result(history, call, "ERROR: action not found")
    history.append(chat.system("::action_error::", "Error: calc\naction calc not found", to="math"))
    [answer] = await chat.turn(agent, history)
    assert answer.tool_args["body"] == "Sorry, I could not evaluate '1+1': action not found."
    chat.result(history, answer, "ERROR: error sending message")
    history.append(chat.system("::tool_call_error::", "error sending message", to="math"))
    assert names(await chat.turn(agent, history)) == ["ignore_broadcast"]


async def test_worker_error_notice_before_any_result(chat: Any) -> None:
    agent = OfflineWeatherFunction(name="weather", comm_targets=["supervisor"])
    history = [
        chat.agent("supervisor", "Weather in Lima?", to="weather", request=True),
        chat.system("::agent_error::", "Your previous turn failed.", to="weather"),
    ]
    [answer] = await chat.turn(agent, history)
    assert answer.tool_name == "send_response"
    assert answer.tool_args["body"] == "Sorry, I could not answer that: Your previous turn failed."


async def test_worker_asked_by_the_user_completes_the_task(chat: Any) -> None:
    agent = OfflineWeatherFunction(name="weather", comm_targets=[])
    history = [chat.user("Weather in Quito?", to="weather")]
    [call] = await chat.turn(agent, history)
    chat.result(
        history,
        call,
        "SUCCESS: "
        + json.dumps(
            {
                "location": "Quito",
                "date": "d",
                "condition": "clear",
                "temperature": 20,
                "units": "C",
            }
        ),
    )
    history.append(
        chat.system(
            "::action_complete::", "Action completed successfully", to="weather", broadcast=True
        )
    )
    [answer] = await chat.turn(agent, history)
    assert answer.tool_name == "task_complete"
    assert answer.tool_args["finish_message"] == "Forecast for Quito on d: clear, 20°C."


async def test_worker_without_a_request_does_nothing(chat: Any) -> None:
    agent = OfflineWeatherFunction(name="weather", comm_targets=["supervisor"])
    history = [chat.system("::help::", "help", to="weather", broadcast=True)]
    assert names(await chat.turn(agent, history)) == ["ignore_broadcast"]


# --- construction and history reading -------------------------------------------------------


def test_factory_parameters_are_accepted_and_extra_ones_ignored() -> None:
    agent = OfflineSupervisorFunction(
        name="supervisor", comm_targets=["weather"], llm="ignored", system="ignored", **WIRING
    )
    assert agent.tool_format == "responses"
    assert "secret" not in repr(agent)
    assert not hasattr(agent, "user_token")


def test_unknown_tool_format_is_a_definition_error() -> None:
    with pytest.raises(SwarmDefinitionError, match="tool_format"):
        OfflineMathFunction(name="math", comm_targets=["supervisor"], tool_format="xml")


def test_transcript_reads_anthropic_blocks(chat: Any) -> None:
    history = [
        chat.agent("supervisor", "1+1", to="math", request=True),
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "ok"},
                {
                    "type": "tool_use",
                    "id": "tu1",
                    "name": "calculate_expression",
                    "input": {"expression": "1+1"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "tu1",
                    "content": [{"type": "text", "text": "SUCCESS: 2"}],
                }
            ],
        },
    ]
    transcript = Transcript.read(history)
    [call] = transcript.calls
    assert (call.name, call.args, call.call_id) == (
        "calculate_expression",
        {"expression": "1+1"},
        "tu1",
    )
    assert transcript.outputs == {"tu1": "SUCCESS: 2"}
    assert transcript.last is not None
    assert transcript.last.message.sender == "supervisor"


def test_action_results() -> None:
    assert action_result('SUCCESS: {"a": 1}') == (True, {"a": 1})
    assert action_result("SUCCESS: Error: bad") == (False, "Error: bad")
    assert action_result("ERROR: action not found") == (False, "action not found")
    assert action_result("SUCCESS: plain text") == (True, "plain text")


@pytest.mark.parametrize("bad", [-1, 61, "2", True])
def test_turn_seconds_must_be_a_number_of_seconds(bad: object) -> None:
    with pytest.raises(SwarmDefinitionError, match="turn_seconds"):
        OfflineWeatherFunction(name="weather", comm_targets=["supervisor"], turn_seconds=bad)


async def test_a_slow_turn_decides_the_same_and_keeps_its_reasoning(chat: Any) -> None:
    quick = OfflineSupervisorFunction(name="supervisor", comm_targets=["weather", "math"])
    slow = OfflineSupervisorFunction(
        name="supervisor", comm_targets=["weather", "math"], turn_seconds=0.01, stream_tokens=True
    )
    history = [chat.user("What's the weather in Oslo, and 2 + 2?")]
    _, fast_calls = await quick(history)
    _, slow_calls = await slow(history)
    assert [(c.tool_name, c.tool_args) for c in slow_calls] == [
        (c.tool_name, c.tool_args) for c in fast_calls
    ]
    assert fast_calls[0].reasoning is None
    assert slow_calls[0].reasoning == [
        "This needs weather: I ask it (Weather forecast). This needs math: I ask it (Calculation)."
    ]
