"""StubAnthropicServer over raw HTTP: Anthropic's body, event and error shapes."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from mail.testing.anthropic import StubAnthropicServer
from mail.testing.llm import StubReply

BODY = {"model": "claude-stub", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}


async def _post(server: StubAnthropicServer, body: dict[str, Any]) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{server.base_url}/v1/messages", json=body, headers={"x-api-key": "k"}) as r,
    ):
        return r.status, await r.text()


async def test_an_unscripted_request_gets_anthropics_error_json() -> None:
    async with StubAnthropicServer() as server:
        status, text = await _post(server, BODY)
        server.script(StubReply.http_error(429, "slow down"))
        limited, limited_text = await _post(server, BODY)
    assert status == 500 and server.unscripted == 1
    assert json.loads(text)["type"] == "error"
    assert json.loads(text)["error"]["type"] == "api_error"
    assert limited == 429
    assert json.loads(limited_text)["error"] == {"type": "rate_limit_error", "message": "slow down"}
    assert server.requests[0].api == "messages" and server.requests[0].api_key == "k"


async def test_a_streamed_reply_follows_the_messages_event_order() -> None:
    reply = StubReply.tool_calls(("lookup", {"q": "x"}), text="Looking.", reasoning="Think.")
    async with StubAnthropicServer(rule=lambda body: reply) as server:
        status, text = await _post(server, {**BODY, "stream": True})
    assert status == 200
    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    starts = [e["content_block"]["type"] for e in events if e["type"] == "content_block_start"]
    assert starts == ["thinking", "text", "tool_use"]
    deltas = {e["delta"]["type"] for e in events if e["type"] == "content_block_delta"}
    assert deltas == {"thinking_delta", "signature_delta", "text_delta", "input_json_delta"}
    arguments = "".join(
        e["delta"]["partial_json"]
        for e in events
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
    )
    assert json.loads(arguments) == {"q": "x"}
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
