"""Failed LLM calls: retries of transient errors, timeouts, client errors."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mail.errors import UnreachableError
from mail.factories import LLMCallError
from mail.testing.llm import StubLLMServer, StubReply

FORMATS = ["completions", "responses"]


@pytest.mark.parametrize("tool_format", FORMATS)
async def test_a_500_is_retried_then_raised(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, tool_format: str
) -> None:
    llm.script(*[StubReply.http_error(500, "upstream exploded")] * 3)
    agent = make_agent(tool_format=tool_format, max_retries=2)

    with pytest.raises(LLMCallError, match=r"after 3 attempts.*upstream exploded") as info:
        await agent([user_turn("hello")])

    assert len(llm.requests) == 3
    error = info.value
    assert (error.status, error.attempts, error.retryable) == (500, 3, True)
    assert error.agent == "worker"
    assert error.model == "openai/stub-model"
    assert error.__cause__ is not None


@pytest.mark.parametrize("tool_format", FORMATS)
async def test_a_transient_error_then_success_answers(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, tool_format: str
) -> None:
    llm.script(StubReply.http_error(503), StubReply.http_error(429), [("help", {})])
    agent = make_agent(tool_format=tool_format, max_retries=2)

    _, [call] = await agent([user_turn("hello")])

    assert call.tool_name == "help"
    assert len(llm.requests) == 3


@pytest.mark.parametrize("tool_format", FORMATS)
async def test_a_client_error_is_not_retried(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, tool_format: str
) -> None:
    llm.script(StubReply.http_error(400, "bad tool schema"))
    agent = make_agent(tool_format=tool_format, max_retries=2)

    with pytest.raises(LLMCallError, match=r"after 1 attempt: .*bad tool schema") as info:
        await agent([user_turn("hello")])

    assert (info.value.status, info.value.retryable) == (400, False)
    assert len(llm.requests) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("tool_format", FORMATS)
async def test_a_slow_model_times_out(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, tool_format: str, stream: bool
) -> None:
    llm.script(StubReply.slow(30.0))
    agent = make_agent(tool_format=tool_format, stream_tokens=stream, timeout=0.3, max_retries=0)

    started = time.monotonic()
    with pytest.raises(LLMCallError, match="Timeout") as info:
        await agent([user_turn("hello")])

    assert time.monotonic() - started < 5.0
    assert info.value.retryable is True
    assert info.value.status is None or info.value.status == 408


@pytest.mark.parametrize("tool_format", FORMATS)
async def test_a_timeout_is_retried(
    llm: StubLLMServer, make_agent: Any, user_turn: Any, tool_format: str
) -> None:
    llm.script(StubReply.slow(30.0), [("help", {})])
    agent = make_agent(tool_format=tool_format, timeout=0.3, max_retries=1)

    _, [call] = await agent([user_turn("hello")])

    assert call.tool_name == "help"
    assert len(llm.requests) == 2


@pytest.mark.parametrize("tool_format", FORMATS)
async def test_an_unreachable_server_is_a_call_error_naming_the_url(
    make_agent: Any, user_turn: Any, tool_format: str
) -> None:
    async with StubLLMServer() as gone:
        url = gone.base_url
    agent = make_agent(api_base=url, max_retries=1, tool_format=tool_format)

    with pytest.raises(LLMCallError, match="after 2 attempts") as info:
        await agent([user_turn("hello")])

    assert info.value.retryable is True
    path = "/chat/completions" if tool_format == "completions" else "/responses"
    # the URL tried, and what sets it
    assert f"(could not connect to {url}{path}, set by the api_base of agent " in str(info.value)
    # refused: an UnreachableError, which the runtime gives no second turn
    assert isinstance(info.value, UnreachableError)


async def test_a_provider_error_is_not_taken_for_a_connection_error(
    llm: StubLLMServer, make_agent: Any, user_turn: Any
) -> None:
    llm.script(StubReply.http_error(400, "bad tool schema"))

    with pytest.raises(LLMCallError) as info:
        await make_agent(max_retries=0)([user_turn("hello")])

    assert "could not connect" not in str(info.value)
