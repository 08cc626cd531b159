"""mail.factories.openai agents on the real openai SDK, against the scripted OpenAI server
(also imported through their mail.stdlib.openai paths)."""

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
from mail.factories.openai import (
    OpenAIChatCompletionsAgentFunction,
    OpenAIChatCompletionsSupervisorFunction,
    OpenAIResponsesAgentFunction,
    OpenAIResponsesSupervisorFunction,
)
from mail.testing.llm import StubLLMServer, StubReply

APIS = {
    "chat": OpenAIChatCompletionsAgentFunction,
    "responses": OpenAIResponsesAgentFunction,
}

Make = Callable[..., Any]


@pytest.fixture(autouse=True)
def _no_ambient_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    # the SDK reads these; the developer's shell must not redirect the tests
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def llm() -> AsyncIterator[StubLLMServer]:
    async with StubLLMServer() as server:
        yield server


@pytest.fixture
async def make(llm: StubLLMServer) -> AsyncIterator[Make]:
    maker = AgentMaker(model="stub-model", base_url=llm.base_url)
    yield maker
    await maker.aclose()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_a_tool_call_comes_back_as_an_agent_tool_call(
    llm: StubLLMServer, make: Make, api: str, stream: bool
) -> None:
    llm.script(StubReply.tool_calls(("send_response", REQUEST), reasoning="thinking it over"))
    agent = make(APIS[api], stream_tokens=stream, system="You are the worker.")

    text, calls = await agent([USER])

    assert text is None
    [call] = calls
    assert (call.tool_name, call.tool_args) == ("send_response", REQUEST)
    assert call.reasoning == ["thinking it over"]
    assert call.tool_format == ("completions" if api == "chat" else "responses")
    [request] = llm.requests
    assert request.api == api
    assert request.stream is stream
    assert request.model == "stub-model"
    assert request.authorization == "Bearer test-key"
    assert request.json["tool_choice"] == "required"
    assert "send_response" in request.tool_names
    if api == "chat":
        assert request.messages[0] == {"role": "system", "content": "You are the worker."}
        assert request.messages[1] == USER
    else:
        assert request.json["instructions"] == "You are the worker."
        assert request.messages == [USER]


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_the_next_turn_sends_the_history_the_runtime_keeps(
    llm: StubLLMServer, make: Make, api: str
) -> None:
    llm.script([("send_response", REQUEST)], "all done")
    agent = make(APIS[api])
    _, [call] = await agent([USER])
    history = [USER]
    history += [call.completion] if call.completion else call.responses
    history.append(call.create_response_msg("sent"))

    text, [output] = await agent(history, "auto")

    assert text == "all done"
    assert output.tool_name == "text_output"
    sent = llm.requests[1].messages
    if api == "chat":
        assert sent[-2]["tool_calls"][0]["id"] == call.tool_call_id
        assert sent[-1] == {
            "role": "tool",
            "name": "send_response",
            "content": "sent",
            "tool_call_id": call.tool_call_id,
        }
    else:
        assert sent[-2]["type"] == "function_call"
        assert sent[-1] == {
            "type": "function_call_output",
            "call_id": call.tool_call_id,
            "output": "sent",
        }
    assert llm.requests[1].json["tool_choice"] == "auto"


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_effort_max_tokens_and_parallel_calls_reach_the_request(
    llm: StubLLMServer, make: Make, api: str
) -> None:
    llm.script([("task_complete", {"finish_message": "ok"})])
    agent = make(
        APIS[api], reasoning_effort="low", parallel_tool_calls=False, can_complete_tasks=True
    )
    await agent([USER], {"type": "function", "name": "task_complete"})
    body = llm.requests[0].json
    assert body["parallel_tool_calls"] is False
    if api == "chat":
        assert body["reasoning_effort"] == "low"
        assert body["max_completion_tokens"] == 4000 + 4000
        assert body["tool_choice"] == {"type": "function", "function": {"name": "task_complete"}}
    else:
        assert body["reasoning"] == {"effort": "low", "summary": "auto"}
        assert body["max_output_tokens"] == 8000
        assert body["tool_choice"] == {"type": "function", "name": "task_complete"}


async def test_supervisors_are_offered_the_supervisor_tools(llm: StubLLMServer, make: Make) -> None:
    llm.script("a", "b")
    for cls in (OpenAIChatCompletionsSupervisorFunction, OpenAIResponsesSupervisorFunction):
        agent = make(cls, can_complete_tasks=False)
        assert agent.can_complete_tasks is True
        await agent([USER])
    for request in llm.requests:
        assert {"send_interrupt", "send_broadcast", "task_complete"} <= set(request.tool_names)


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_a_server_error_is_retried_by_the_sdk_then_raised_as_llm_call_error(
    llm: StubLLMServer, make: Make, api: str
) -> None:
    llm.script(StubReply.http_error(500, "boom"), StubReply.http_error(500, "boom again"))
    agent = make(APIS[api], max_retries=1)

    with pytest.raises(LLMCallError) as caught:
        await agent([USER])

    assert len(llm.requests) == 2
    error = caught.value
    assert (error.status, error.attempts, error.retryable) == (500, 2, True)
    assert error.agent == "worker" and error.model == "stub-model"
    assert "boom again" in str(error)


