"""Fixtures for testing the LiteLLM agent functions against a scripted local LLM.

Test modules are imported with ``--import-mode=importlib``, so helpers are handed out
through fixtures:

* ``llm``: a started :class:`StubLLMServer` (closed after the test).
* ``make_agent(cls=LiteLLMAgentFunction, **params)``: an agent wired to ``llm`` directly
  (``use_proxy=False``, ``openai/stub-model``, ``api_base=llm.base_url``, no retry
  backoff); ``params`` override the defaults.
* ``user_turn(body)``: the history item the runtime appends for an incoming message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from mail.factories import LiteLLMAgentFunction
from mail.testing.llm import StubLLMServer

MakeAgent = Callable[..., Any]

MODEL = "stub-model"


@pytest.fixture(autouse=True)
def _no_ambient_llm_config(monkeypatch: pytest.MonkeyPatch) -> None:
    # The developer's shell must not change where the agents send requests.
    for name in ("LITELLM_PROXY_API_BASE", "LITELLM_PROXY_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def llm() -> AsyncIterator[StubLLMServer]:
    async with StubLLMServer() as server:
        yield server


@pytest.fixture
def make_agent(llm: StubLLMServer) -> MakeAgent:
    def build(cls: type[LiteLLMAgentFunction] = LiteLLMAgentFunction, **params: Any) -> Any:
        params.setdefault("name", "worker")
        params.setdefault("comm_targets", ["supervisor"])
        params.setdefault("tools", [])
        params.setdefault("llm", f"openai/{MODEL}")
        params.setdefault("use_proxy", False)
        params.setdefault("api_base", llm.base_url)
        params.setdefault("api_key", "test-key")
        params.setdefault("retry_backoff", 0.0)
        params.setdefault("timeout", 10.0)
        return cls(**params)

    return build


@pytest.fixture
def user_turn() -> Callable[[str], dict[str, Any]]:
    def build(body: str) -> dict[str, Any]:
        return {"role": "user", "content": f"<incoming_message>{body}</incoming_message>"}

    return build
