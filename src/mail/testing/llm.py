"""A scripted, OpenAI-compatible LLM server on loopback, for testing LLM agents offline.

:class:`StubLLMServer` speaks enough of OpenAI's HTTP API for LiteLLM's ``openai/`` and
``litellm_proxy/`` providers: ``POST /v1/chat/completions`` and ``POST /v1/responses``
(also without the ``/v1`` prefix), each plain JSON or, when the request says
``"stream": true``, server-sent events in OpenAI's format. It answers from a script of
replies, then from a rule, and records every request::

    from mail.testing.llm import StubLLMServer, StubReply

    async with StubLLMServer() as llm:
        llm.script(
            [("send_request", {"target": "weather", "subject": "s", "body": "b"})],
            StubReply.tool_calls(("task_complete", {"finish_message": "ok"}), reasoning="done"),
            "plain text",
            StubReply.http_error(500),
            StubReply.slow(5.0),
            StubReply.malformed("send_request"),
        )
        agent = LiteLLMAgentFunction(..., llm="openai/stub", use_proxy=False,
                                     api_base=llm.base_url, api_key="test")
        ...
        assert llm.requests[0].tool_names == [...]

A reply is a :class:`StubReply`, a string (a text answer), a sequence of ``(tool name,
arguments)`` pairs (one turn with those calls; string arguments are sent verbatim), or a
callable that receives the request JSON and returns one of those. Every answer reports
token usage (10 input tokens of which 4 cached, 5 output tokens of which 3 reasoning): in
the body, in ``response.completed`` of a Responses stream, and in a final chunk of a chat
stream when the request asks for it (``stream_options.include_usage``). ``rule`` answers once the
script is used up; without a rule an unscripted request gets HTTP 500 and is counted in
:attr:`StubLLMServer.unscripted`.

As a command, ``python -m mail.testing.llm --port 4000`` serves the stub with
:func:`example_swarm_rule`, a model that plays the ``example`` and ``example-no-proxy``
swarms of the repository's ``swarms.json`` end to end, until interrupted; it prints the URL
and the variables that point LiteLLM at it (docs/factories.md, "An offline LLM").

This module imports aiohttp; ``import mail.testing`` does not import it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Sequence

from aiohttp import web

from mail.testing._llm_demo import example_swarm_rule
from mail.testing._llm_wire import (
    ReplyIds,
    StubReply,
    StubToolCall,
    chat_body,
    chat_chunks,
    responses_body,
    responses_events,
)
from mail.testing._stub_server import ReplyLike, Rule, ScriptedServer, StubRequest, open_sse

__all__ = [
    "ReplyLike",
    "Rule",
    "StubLLMServer",
    "StubReply",
    "StubRequest",
    "StubToolCall",
    "example_swarm_rule",
    "main",
]


class StubLLMServer(ScriptedServer):
    """A scripted OpenAI-compatible server on ``127.0.0.1`` (an async context manager).

    Args:
        rule: answers every request once the script is used up; receives the request JSON.
        host: interface to bind (loopback by default).
        port: port to bind; 0 picks a free one.

    Attributes:
        requests: every request received, in order (:class:`StubRequest`).
        unscripted: how many requests found neither a scripted reply nor a rule.
    """

    # --- lifecycle ---------------------------------------------------------------------

    def _routes(self, app: web.Application) -> None:
        for prefix in ("/v1", ""):
            app.router.add_post(f"{prefix}/chat/completions", self._chat)
            app.router.add_post(f"{prefix}/responses", self._responses)

    @property
    def base_url(self) -> str:
        """:attr:`url` + ``/v1``: the ``api_base`` OpenAI-style clients expect."""
        return f"{self.url}/v1"

    # --- handlers ----------------------------------------------------------------------

    def _error(self, status: int, message: str) -> web.Response:
        kind = "server_error" if status >= 500 else "invalid_request_error"  # noqa: PLR2004
        body = {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}
        return web.json_response(body, status=status)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body, reply = await self._accept(request)
        if isinstance(reply, web.Response):
            return reply
        rid = self._new_id("chatcmpl")
        call_ids = [self._new_id("call") for _ in reply.calls]
        model = str(body.get("model", ""))
        if not body.get("stream"):
            return web.json_response(chat_body(reply, model, rid, call_ids))
        options = body.get("stream_options") or {}
        usage = bool(options.get("include_usage")) if isinstance(options, dict) else False
        stream = await open_sse(request)
        for chunk in chat_chunks(reply, model, rid, call_ids, usage):
            await stream.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await stream.write(b"data: [DONE]\n\n")
        await stream.write_eof()
        return stream

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body, reply = await self._accept(request)
        if isinstance(reply, web.Response):
            return reply
        ids = ReplyIds(
            rid=self._new_id("resp"),
            call_ids=[self._new_id("call") for _ in reply.calls],
            new_id=self._new_id,
        )
        if not body.get("stream"):
            return web.json_response(responses_body(reply, body, ids))
        stream = await open_sse(request)
        for event in responses_events(reply, body, ids):
            data = json.dumps(event)
            await stream.write(f"event: {event['type']}\ndata: {data}\n\n".encode())
        await stream.write_eof()
        return stream


_DEFAULT_PORT = 4000  # the LiteLLM proxy's own default


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mail.testing.llm [--host H] [--port N]``: serve :func:`example_swarm_rule`
    until SIGINT or SIGTERM; the first line printed names the URL (``--port 0`` picks a
    free port). Returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m mail.testing.llm",
        description="A scripted OpenAI-compatible LLM that plays the example swarms offline.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (default: %(default)s)")
    parser.add_argument(
        "--port",
        type=int,
        default=_DEFAULT_PORT,
        help="port, 0 for a free one (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve(args.host, args.port))
    except OSError as e:
        sys.stderr.write(f"stub LLM: cannot listen on {args.host}:{args.port}: {e}\n")
        return 1
    return 0


async def _serve(host: str, port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # Windows: Ctrl-C raises instead
            loop.add_signal_handler(signum, stop.set)
    async with StubLLMServer(rule=example_swarm_rule, host=host, port=port) as llm:
        url = llm.base_url
        sys.stdout.write(
            f"stub LLM listening on {url} (Ctrl-C to stop)\n"
            f"  example:          LITELLM_PROXY_API_BASE={url}\n"
            f"  example-no-proxy: OPENAI_API_BASE={url} OPENAI_API_KEY=stub\n"
        )
        sys.stdout.flush()
        await stop.wait()


if __name__ == "__main__":
    sys.exit(main())
