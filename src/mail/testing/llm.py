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
import itertools
import json
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

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
from mail.testing._loopback import LoopbackApp

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

ReplyLike: TypeAlias = (
    "StubReply | str | Sequence[tuple[str, dict[str, Any] | str]] | "
    "Callable[[dict[str, Any]], StubReply | str | Sequence[tuple[str, dict[str, Any] | str]]]"
)
Rule: TypeAlias = (
    "Callable[[dict[str, Any]], StubReply | str | Sequence[tuple[str, dict[str, Any] | str]]]"
)

_Api: TypeAlias = Literal["chat", "responses"]


@dataclass(frozen=True, slots=True)
class StubRequest:
    """A request the stub received: ``headers`` have lower-case names, ``json`` is the body."""

    method: str
    path: str
    headers: dict[str, str]
    json: dict[str, Any]

    @property
    def api(self) -> _Api:
        """``"chat"`` for chat completions, ``"responses"`` for the Responses API."""
        return "responses" if self.path.rstrip("/").endswith("responses") else "chat"

    @property
    def model(self) -> str:
        """The ``model`` field of the body."""
        return str(self.json.get("model", ""))

    @property
    def stream(self) -> bool:
        """True when the client asked for a streamed answer."""
        return bool(self.json.get("stream"))

    @property
    def authorization(self) -> str | None:
        """The ``Authorization`` header, if any."""
        return self.headers.get("authorization")

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered, in order, for either tool format."""
        names = []
        for tool in self.json.get("tools") or []:
            function = tool.get("function")
            names.append(function["name"] if isinstance(function, dict) else tool.get("name"))
        return names

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat ``messages`` or Responses ``input`` items sent."""
        items = self.json.get("messages", self.json.get("input", []))
        if isinstance(items, str):
            return [{"role": "user", "content": items}]
        return list(items)


def _resolve(reply: Any, body: dict[str, Any]) -> StubReply:
    if callable(reply) and not isinstance(reply, StubReply):
        reply = reply(body)
    return StubReply.of(reply)


class StubLLMServer(LoopbackApp):
    """A scripted OpenAI-compatible server on ``127.0.0.1`` (an async context manager).

    Args:
        rule: answers every request once the script is used up; receives the request JSON.
        host: interface to bind (loopback by default).
        port: port to bind; 0 picks a free one.

    Attributes:
        requests: every request received, in order (:class:`StubRequest`).
        unscripted: how many requests found neither a scripted reply nor a rule.
    """

    def __init__(self, *, rule: Rule | None = None, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host=host, port=port)
        self.rule = rule
        self.requests: list[StubRequest] = []
        self.unscripted = 0
        self._replies: deque[Any] = deque()
        self._ids = itertools.count(1)

    # --- lifecycle ---------------------------------------------------------------------

    def _routes(self, app: web.Application) -> None:
        for prefix in ("/v1", ""):
            app.router.add_post(f"{prefix}/chat/completions", self._chat)
            app.router.add_post(f"{prefix}/responses", self._responses)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        if self._runner is None:
            raise RuntimeError("StubLLMServer is not started")
        return f"http://{self._host}:{self._port}"

    @property
    def base_url(self) -> str:
        """:attr:`url` + ``/v1``: the ``api_base`` OpenAI-style clients expect."""
        return f"{self.url}/v1"

    # --- scripting ---------------------------------------------------------------------

    def script(self, *replies: ReplyLike) -> None:
        """Queue ``replies``; each answers one request, in order."""
        for reply in replies:
            if not callable(reply) or isinstance(reply, StubReply):
                _resolve(reply, {})  # fail now on a malformed reply, not mid-test
            self._replies.append(reply)

    def extend(self, replies: Iterable[ReplyLike]) -> None:
        """Queue every reply of ``replies`` (same as ``script(*replies)``)."""
        self.script(*replies)

    @property
    def pending(self) -> int:
        """How many scripted replies have not been used yet."""
        return len(self._replies)

    # --- handlers ----------------------------------------------------------------------

    def _next_reply(self, body: dict[str, Any]) -> StubReply | None:
        if self._replies:
            return _resolve(self._replies.popleft(), body)
        if self.rule is not None:
            return _resolve(self.rule, body)
        return None

    async def _accept(
        self, request: web.Request
    ) -> tuple[dict[str, Any], StubReply | web.Response]:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return {}, _error(400, "request body is not JSON")
        if not isinstance(body, dict):
            return {}, _error(400, "request body is not a JSON object")
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.requests.append(StubRequest(request.method, request.path, headers, body))
        try:
            reply = self._next_reply(body)
        except Exception as e:  # noqa: BLE001  # a broken rule is the test's bug: answer it
            return body, _error(500, f"stub rule failed: {type(e).__name__}: {e}")
        if reply is None:
            self.unscripted += 1
            return body, _error(500, f"StubLLMServer: no reply scripted for {request.path}")
        if reply.delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), reply.delay)
        if reply.status != 200:  # noqa: PLR2004  # HTTP OK
            return body, _error(reply.status, reply.error)
        return body, reply

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):04d}"

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
        stream = await _open_sse(request)
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
        stream = await _open_sse(request)
        for event in responses_events(reply, body, ids):
            data = json.dumps(event)
            await stream.write(f"event: {event['type']}\ndata: {data}\n\n".encode())
        await stream.write_eof()
        return stream


def _error(status: int, message: str) -> web.Response:
    kind = "server_error" if status >= 500 else "invalid_request_error"  # noqa: PLR2004
    body = {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}
    return web.json_response(body, status=status)


async def _open_sse(request: web.Request) -> web.StreamResponse:
    stream = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await stream.prepare(request)
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
