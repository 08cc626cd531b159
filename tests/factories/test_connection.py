"""Where requests go and how they authenticate: LiteLLM proxy vs direct (CONTRACT 6.2)."""

from __future__ import annotations

from typing import Any

import pytest

from mail.factories import LiteLLMAgentFunction, LiteLLMSupervisorFunction
from mail.testing.llm import StubLLMServer


def proxy_agent(cls: type[LiteLLMAgentFunction] = LiteLLMAgentFunction, **params: Any) -> Any:
    params.setdefault("name", "worker")
    params.setdefault("comm_targets", ["supervisor"])
    params.setdefault("tools", [])
    params.setdefault("llm", "openai/gpt-5-mini")
    params.setdefault("retry_backoff", 0.0)
    return cls(**params)


@pytest.mark.parametrize("tool_format", ["completions", "responses"])
@pytest.mark.parametrize("cls", [LiteLLMAgentFunction, LiteLLMSupervisorFunction])
async def test_proxy_gets_the_model_and_the_user_token(
    llm: StubLLMServer,
    user_turn: Any,
    monkeypatch: pytest.MonkeyPatch,
    tool_format: str,
    cls: type[LiteLLMAgentFunction],
) -> None:
    monkeypatch.setenv("LITELLM_PROXY_API_BASE", llm.base_url)
    monkeypatch.setenv("LITELLM_PROXY_API_KEY", "proxy-service-key")
    llm.script("ok")
    agent = proxy_agent(cls, user_token="caller-token", tool_format=tool_format)

    await agent([user_turn("hi")])

    [request] = llm.requests
    assert agent.model == "litellm_proxy/openai/gpt-5-mini"
    assert request.model == "openai/gpt-5-mini"  # the proxy resolves the provider
    # the caller's token wins over the service key (the original supervisor sent "Bearer ")
    assert request.authorization == "Bearer caller-token"


@pytest.mark.parametrize("tool_format", ["completions", "responses"])
async def test_proxy_without_user_token_uses_the_proxy_key(
    llm: StubLLMServer, user_turn: Any, monkeypatch: pytest.MonkeyPatch, tool_format: str
) -> None:
    monkeypatch.setenv("LITELLM_PROXY_API_BASE", llm.url)  # without /v1
    monkeypatch.setenv("LITELLM_PROXY_API_KEY", "proxy-service-key")
    llm.script("ok")
    agent = proxy_agent(tool_format=tool_format)

    await agent([user_turn("hi")])

    [request] = llm.requests
    assert request.path == ("/chat/completions" if tool_format == "completions" else "/responses")
    assert request.authorization == "Bearer proxy-service-key"


async def test_proxy_api_base_parameter_beats_the_environment(
    llm: StubLLMServer, user_turn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITELLM_PROXY_API_BASE", "http://127.0.0.1:9/v1")  # discard port
    llm.script("ok")
    agent = proxy_agent(api_base=llm.base_url, user_token="caller-token")

    await agent([user_turn("hi")])

    assert llm.requests[0].authorization == "Bearer caller-token"


def test_the_proxy_prefix_is_not_doubled() -> None:
    agent = proxy_agent(llm="litellm_proxy/gpt-5-mini")

    assert agent.model == "litellm_proxy/gpt-5-mini"


@pytest.mark.parametrize("tool_format", ["completions", "responses"])
async def test_direct_call_with_api_base_does_not_forward_the_user_token(
    llm: StubLLMServer, user_turn: Any, tool_format: str
) -> None:
    llm.script("ok")
    agent = proxy_agent(
        llm="openai/stub-model",
        use_proxy=False,
        api_base=llm.base_url,
        api_key="provider-key",
        user_token="caller-token",
        tool_format=tool_format,
    )

    await agent([user_turn("hi")])

    [request] = llm.requests
    assert agent.model == "openai/stub-model"
    assert request.model == "stub-model"
    assert request.authorization == "Bearer provider-key"


async def test_user_token_can_change_between_calls(
    llm: StubLLMServer, user_turn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITELLM_PROXY_API_BASE", llm.base_url)
    llm.script("ok", "ok")
    agent = proxy_agent(user_token="first")

    await agent([user_turn("hi")])
    agent.user_token = "second"
    await agent([user_turn("hi")])

    assert [r.authorization for r in llm.requests] == ["Bearer first", "Bearer second"]
