"""LiteLLMAgentFunction with tool_format="responses", against the stub LLM (CONTRACT 6.2)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from mail.factories import AgentOutputError
from mail.testing.llm import StubLLMServer, StubReply

REQUEST = {"target": "supervisor", "subject": "Re", "body": "42"}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_one_function_call_becomes_an_agent_tool_call(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, stream: bool
) -> None:
    llm.script([("send_response", REQUEST)])
    # LiteLLM fakes Responses streaming (one plain request) for models it does not know
    model = "gpt-4.1" if stream else "stub-model"
    agent = make_agent(stream_tokens=stream, llm=f"openai/{model}")

    text, calls = await agent([user_turn("hello")])

    assert text is None
    [call] = calls
    assert (call.tool_name, call.tool_args) == ("send_response", REQUEST)
    assert call.completion == {}
    [item] = call.responses
    assert item["type"] == "function_call"
    assert item["call_id"] == call.tool_call_id
    assert item["name"] == "send_response"
    assert json.loads(item["arguments"]) == REQUEST
    assert all(v is not None for v in item.values())  # plain dicts, fit to send back
    [request] = llm.requests
    assert request.path == "/v1/responses"
    assert request.api == "responses"
    assert request.stream is stream
    assert request.model == model
    assert request.json["tool_choice"] == "required"
    assert request.tool_names[:2] == ["send_request", "send_response"]
    assert "function" not in request.json["tools"][0]  # Responses tool format


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_several_calls_carry_all_items_reasoning_and_preamble(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, stream: bool
) -> None:
    llm.script(
        StubReply.tool_calls(
            ("send_request", {"target": "analyst", "subject": "s", "body": "b"}),
            ("await_message", {"reason": None}),
            text="Asking the analyst.",
            reasoning="The analyst knows.",
        )
    )
    agent = make_agent(stream_tokens=stream, llm="openai/gpt-4.1")

    text, calls = await agent([user_turn("hello")])

    assert text == "Asking the analyst."
    assert [c.tool_name for c in calls] == ["send_request", "await_message"]
    assert calls[1].tool_args == {"reason": None}
    assert calls[0].reasoning == ["The analyst knows."]
    assert calls[0].preamble == "Asking the analyst."
    assert (calls[1].reasoning, calls[1].preamble) == (None, None)
    kinds = [i["type"] for i in calls[0].responses]
    assert kinds == ["reasoning", "message", "function_call", "function_call"]
    assert calls[1].responses == calls[0].responses
    assert [i["call_id"] for i in calls[0].responses[2:]] == [c.tool_call_id for c in calls]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_text_only_answer_becomes_text_output(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, stream: bool
) -> None:
    llm.script(StubReply.message("Just text.", reasoning="no tool needed"))
    agent = make_agent(stream_tokens=stream, llm="openai/gpt-4.1")

    text, [call] = await agent([user_turn("hello")])

    assert text == "Just text."
    assert (call.tool_name, call.tool_args) == ("text_output", {"content": "Just text."})
    assert call.reasoning == ["no tool needed"]
    assert [i["type"] for i in call.responses] == ["reasoning", "message"]
    assert call.tool_call_id == call.responses[1]["id"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_malformed_arguments_raise_agent_output_error(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, stream: bool
) -> None:
    llm.script(StubReply.malformed("send_request", '{"target": '))
    agent = make_agent(stream_tokens=stream, llm="openai/gpt-4.1")

    with pytest.raises(AgentOutputError, match=r"'send_request' has malformed JSON arguments"):
        await agent([user_turn("hello")])


async def test_empty_output_raises(llm: StubLLMServer, make_agent: Any, user_turn: Any) -> None:
    llm.script(StubReply())
    agent = make_agent()

    with pytest.raises(AgentOutputError, match="no output"):
        await agent([user_turn("hello")])


async def test_builtin_tool_items_become_pseudo_calls(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    search = {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "weather in Tokyo"},
    }
    code = {
        "type": "code_interpreter_call",
        "id": "ci_1",
        "status": "completed",
        "code": "print(6 * 7)",
        "container_id": "cntr_1",
        "outputs": [{"type": "logs", "logs": "42"}],
    }
    llm.script(StubReply.output_items(search, code, text="It is sunny; 6*7 is 42."))
    agent = make_agent(tools=[{"type": "web_search"}])

    text, calls = await agent([user_turn("hello")])

    assert [c.tool_name for c in calls] == ["web_search_call", "code_interpreter_call"]
    assert calls[0].tool_args == {
        "query": "weather in Tokyo",
        "search_type": "search",
        "status": "completed",
    }
    assert calls[0].tool_call_id == "ws_1"
    assert calls[1].tool_args == {
        "code": "print(6 * 7)",
        "outputs": [{"type": "logs", "logs": "42"}],
        "status": "completed",
    }
    assert text == "It is sunny; 6*7 is 42."
    assert {"type": "web_search"} in llm.requests[0].json["tools"]


async def test_system_prompt_goes_to_instructions_and_history_is_sent_unchanged(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    llm.script([("help", {})])
    agent = make_agent(system="You are the worker.", reasoning_effort="high", max_tokens=999)
    history = [
        user_turn("first"),
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "help",
            "arguments": "{}",
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "SUCCESS: ..."},
        user_turn("second"),
    ]
    before = copy.deepcopy(history)

    await agent(history)

    assert history == before
    request = llm.requests[0]
    assert request.json["instructions"] == "You are the worker."
    assert request.json["input"] == before
    assert request.json["reasoning"] == {"effort": "high", "summary": "auto"}
    assert request.json["max_output_tokens"] == 999


async def test_forced_tool_choice_is_shaped_for_responses(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    llm.script([("send_response", REQUEST)])
    agent = make_agent()

    await agent([user_turn("hi")], {"type": "function", "function": {"name": "send_response"}})

    assert llm.requests[0].json["tool_choice"] == {"type": "function", "name": "send_response"}


async def test_a_thinking_budget_alone_turns_reasoning_on(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    # Regression: without reasoning_effort, a Responses agent sent no reasoning settings
    # at all, while a completions agent with the same parameters sends its thinking budget.
    llm.script([("help", {})], [("help", {})])
    budget_only = make_agent(thinking_budget=3000)
    plain = make_agent()

    await budget_only([user_turn("hi")])
    await plain([user_turn("hi")])

    thinking, off = (r.json for r in llm.requests)
    assert thinking["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert thinking["max_output_tokens"] == 7000  # budget + 4000, as for completions
    assert "reasoning" not in off
    assert "max_output_tokens" not in off
