"""The scripting machinery the stub LLM servers share: a queue of replies, a rule for the
rest, the record of requests, and SSE answers (private to :mod:`mail.testing.llm` and
:mod:`mail.testing.anthropic`)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from aiohttp import web

from mail.testing._llm_wire import StubReply
from mail.testing._loopback import LoopbackApp

__all__ = ["ReplyLike", "Rule", "ScriptedServer", "StubRequest", "open_sse"]

ReplyLike: TypeAlias = (
    "StubReply | str | Sequence[tuple[str, dict[str, Any] | str]] | "
    "Callable[[dict[str, Any]], StubReply | str | Sequence[tuple[str, dict[str, Any] | str]]]"
)
Rule: TypeAlias = (
    "Callable[[dict[str, Any]], StubReply | str | Sequence[tuple[str, dict[str, Any] | str]]]"
)

_Api: TypeAlias = Literal["chat", "responses", "messages"]


@dataclass(frozen=True, slots=True)
class StubRequest:
    """A request a stub received: ``headers`` have lower-case names, ``json`` is the body."""

    method: str
    path: str
    headers: dict[str, str]
    json: dict[str, Any]

    @property
    def api(self) -> _Api:
        """``"chat"`` for chat completions, ``"responses"`` for the Responses API,
        ``"messages"`` for Anthropic's Messages API."""
        path = self.path.rstrip("/")
        if path.endswith("responses"):
            return "responses"
        return "messages" if path.endswith("messages") else "chat"

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
    def api_key(self) -> str | None:
        """The API key sent: the ``x-api-key`` header, else the ``Authorization`` bearer."""
        if key := self.headers.get("x-api-key"):
            return key
        scheme, _, token = (self.authorization or "").partition(" ")
        return token if scheme.lower() == "bearer" and token else None

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered, in order, for any tool format."""
        names = []
        for tool in self.json.get("tools") or []:
            function = tool.get("function")
            names.append(function["name"] if isinstance(function, dict) else tool.get("name"))
        return names

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat or Anthropic ``messages``, or the Responses ``input`` items, sent."""
        items = self.json.get("messages", self.json.get("input", []))
        if isinstance(items, str):
            return [{"role": "user", "content": items}]
        return list(items)


def _resolve(reply: Any, body: dict[str, Any]) -> StubReply:
    if callable(reply) and not isinstance(reply, StubReply):
        reply = reply(body)
    return StubReply.of(reply)


class ScriptedServer(LoopbackApp):
    """A loopback server answering from a script of replies, then from ``rule``.

    Subclasses add routes and answer with :meth:`_accept`'s reply; :meth:`_error` shapes
    their error bodies.
    """

    def __init__(self, *, rule: Rule | None = None, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host=host, port=port)
        self.rule = rule
        self.requests: list[StubRequest] = []
        self.unscripted = 0
        self._replies: deque[Any] = deque()
        self._ids = itertools.count(1)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        if self._runner is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return f"http://{self._host}:{self._port}"

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

    # --- handling ----------------------------------------------------------------------

    def _error(self, status: int, message: str) -> web.Response:
        raise NotImplementedError

    def _next_reply(self, body: dict[str, Any]) -> StubReply | None:
        if self._replies:
            return _resolve(self._replies.popleft(), body)
        if self.rule is not None:
            return _resolve(self.rule, body)
        return None

    async def _accept(
        self, request: web.Request
    ) -> tuple[dict[str, Any], StubReply | web.Response]:
        """Record ``request`` and find its reply (after its delay), or an error response."""
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return {}, self._error(400, "request body is not JSON")
        if not isinstance(body, dict):
            return {}, self._error(400, "request body is not a JSON object")
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.requests.append(StubRequest(request.method, request.path, headers, body))
        try:
            reply = self._next_reply(body)
        except Exception as e:  # noqa: BLE001  # a broken rule is the test's bug: answer it
            return body, self._error(500, f"stub rule failed: {type(e).__name__}: {e}")
        if reply is None:
            self.unscripted += 1
            name = type(self).__name__
            return body, self._error(500, f"{name}: no reply scripted for {request.path}")
        if reply.delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), reply.delay)
        if reply.status != 200:  # noqa: PLR2004  # HTTP OK
            return body, self._error(reply.status, reply.error)
        return body, reply

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):04d}"


async def open_sse(request: web.Request) -> web.StreamResponse:
    """Start a ``text/event-stream`` answer to ``request``."""
    stream = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await stream.prepare(request)
    return stream