async def test_a_client_error_is_not_retried(llm: StubLLMServer, make: Make) -> None:
    llm.script(StubReply.http_error(400, "bad request"))
    agent = make(OpenAIChatCompletionsAgentFunction, max_retries=3)
    with pytest.raises(LLMCallError) as caught:
        await agent([USER])
    assert (caught.value.status, caught.value.attempts, caught.value.retryable) == (400, 1, False)
    assert len(llm.requests) == 1


async def test_an_unreachable_server_is_a_retryable_connection_error(make: Make) -> None:
    agent = make(OpenAIResponsesAgentFunction, base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(LLMCallError) as caught:
        await agent([USER])
    assert caught.value.status is None and caught.value.retryable is True
    assert "127.0.0.1:9" in str(caught.value)


async def test_malformed_arguments_are_an_agent_output_error(
    llm: StubLLMServer, make: Make
) -> None:
    llm.script(StubReply.malformed("send_response"))
    agent = make(OpenAIChatCompletionsAgentFunction)
    with pytest.raises(AgentOutputError, match="malformed JSON"):
        await agent([USER])


def test_a_missing_key_is_a_configuration_error() -> None:
    agent = OpenAIChatCompletionsAgentFunction("worker", [], "gpt-5-mini", [])
    with pytest.raises(ConfigurationError, match="worker"):
        agent.client()


def test_the_tool_format_must_match_the_api() -> None:
    with pytest.raises(SwarmDefinitionError, match="tool_format to 'completions'"):
        OpenAIChatCompletionsAgentFunction("w", [], "m", [], tool_format="responses")
    with pytest.raises(SwarmDefinitionError, match="tool_format to 'responses'"):
        OpenAIResponsesSupervisorFunction("w", [], "m", [], True, tool_format="completions")


async def test_the_key_and_base_url_come_from_the_environment(llm: StubLLMServer) -> None:
    # the SDK reads os.environ itself: a child process gets the variables (and imports the
    # class through its mail.stdlib path)
    script = (
        "import asyncio\n"
        "from mail.stdlib.openai import OpenAIChatCompletionsAgentFunction as A\n"
        "agent = A('worker', [], 'env-model', [])\n"
        "text, _ = asyncio.run(agent([{'role': 'user', 'content': 'hi'}]))\n"
        "print(text)\n"
    )
    llm.script("from the stub")
    env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "env-key"}
    assert await run_child(script, env) == "from the stub"
    [request] = llm.requests
    assert request.model == "env-model"
    assert request.authorization == "Bearer env-key"


def _swarm(llm: StubLLMServer) -> dict[str, Any]:
    connection = {"model": "stub-model", "base_url": llm.base_url, "api_key": "swarm-key"}
    module = "python::mail.stdlib.openai.agents"  # v1.3.6's path
    return {
        "name": "openai-stub",
        "version": "1.0.0",
        "entrypoint": "supervisor",
        "actions": [],
        "agents": [
            {
                "name": "supervisor",
                "factory": f"{module}:OpenAIChatCompletionsSupervisorFunction",
                "comm_targets": ["analyst"],
                "enable_entrypoint": True,
                "can_complete_tasks": True,
                "tool_format": "completions",
                "agent_params": {**connection, "system": "You supervise."},
            },
            {
                "name": "analyst",
                "factory": f"{module}:OpenAIResponsesAgentFunction",
                "comm_targets": ["supervisor"],
                "tool_format": "responses",
                "agent_params": {**connection, "system": "You analyse.", "stream_tokens": True},
            },
        ],
    }


async def test_a_swarms_json_swarm_of_openai_agents_completes_a_task(llm: StubLLMServer) -> None:
    template = MAILSwarmTemplate.from_swarms_json(_swarm(llm))
    llm.script(
        [("send_request", {"target": "analyst", "subject": "Q", "body": "What is 6 x 7?"})],
        [("send_response", {"target": "supervisor", "subject": "Re: Q", "body": "42"})],
        [("task_complete", {"finish_message": "The answer is 42."})],
    )
    final, _ = await run_task(template, "6 x 7?")

    assert final["message"]["body"] == "The answer is 42."
    supervisor, analyst, again = llm.requests
    assert (supervisor.api, analyst.api, again.api) == ("chat", "responses", "chat")
    assert analyst.stream and analyst.json["instructions"].startswith("You analyse.")
    assert "Name: supervisor" in analyst.json["instructions"]  # the swarm adds its contacts
    assert "What is 6 x 7?" in json.dumps(analyst.messages)
    assert "42" in json.dumps(again.messages[-1])
    assert {r.authorization for r in llm.requests} == {"Bearer swarm-key"}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_a_turn_reports_usage_and_streams_the_answer(
    llm: StubLLMServer, make: Make, api: str, stream: bool
) -> None:
    finish = "It is 42."
    llm.script(StubReply.tool_calls(("task_complete", {"finish_message": finish})))
    agent = make(APIS[api], stream_tokens=stream, can_complete_tasks=True)
    task = MAILTask("t-live", "user:u@s", [])
    follow = task.log.follow(0, heartbeat=5.0)
    task.log.emit(EventName.NEW_MESSAGE, "the question")
    await anext(follow)  # a live reader from here

    with live_turn(task, "worker"):
        await agent([USER])
    task.log.emit(EventName.TOOL_CALL, "the call")
    seen = []
    while (event := await asyncio.wait_for(anext(follow), 5)).event != EventName.TOOL_CALL:
        seen.append(event.data())
    await follow.aclose()

    assert task.usage is not None and task.usage["input_tokens"] > 0
    answer = "".join(d["delta"] for d in seen if d["kind"] == "answer")
    assert answer == (finish if stream else "")
