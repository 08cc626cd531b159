"""``[server.map] summarizer = "litellm"`` on a real server against a scripted
OpenAI-compatible chat-completions server on loopback (R11): the request, the JSON
summary with the ``include``d sections, the cache, and the extractive fallback."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server.conftest import Running, Start, make_config
from tests.server.test_map_admin import result, say

from mail.config import load_config
from mail.errors import ConfigurationError
from mail.factories._litellm import import_litellm
from mail.testing.llm import StubLLMServer, StubReply

pytestmark = pytest.mark.timeout(60)

ANSWER = {
    "text": "They plan the release.",
    "keyPoints": ["a release"],
    "keyDecisions": ["ship on Friday"],
    "openQuestions": ["who writes the notes?"],
}


@pytest.fixture
async def llm() -> AsyncIterator[StubLLMServer]:
    import_litellm()  # before the server: its first summary would import it on the loop
    async with StubLLMServer() as server:
        yield server


async def summarized(start: Start, tmp_path: Path, llm: StubLLMServer) -> Running:
    config = make_config(
        tmp_path,
        map={
            "summarizer": "litellm",
            "summary_model": "openai/summarizer",
            "summary_api_base": llm.base_url,
            "summary_api_key": "test-key",
        },
    )
    return await start(config)


async def conversation(user: httpx.AsyncClient) -> str:
    cid = str((await result(user, "mail/create", {}))["conversation"]["id"])
    await say(user, cid, "We will ship on Friday.")
    await say(user, cid, "Who writes the notes?")
    await say(user, cid, "hidden", visibility={"type": "private"})
    return cid


async def summary(user: httpx.AsyncClient, cid: str, **params: Any) -> dict[str, Any]:
    return await result(user, "mail/summary", {"conversationId": cid, **params})


async def test_the_model_summarizes_and_the_summary_is_cached(
    start: Start, tmp_path: Path, llm: StubLLMServer
) -> None:
    running = await summarized(start, tmp_path, llm)
    user = await running.user()
    cid = await conversation(user)
    llm.script(json.dumps({k: v for k, v in ANSWER.items() if k != "openQuestions"}))
    first = await summary(user, cid, include={"openQuestions": False})
    assert first["generator"] == "litellm" and first["model"] == "openai/summarizer"
    assert first["summary"] == ANSWER["text"] and first["generated"] is True
    assert {k: first[k] for k in ("keyPoints", "keyDecisions")} == {
        k: ANSWER[k] for k in ("keyPoints", "keyDecisions")
    }
    assert "openQuestions" not in first and first["turnCount"] == 2
    (request,) = llm.requests
    assert request.api == "chat" and request.model == "summarizer"
    assert request.headers["authorization"] == "Bearer test-key"
    system, transcript = request.messages
    assert '"keyDecisions"' in system["content"] and "openQuestions" not in system["content"]
    assert transcript["content"] == (
        "user:u1: We will ship on Friday.\nuser:u1: Who writes the notes?"
    )  # public turns only
    cached = await summary(user, cid, include={"openQuestions": False})
    assert cached == {**first, "generated": False}
    llm.script(json.dumps(ANSWER), json.dumps({**ANSWER, "text": "Again."}))
    full = await summary(user, cid)  # a section the cache lacks: asked again
    assert full["openQuestions"] == ["who writes the notes?"] and len(llm.requests) == 2
    assert (await summary(user, cid, regenerate=True))["summary"] == "Again."
    assert len(llm.requests) == 3


@pytest.mark.parametrize(
    "reply",
    [
        StubReply.http_error(500),
        "not JSON at all",
        json.dumps({"text": "t", "keyPoints": "not a list"}),
        json.dumps(["no", "object"]),
    ],
    ids=["http-500", "not-json", "bad-section", "not-an-object"],
)
async def test_a_failing_model_falls_back_to_extractive(
    start: Start,
    tmp_path: Path,
    llm: StubLLMServer,
    reply: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    running = await summarized(start, tmp_path, llm)
    user = await running.user()
    cid = await conversation(user)
    llm.script(reply)
    with caplog.at_level(logging.WARNING, logger="mail.server"):
        fallback = await summary(user, cid)
    assert (fallback["generator"], fallback["fallbackFrom"]) == ("extractive", "litellm")
    assert fallback["keyDecisions"] == ["We will ship on Friday."]
    assert any("LiteLLM summarizer" in r.getMessage() for r in caplog.records)
    assert "test-key" not in caplog.text
    llm.script(json.dumps(ANSWER))
    assert (await summary(user, cid, regenerate=True))["generator"] == "litellm"


async def test_a_fenced_answer_is_read(start: Start, tmp_path: Path, llm: StubLLMServer) -> None:
    running = await summarized(start, tmp_path, llm)
    user = await running.user()
    cid = await conversation(user)
    llm.script(f"```json\n{json.dumps(ANSWER)}\n```")
    assert (await summary(user, cid))["keyDecisions"] == ["ship on Friday"]


async def test_an_empty_conversation_asks_no_model(
    start: Start, tmp_path: Path, llm: StubLLMServer
) -> None:
    running = await summarized(start, tmp_path, llm)
    user = await running.user()
    cid = (await result(user, "mail/create", {}))["conversation"]["id"]
    assert (await summary(user, cid))["turnCount"] == 0
    assert llm.requests == []


def test_the_summarizer_settings_are_checked(tmp_path: Path) -> None:
    def error(map_: dict[str, Any]) -> str:
        with pytest.raises(ConfigurationError) as caught:
            load_config(None, env={}, search=False, overrides={"server": {"map": map_}})
        return str(caught.value)

    missing = error({"summarizer": "litellm"})
    assert "summary_model" in missing and "\n" not in missing
    assert "'extractive' or 'litellm'" in error({"summarizer": "gpt"})
    assert "http" in error({"summary_api_base": "ftp://x"})
    assert "summary_timeout" in error({"summary_timeout": 0})
    config = load_config(
        None, env={"MAIL_MAP_SUMMARY_API_KEY": "from-env"}, search=False
    ).server.map
    assert (config.summarizer, config.summary_api_key) == ("extractive", "from-env")
    assert "from-env" not in repr(config)
