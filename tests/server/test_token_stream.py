"""Live ``token_delta`` events and token ``usage`` over a real server, with a LiteLLM agent
answered by the stub LLM (chat completions and Responses, streamed or not)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from tests.server.conftest import Frame, Running, Start, read_stream, scripted_template
from tests.server.test_provider_wire import double_action

from mail.api import MAILSwarmTemplate
from mail.client import MAILClient
from mail.config import ClientConfig
from mail.factories import LiteLLMAgentFunction
from mail.factories._litellm import import_litellm
from mail.testing import ScriptedAgent, tc
from mail.testing.llm import StubLLMServer, StubReply

pytestmark = pytest.mark.timeout(40)

#: the answer, with what the incremental reader must decode: escapes, quotes, non-ASCII
ANSWER = 'Line 1\nsaid "42" \\ back\tslash: ünï 😀 — done'
#: sent verbatim: ASCII-escaped, so ``\\uXXXX`` escapes (and a surrogate pair) are split
ARGUMENTS = json.dumps({"finish_message": ANSWER})
USAGE_OF_TWO_CALLS = {
    "input_tokens": 20,
    "output_tokens": 10,
    "reasoning_tokens": 6,
    "cached_input_tokens": 8,
}


@pytest.fixture
async def llm() -> AsyncIterator[StubLLMServer]:
    # The server runs in this process: its first LLM call would import litellm (seconds,
    # on the event loop, longer on a loaded machine) while the client's read timeout runs.
    import_litellm()
    async with StubLLMServer() as server:
        yield server


async def llm_swarm(start: Start, llm: StubLLMServer, *, tool_format: str, stream: bool) -> Running:
    """A server of :func:`llm_template`."""
    return await start(template=llm_template(llm, tool_format=tool_format, stream=stream))


def llm_template(llm: StubLLMServer, *, tool_format: str, stream: bool) -> MAILSwarmTemplate:
    """supervisor (a LiteLLM agent): calls ``double``, then completes with :data:`ANSWER`."""
    llm.script(
        StubReply.tool_calls(("double", {"n": 21}), reasoning="Doubling first."),
        StubReply.tool_calls(
            ("task_complete", ARGUMENTS), text="Here it is.", reasoning="Now the answer."
        ),
    )
    agent = LiteLLMAgentFunction(
        "supervisor",
        [],
        [double_action().to_tool_dict(tool_format)],  # type: ignore[arg-type]
        "openai/stub-model",
        "You are the supervisor.",
        tool_format=tool_format,  # type: ignore[arg-type]
        stream_tokens=stream,
        use_proxy=False,
        api_base=llm.base_url,
        api_key="test-key",
        print_llm_streams=False,
    )
    return scripted_template({"supervisor": agent}, actions=[double_action()])  # type: ignore[dict-item]


async def post_stream(server: Running, task_id: str) -> list[Frame]:
    user = await server.user()
    payload = {"body": "answer please", "stream": True, "task_id": task_id}
    async with user.stream("POST", "/message", json=payload) as response:
        assert response.status_code == 200
        return await read_stream(response)


def deltas(stream: list[Frame], kind: str) -> list[Frame]:
    return [f for f in stream if f.event == "token_delta" and f.data["kind"] == kind]


@pytest.mark.parametrize("tool_format", ["completions", "responses"])
async def test_streamed_model_sends_live_deltas(
    start: Start, llm: StubLLMServer, tool_format: str
) -> None:
    server = await llm_swarm(start, llm, tool_format=tool_format, stream=True)

    stream = await post_stream(server, "t-live")

    final = stream[-1]
    assert (final.event, final.data["status"]) == ("task_complete", "completed")
    assert final.data["response"] == ANSWER
    live = [f for f in stream if f.event == "token_delta"]
    assert live
    for frame in live:
        assert frame.id is None
        assert frame.data["task_id"] == "t-live"
        assert frame.data["agent"] == "supervisor"
        assert b"\r\nid:" not in frame.raw and not frame.raw.startswith(b"id:")
    answer = deltas(stream, "answer")
    assert len(answer) > 1  # it grows as the arguments stream
    assert "".join(f.data["delta"] for f in answer) == ANSWER
    completing = next(
        f
        for f in stream
        if f.event == "tool_call" and f.data["extra_data"]["tool_name"] == "task_complete"
    )
    assert {f.data["call_id"] for f in answer} == {completing.data["extra_data"]["tool_call_id"]}
    assert "".join(f.data["delta"] for f in deltas(stream, "reasoning")) == (
        "Doubling first.Now the answer."
    )
    assert "".join(f.data["delta"] for f in deltas(stream, "text")) == "Here it is."
    assert {"call_id"} & set(deltas(stream, "text")[0].data) == set()
    # the answer's deltas come while the model writes, before the task ends
    names = [f.event for f in stream]
    assert stream.index(answer[-1]) < names.index("task_complete_call")
    assert final.data["usage"] == USAGE_OF_TWO_CALLS


async def test_deltas_are_never_stored_or_replayed(start: Start, llm: StubLLMServer) -> None:
    server = await llm_swarm(start, llm, tool_format="completions", stream=True)
    live = await post_stream(server, "t-replay")
    user = await server.user()

    async with user.stream("GET", "/tasks/t-replay/events") as response:
        replay = await read_stream(response)
    task = (await user.get("/task", params={"task_id": "t-replay"})).json()

    assert any(f.event == "token_delta" for f in live)
    assert [f.event for f in replay if f.event == "token_delta"] == []
    assert [f.id for f in replay[:-1]] == list(range(1, len(replay)))
    assert [e["event"] for e in task["events"] if e["event"] == "token_delta"] == []
    assert [f.id for f in live if f.id is not None] == [f.id for f in replay if f.id is not None]
    assert task["usage"] == USAGE_OF_TWO_CALLS
    assert replay[-1].data["usage"] == USAGE_OF_TWO_CALLS


@pytest.mark.parametrize("tool_format", ["completions", "responses"])
async def test_unstreamed_model_reports_usage_without_deltas(
    start: Start, llm: StubLLMServer, tool_format: str
) -> None:
    server = await llm_swarm(start, llm, tool_format=tool_format, stream=False)

    stream = await post_stream(server, "t-plain")
    answer = (await (await server.user()).get("/task", params={"task_id": "t-plain"})).json()

    assert [f for f in stream if f.event == "token_delta"] == []
    assert stream[-1].data["response"] == ANSWER
    assert stream[-1].data["usage"] == USAGE_OF_TWO_CALLS
    assert answer["usage"] == USAGE_OF_TWO_CALLS


async def test_the_json_answer_carries_usage(start: Start, llm: StubLLMServer) -> None:
    server = await llm_swarm(start, llm, tool_format="completions", stream=False)
    payload = {"body": "answer please", "task_id": "t-json"}

    answer = (await (await server.user()).post("/message", json=payload)).json()

    assert answer["response"] == ANSWER
    assert answer["usage"] == USAGE_OF_TWO_CALLS


async def test_scripted_swarm_streams_no_deltas_and_no_usage(start: Start) -> None:
    agent = ScriptedAgent([tc("task_complete", finish_message="ok")])
    server = await start(template=scripted_template({"supervisor": agent}))

    stream = await post_stream(server, "t-scripted")
    task = (await (await server.user()).get("/task", params={"task_id": "t-scripted"})).json()

    assert [f.event for f in stream] == [
        "new_message",
        "tool_call",
        "task_complete_call",
        "new_message",
        "task_complete",
    ]
    assert set(stream[-1].data) == {"timestamp", "task_id", "response", "seq", "status"}
    assert "usage" not in task


async def test_the_python_client_passes_token_deltas_through(
    start: Start, llm: StubLLMServer
) -> None:
    server = await llm_swarm(start, llm, tool_format="completions", stream=True)

    async with MAILClient(server.url, api_key="user-key", config=ClientConfig()) as client:
        stream = await client.post_message_stream("answer please", task_id="t-client")
        async with stream:
            got = [event async for event in stream]

    live = [e for e in got if e.event == "token_delta"]
    assert live and all(e.id is None for e in live)
    answer = [e.json() for e in live if e.json()["kind"] == "answer"]
    assert "".join(d["delta"] for d in answer) == ANSWER
    assert (got[-1].event, got[-1].json()["response"]) == ("task_complete", ANSWER)


async def test_each_turn_tells_when_it_began_and_its_model_calls(
    start: Start, llm: StubLLMServer
) -> None:
    # the first tool_call of a turn records the turn's start and each model call's tokens
    # (for the viewer's waterfall); replayed from the store, they are the same
    server = await llm_swarm(start, llm, tool_format="completions", stream=False)
    live = await post_stream(server, "t-turns")
    user = await server.user()
    async with user.stream("GET", "/tasks/t-turns/events") as response:
        replay = await read_stream(response)

    calls = [f for f in replay if f.event == "tool_call"]
    firsts = [f for f in calls if "turn_started" in f.data["extra_data"]]
    assert [f.data["extra_data"]["tool_name"] for f in firsts] == ["double", "task_complete"]
    total = dict.fromkeys(USAGE_OF_TWO_CALLS, 0)
    for frame in firsts:
        extra = frame.data["extra_data"]
        assert extra["turn_started"] <= frame.data["timestamp"]
        [model_call] = extra["model_calls"]
        assert model_call["model"] == "openai/stub-model"
        assert extra["turn_started"] <= model_call["timestamp"] <= frame.data["timestamp"]
        for key, value in model_call["usage"].items():
            total[key] += value
    assert total == USAGE_OF_TWO_CALLS
    live_calls = [f.data for f in live if f.event == "tool_call"]
    assert live_calls == [f.data for f in calls]
