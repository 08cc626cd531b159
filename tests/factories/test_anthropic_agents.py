"""mail.factories.anthropic agents (also imported as mail.stdlib.anthropic) on the real anthropic SDK, against the scripted Anthropic
Messages API server of mail.testing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from tests._sdk_agents import REQUEST, USER, AgentMaker, run_child, run_task

from mail.api import MAILSwarmTemplate
from mail.core._live import live_turn
from mail.core.events import EventName
from mail.core.tasks import MAILTask
from mail.errors import ConfigurationError, SwarmDefinitionError
from mail.factories import AgentOutputError, LLMCallError
from mail.factories.anthropic import AnthropicAgentFunction, AnthropicSupervisorFunction
from mail.testing.anthropic import StubAnthropicServer
from mail.testing.llm import StubReply

STREAM = pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])

Make = Callable[..., Any]


@pytest.fixture(autouse=True)
def _no_ambient_anthropic(monkeypatch: pytest.MonkeyPatch) -> None:
    # the SDK reads these; the developer's shell must not redirect the tests
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def claude() -> AsyncIterator[StubAnthropicServer]:
    async with StubAnthropicServer() as server:
        yield server


@pytest.fixture
async def make(claude: StubAnthropicServer) -> AsyncIterator[Make]:
    maker = AgentMaker(model="claude-stub", base_url=claude.base_url)
    yield lambda cls=AnthropicAgentFunction, **params: maker(cls, **params)
    await maker.aclose()


def _next_turn(call: Any, result: str) -> list[dict[str, Any]]:
    """The history the runtime keeps after ``call`` was answered with ``result``."""
    return [USER, call.completion, call.create_response_msg(result)]


@STREAM
async def test_a_tool_use_comes_back_as_an_agent_tool_call(
    claude: StubAnthropicServer, make: Make, stream: bool
) -> None:
    claude.script(StubReply.tool_calls(("send_response", REQUEST), text="Answering now."))
    agent = make(stream_tokens=stream, system="You are the worker.")

    text, [call] = await agent([USER])

    assert text == "Answering now."
    assert (call.tool_name, call.tool_args) == ("send_response", REQUEST)
    assert call.tool_call_id.startswith("toolu_")
    assert call.preamble == "Answering now."
    assert call.completion["tool_calls"][0]["function"]["arguments"] == json.dumps(REQUEST)
    [request] = claude.requests
    assert request.api == "messages" and request.stream is stream
    assert request.api_key == "test-key"
    body = request.json
    assert body["model"] == "claude-stub" and body["max_tokens"] == 4096
    assert body["system"] == "You are the worker."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": USER["content"]}]}
    ]
    assert body["tool_choice"] == {"type": "any"}
    spec = next(t for t in body["tools"] if t["name"] == "send_response")
    assert spec["input_schema"]["type"] == "object" and "description" in spec
    assert "thinking" not in body


@STREAM
async def test_thinking_blocks_go_back_with_their_signature_on_the_next_turn(
    claude: StubAnthropicServer, make: Make, stream: bool
) -> None:
    claude.script(
        StubReply.tool_calls(("send_response", REQUEST), reasoning="The answer is 42."),
        "Sent.",
    )
    agent = make(thinking_budget=2000, stream_tokens=stream)

    _, [call] = await agent([USER])
    text, [done] = await agent(_next_turn(call, "delivered"), "auto")

    assert call.reasoning == ["The answer is 42."]
    [block] = call.completion["thinking_blocks"]
    assert block == {
        "type": "thinking",
        "thinking": "The answer is 42.",
        "signature": "stub-signature-msg_0001",
    }
    first, second = (r.json for r in claude.requests)
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert first["max_tokens"] == 6000
    assert first["tool_choice"] == {"type": "auto"}  # thinking forbids forcing a tool
    assistant, results = second["messages"][1:]
    assert assistant == {
        "role": "assistant",
        "content": [
            block,
            {
                "type": "tool_use",
                "id": call.tool_call_id,
                "name": "send_response",
                "input": REQUEST,
            },
        ],
    }
    assert results == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": call.tool_call_id, "content": "delivered"}
        ],
    }
    assert (text, done.tool_name) == ("Sent.", "text_output")


async def test_redacted_thinking_is_kept_and_sent_back(
    claude: StubAnthropicServer, make: Make
) -> None:
    redacted = {"type": "redacted_thinking", "data": "opaque-bytes"}
    claude.script(
        StubReply(calls=StubReply.tool_calls(("send_response", REQUEST)).calls, items=(redacted,)),
        "ok",
    )
    agent = make(reasoning_effort="minimal")
    _, [call] = await agent([USER])
    await agent(_next_turn(call, "delivered"))
    assert call.reasoning == ["[redacted thinking]"]
    assert claude.requests[0].json["thinking"]["budget_tokens"] == 2000
    assert claude.requests[1].json["messages"][1]["content"][0] == redacted


async def test_a_plain_text_turn_and_its_result_keep_the_roles_alternating(
    claude: StubAnthropicServer, make: Make
) -> None:
    claude.script("Just text.", [("send_response", REQUEST)])
    agent = make()
    _, [output] = await agent([USER])
    await agent([*_next_turn(output, "text delivered"), {"role": "user", "content": "more"}])
    sent = claude.requests[1].json["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"] == [{"type": "text", "text": "Just text."}]
    # the result of a call Anthropic never saw travels as text, merged with the next message
    assert sent[2]["content"] == [
        {"type": "text", "text": "text delivered"},
        {"type": "text", "text": "more"},
    ]


async def test_tool_choice_names_a_tool_and_can_forbid_parallel_calls(
    claude: StubAnthropicServer, make: Make
) -> None:
    claude.script([("task_complete", {"finish_message": "ok"})])
    agent = make(AnthropicSupervisorFunction, parallel_tool_calls=False)
    _, [call] = await agent([USER], {"type": "function", "function": {"name": "task_complete"}})
    assert call.tool_name == "task_complete"
    body = claude.requests[0].json
    assert body["tool_choice"] == {
        "type": "tool",
        "name": "task_complete",
        "disable_parallel_tool_use": True,
    }
    assert {"send_interrupt", "send_broadcast", "task_complete"} <= set(
        claude.requests[0].tool_names
    )


async def test_an_overloaded_server_is_retried_then_raised_as_llm_call_error(
    claude: StubAnthropicServer, make: Make
) -> None:
    claude.script(StubReply.http_error(529, "Overloaded"), StubReply.http_error(529, "Overloaded"))
    agent = make(max_retries=1)
    with pytest.raises(LLMCallError) as caught:
        await agent([USER])
    assert len(claude.requests) == 2
    error = caught.value
    assert (error.status, error.attempts, error.retryable) == (529, 2, True)
    assert "Overloaded" in str(error)


async def test_a_bad_request_is_not_retried(claude: StubAnthropicServer, make: Make) -> None:
    claude.script(StubReply.http_error(400, "messages: roles must alternate"))
    agent = make(max_retries=3, stream_tokens=True)
    with pytest.raises(LLMCallError, match="roles must alternate") as caught:
        await agent([USER])
    assert (caught.value.status, caught.value.attempts, caught.value.retryable) == (400, 1, False)
    assert len(claude.requests) == 1


async def test_malformed_tool_input_is_an_agent_output_error(
    claude: StubAnthropicServer, make: Make
) -> None:
    # (streamed, the SDK parses the input leniently: a truncated object arrives cut short)
    claude.script(StubReply.malformed("send_response"))
    with pytest.raises(AgentOutputError, match="malformed JSON"):
        await make()([USER])


def test_a_missing_key_is_a_configuration_error() -> None:
    agent = AnthropicAgentFunction("worker", [], "claude-sonnet-4-5", [])
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        agent.client()


def test_the_history_must_be_chat_completions() -> None:
    with pytest.raises(SwarmDefinitionError, match="tool_format to 'completions'"):
        AnthropicSupervisorFunction("w", [], "claude-sonnet-4-5", [], tool_format="responses")


async def test_the_key_and_base_url_come_from_the_environment(claude: StubAnthropicServer) -> None:
    script = (
        "import asyncio\n"
        "from mail.stdlib.anthropic import AnthropicAgentFunction as A\n"
        "agent = A('worker', [], 'claude-env', [])\n"
        "text, _ = asyncio.run(agent([{'role': 'user', 'content': 'hi'}]))\n"
        "print(text)\n"
    )
    claude.script("from the stub")
    env = {"ANTHROPIC_BASE_URL": claude.base_url, "ANTHROPIC_API_KEY": "env-key"}
    assert await run_child(script, env) == "from the stub"
    [request] = claude.requests
    assert (request.model, request.api_key) == ("claude-env", "env-key")


async def test_a_swarms_json_swarm_with_an_anthropic_supervisor_completes_a_task(
    claude: StubAnthropicServer,
) -> None:
    template = MAILSwarmTemplate.from_swarms_json(
        {
            "name": "anthropic-stub",
            "version": "1.0.0",
            "entrypoint": "supervisor",
            "actions": [],
            "agents": [
                {
                    "name": "supervisor",
                    "factory": "python::mail.stdlib.anthropic.agents:AnthropicSupervisorFunction",
                    "comm_targets": [],
                    "enable_entrypoint": True,
                    "can_complete_tasks": True,
                    "tool_format": "completions",
                    "agent_params": {
                        "model": "claude-stub",
                        "base_url": claude.base_url,
                        "api_key": "swarm-key",
                        "thinking_budget": 1024,
                        "stream_tokens": True,
                    },
                }
            ],
        }
    )
    claude.script(
        StubReply.tool_calls(
            ("task_complete", {"finish_message": "Paris."}), reasoning="France's capital."
        )
    )
    final, events = await run_task(template, "Capital of France?")

    assert final["message"]["body"] == "Paris."
    calls = [e for e in events if e.event == "tool_call"]
    assert calls and "France's capital." in json.dumps([e.data() for e in calls])
    [request] = claude.requests
    assert request.api_key == "swarm-key"
    assert request.json["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert "Capital of France?" in json.dumps(request.messages)


@STREAM
async def test_a_turn_reports_live_deltas_and_usage(
    claude: StubAnthropicServer, make: Make, stream: bool
) -> None:
    # Inside a runtime turn the agent streams its thinking and the growing finish_message
    # of task_complete as token_delta events, and reports the message's usage.
    finish = 'Sunny "all" week\n'
    claude.script(
        StubReply.tool_calls(("task_complete", {"finish_message": finish}), reasoning="Look up.")
    )
    agent = make(AnthropicSupervisorFunction, stream_tokens=stream, thinking_budget=2000)
    task = MAILTask("t-live", "user:u@s", [])
    follow = task.log.follow(0, heartbeat=5.0)
    task.log.emit(EventName.NEW_MESSAGE, "the question")
    await anext(follow)  # a live reader from here

    with live_turn(task, "supervisor"):
        _text, [call] = await agent([USER])
    task.log.emit(EventName.TOOL_CALL, "the call")
    seen = []
    while (event := await asyncio.wait_for(anext(follow), 5)).event != EventName.TOOL_CALL:
        seen.append(event.data())
    await follow.aclose()

    assert call.tool_name == "task_complete"
    assert task.usage is not None and task.usage["input_tokens"] == 10
    assert task.usage["output_tokens"] > 0
    if not stream:
        assert seen == []  # nothing streams: no deltas
        return
    answer = "".join(d["delta"] for d in seen if d["kind"] == "answer")
    thinking = "".join(d["delta"] for d in seen if d["kind"] == "reasoning")
    assert answer == finish
    assert thinking == "Look up."
    assert {d["call_id"] for d in seen if d["kind"] == "answer"} == {call.tool_call_id}
    assert {d["agent"] for d in seen} == {"supervisor"}
