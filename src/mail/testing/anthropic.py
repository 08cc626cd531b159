"""A scripted Anthropic Messages API server on loopback, for testing Anthropic agents offline.

:class:`StubAnthropicServer` answers ``POST /v1/messages`` as Anthropic does: a ``message``
JSON body or, when the request says ``"stream": true``, server-sent events
(``message_start``, ``content_block_start``/``_delta``/``_stop`` with ``text_delta``,
``input_json_delta``, ``thinking_delta`` and ``signature_delta``, ``message_delta``,
``message_stop``). Its script works as :class:`~mail.testing.llm.StubLLMServer`'s, with the
same reply types::

    from mail.testing.anthropic import StubAnthropicServer
    from mail.testing.llm import StubReply

    async with StubAnthropicServer() as claude:
        claude.script(
            StubReply.tool_calls(("task_complete", {"finish_message": "ok"}), reasoning="hmm"),
            "plain text",
            StubReply.http_error(529, "overloaded"),
        )
        agent = AnthropicAgentFunction(..., base_url=claude.base_url, api_key="test")
        ...
        assert claude.requests[0].json["thinking"] == {...}

A reply's ``reasoning`` becomes a ``thinking`` block signed ``stub-signature-<message id>``,
its ``items`` raw content blocks placed after it (e.g. ``{"type": "redacted_thinking",
"data": "..."}``), its ``text`` a ``text`` block and its calls ``tool_use`` blocks. An
error reply answers Anthropic's error JSON (``{"type": "error", "error": {"type":
"overloaded_error", "message": ...}}``). Requests are recorded as
:class:`~mail.testing.llm.StubRequest` (``api == "messages"``; ``api_key`` is the
``x-api-key`` header).

This module imports aiohttp; ``import mail.testing`` does not import it.
"""

from __future__ import annotations

import json

from aiohttp import web

from mail.testing._anthropic_wire import content_blocks, error_body, message_body, message_events
from mail.testing._stub_server import ReplyLike, Rule, ScriptedServer, StubRequest, open_sse

__all__ = ["ReplyLike", "Rule", "StubAnthropicServer", "StubRequest"]


class StubAnthropicServer(ScriptedServer):
    """A scripted Anthropic Messages API server on ``127.0.0.1`` (an async context manager).

    Its arguments (``rule``, ``host``, ``port``), attributes (``requests``, ``unscripted``)
    and scripting methods (``script``, ``extend``, ``pending``) are those of
    :class:`~mail.testing.llm.StubLLMServer`.
    """

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self._messages)

    @property
    def base_url(self) -> str:
        """The ``base_url`` the ``anthropic`` SDK expects (it adds ``/v1/messages``)."""
        return self.url

    def _error(self, status: int, message: str) -> web.Response:
        return web.json_response(error_body(status, message), status=status)

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body, reply = await self._accept(request)
        if isinstance(reply, web.Response):
            return reply
        message_id = self._new_id("msg")
        call_ids = [self._new_id("toolu") for _ in reply.calls]
        blocks = content_blocks(reply, call_ids, f"stub-signature-{message_id}")
        message = message_body(str(body.get("model", "")), message_id, blocks)
        if not body.get("stream"):
            return web.json_response(message)
        stream = await open_sse(request)
        for event in message_events(message):
            await stream.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        await stream.write_eof()
        return stream
