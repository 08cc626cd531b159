"""LiteLLMAgentFunction with tool_format="completions", against the stub LLM (CONTRACT 6.2)."""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

import pytest

from mail.factories import AgentOutputError
from mail.testing.llm import StubLLMServer, StubReply

REQUEST = {"target": "supervisor", "subject": "Re", "body": "42"}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_one_tool_call_becomes_an_agent_tool_call(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, stream: bool
) -> None:
    llm.script([("send_response", REQUEST)])
    agent = make_agent(tool_format="completions", stream_tokens=stream)

    text, calls = await agent([user_turn("hello")])

    assert text is None
    [call] = calls
    assert call.tool_name == "send_response"
    assert call.tool_args == REQUEST
    assert call.tool_call_id.startswith("call_")
    assert call.completion == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call.tool_call_id,
                "type": "function",
                "function": {"name": "send_response", "arguments": json.dumps(REQUEST)},
            }
        ],
    }
    assert call.responses == []
    assert call.reasoning is None
    assert call.preamble is None
    [request] = llm.requests
    assert request.path == "/v1/chat/completions"
    assert request.model == "stub-model"
    assert request.stream is stream
    assert request.json["tool_choice"] == "required"
    assert request.authorization == "Bearer test-key"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_several_calls_share_one_completion_with_reasoning_and_preamble(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, stream: bool
) -> None:
    llm.script(
        StubReply.tool_calls(
            ("send_request", {"target": "analyst", "subject": "s", "body": "b"}),
            ("await_message", {"reason": "waiting for the analyst"}),
            text="Let me ask the analyst.",
            reasoning="The analyst knows this.",
        )
    )
    agent = make_agent(tool_format="completions", stream_tokens=stream)

    text, calls = await agent([user_turn("hello")])

    assert text == "Let me ask the analyst."
    assert [c.tool_name for c in calls] == ["send_request", "await_message"]
    assert calls[1].tool_args == {"reason": "waiting for the analyst"}
    assert calls[0].reasoning == ["The analyst knows this."]
    assert calls[0].preamble == "Let me ask the analyst."
    assert calls[1].reasoning is None
    assert calls[1].preamble is None
    completion = calls[0].completion
    assert calls[1].completion == completion
    assert completion["content"] == "Let me ask the analyst."
    assert [tc["id"] for tc in completion["tool_calls"]] == [c.tool_call_id for c in calls]
    assert len({c.tool_call_id for c in calls}) == 2
    assert "reasoning_content" not in completion  # never sent back to the provider


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_text_only_answer_becomes_text_output(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, stream: bool
) -> None:
    llm.script(StubReply.message("Just text.", reasoning="no tool needed"))
    agent = make_agent(tool_format="completions", stream_tokens=stream)

    text, [call] = await agent([user_turn("hello")])

    assert text == "Just text."
    assert call.tool_name == "text_output"
    assert call.tool_args == {"content": "Just text."}
    assert call.completion == {"role": "assistant", "content": "Just text."}
    assert call.reasoning == ["no tool needed"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_malformed_arguments_raise_agent_output_error(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, stream: bool
) -> None:
    llm.script(StubReply.malformed("send_request", '{"target": "analyst", '))
    agent = make_agent(tool_format="completions", stream_tokens=stream)

    with pytest.raises(AgentOutputError, match=r"send_request.*malformed JSON") as info:
        await agent([user_turn("hello")])

    assert info.value.tool == "send_request"
    assert info.value.agent == "worker"
    assert '{"target": "analyst", ' in str(info.value)
    assert len(llm.requests) == 1  # a bad answer is not retried


async def test_arguments_that_are_not_an_object_raise(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    llm.script(StubReply.malformed("send_request", "[1, 2]"))
    agent = make_agent(tool_format="completions")

    with pytest.raises(AgentOutputError, match="must be a JSON object, got list"):
        await agent([user_turn("hello")])


async def test_empty_answer_raises(llm: StubLLMServer, make_agent: Any, user_turn: Any) -> None:
    llm.script(StubReply.message(""))
    agent = make_agent(tool_format="completions")

    with pytest.raises(AgentOutputError, match="neither text nor tool calls"):
        await agent([user_turn("hello")])


async def test_system_prompt_is_sent_first_and_history_is_not_mutated(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    llm.script([("help", {})], [("help", {})])
    agent = make_agent(tool_format="completions", system="You are the worker.")
    call = {"id": "call_1", "type": "function", "function": {"name": "help", "arguments": "{}"}}
    history = [
        user_turn("first"),
        {"role": "assistant", "content": "asking for help", "tool_calls": [call]},
        {"role": "tool", "name": "help", "content": "SUCCESS: ...", "tool_call_id": "call_1"},
        user_turn("second"),
    ]
    before = copy.deepcopy(history)

    await agent(history)
    await agent(history)

    assert history == before
    for request in llm.requests:
        assert request.messages[0] == {"role": "system", "content": "You are the worker."}
        assert request.messages[1:] == before
    assert len(llm.requests) == 2


async def test_a_history_that_starts_with_a_system_message_gets_no_second_one(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    llm.script([("help", {})])
    agent = make_agent(tool_format="completions", system="new prompt")
    history = [{"role": "system", "content": "stored prompt"}, user_turn("hi")]

    await agent(history)

    assert llm.requests[0].messages == history


async def test_request_parameters_reach_the_model(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    llm.script([("help", {})])
    agent = make_agent(
        tool_format="completions",
        llm="litellm_proxy/stub-model",  # the proxy provider forwards `thinking` untouched
        reasoning_effort="low",
        parallel_tool_calls=False,
        extra_headers={"X-Trace": "t-1"},
    )

    await agent([user_turn("hi")])

    request = llm.requests[0]
    assert request.json["reasoning_effort"] == "low"
    assert request.json["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert request.json["max_tokens"] == 8000  # budget + 4000
    assert request.json["parallel_tool_calls"] is False
    assert request.headers["x-trace"] == "t-1"


async def test_forced_tool_choice_is_shaped_for_completions(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    llm.script([("send_response", REQUEST)], [("send_response", REQUEST)])
    agent = make_agent(tool_format="completions")

    # the Responses shape (what a runtime with the other format would force) is converted
    await agent([user_turn("hi")], {"type": "function", "name": "send_response"})
    # a forced tool this agent is not offered falls back to "required"
    await agent([user_turn("hi")], {"type": "function", "name": "task_complete"})

    assert llm.requests[0].json["tool_choice"] == {
        "type": "function",
        "function": {"name": "send_response"},
    }
    assert llm.requests[1].json["tool_choice"] == "required"


async def test_default_tool_choice_overrides_the_runtime(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    llm.script("thinking out loud")
    agent = make_agent(tool_format="completions", default_tool_choice="auto")

    await agent([user_turn("hi")], "required")

    assert llm.requests[0].json["tool_choice"] == "auto"


async def test_no_tools_means_no_tool_choice(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    llm.script("plain answer")
    agent = make_agent(tool_format="completions", comm_targets=[])

    text, [call] = await agent([user_turn("hi")])

    assert (text, call.tool_name) == ("plain answer", "text_output")
    assert "tools" not in llm.requests[0].json
    assert "tool_choice" not in llm.requests[0].json


async def test_streamed_tokens_are_logged_at_debug(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, caplog: pytest.LogCaptureFixture
) -> None:
    llm.script(StubReply.tool_calls(("help", {}), text="streamed words", reasoning="hmm"))
    agent = make_agent(tool_format="completions", stream_tokens=True)

    with caplog.at_level(logging.DEBUG, logger="mail.factories.base"):
        await agent([user_turn("hi")])

    logged = "".join(
        str(r.args[-1]) for r in caplog.records if r.name == "mail.factories.base" and r.args
    )
    assert "streamed words" in logged
    assert "hmm" in logged


async def test_print_llm_streams_false_silences_the_token_log(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, caplog: pytest.LogCaptureFixture
) -> None:
    llm.script(StubReply.tool_calls(("help", {}), text="quiet words"))
    agent = make_agent(tool_format="completions", stream_tokens=True, print_llm_streams=False)

    with caplog.at_level(logging.DEBUG, logger="mail.factories.base"):
        await agent([user_turn("hi")])

    assert "quiet words" not in caplog.text
