"""The A2A routes' gates: every JSON-RPC and HTTP+JSON route authenticates the caller with
our API keys (role user or admin, as ``POST /message``) before the SDK sees the request;
the call context carries the :class:`~mail.server.auth.Caller`; a message's parts are
checked before a task is made of it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from a2a.server.agent_execution import RequestContext, SimpleRequestContextBuilder
from a2a.server.context import ServerCallContext
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.utils.errors import InvalidParamsError
from google.protobuf.json_format import MessageToDict
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from mail._limits import TASK_ID_RULE, task_id_problem
from mail.errors import AuthenticationError, MAILError
from mail.server._a2a_store import CALLER
from mail.server._statuses import server_status

if TYPE_CHECKING:
    from a2a.types import Message, SendMessageRequest, Task

    from mail.server.auth import Caller

__all__ = [
    "CallerContext",
    "CheckedParts",
    "Endpoint",
    "guarded",
    "message_metadata",
    "message_text",
]

Endpoint = Callable[[Request], Awaitable[Response]]
#: the call context's ``method`` of a streamed send (the SDK's JSON-RPC dispatcher sets it)
STREAMING = "SendStreamingMessage"
Authorize = Callable[[Request], Awaitable["Caller"]]


def guarded(routes: Sequence[BaseRoute], authorize: Authorize) -> list[BaseRoute]:
    """``routes`` with each endpoint behind ``authorize``; the SDK's ``/{tenant}`` mount is
    left out (this server has no tenants, and it would catch every two-segment path)."""
    return [
        Route(r.path, _guard(r.endpoint, authorize), methods=sorted(r.methods or ()))
        for r in routes
        if isinstance(r, Route)
    ]


def _guard(endpoint: Endpoint, authorize: Authorize) -> Endpoint:
    async def authenticated(request: Request) -> Response:
        try:
            caller = await authorize(request)
        except MAILError as e:
            status = server_status(e)
            detail = "internal server error" if status == 500 else str(e)  # noqa: PLR2004
            headers = {"WWW-Authenticate": "Bearer"} if isinstance(e, AuthenticationError) else {}
            return JSONResponse({"detail": detail}, status_code=status, headers=headers)
        request.scope[CALLER] = caller
        return await endpoint(request)

    return authenticated


class CallerContext(DefaultServerCallContextBuilder):
    """The SDK's call context, with the authenticated caller in its ``state``."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[CALLER] = request.scope[CALLER]
        if request.url.path.endswith("/message:stream"):  # the JSON-RPC binding sets its own
            context.state["method"] = STREAMING
        return context


def message_text(message: Message) -> str:
    """The text of ``message``'s parts, joined by blank lines."""
    return "\n\n".join(part.text for part in message.parts)


class CheckedParts(SimpleRequestContextBuilder):
    """Refuses, before any task is made, a message this swarm cannot read: a part that is
    no text (data, file or URL), no text at all, or a ``contextId`` that is no MAIL task
    id (it names the MAIL task)."""

    async def build(
        self,
        context: ServerCallContext,
        params: SendMessageRequest | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
        task: Task | None = None,
    ) -> RequestContext:
        if params is not None:
            _check(params.message)
        return await super().build(context, params, task_id, context_id, task)


def _check(message: Message) -> None:
    for i, part in enumerate(message.parts):
        kind = part.WhichOneof("content")
        if kind != "text":
            raise InvalidParamsError(
                message=f"message.parts[{i}]: a {kind or 'empty'} part; this agent reads "
                "text parts only (send the content as text)"
            )
    if not message_text(message).strip():
        raise InvalidParamsError(message="message.parts: no text to send (give a text part)")
    if message.context_id and task_id_problem(message.context_id) is not None:
        raise InvalidParamsError(message=f"message.contextId: must be {TASK_ID_RULE}")
    entrypoint: Any = message_metadata(message).get("entrypoint")
    if entrypoint is not None and not isinstance(entrypoint, str):
        raise InvalidParamsError(message="message.metadata.entrypoint: must be an agent's name")


def message_metadata(message: Message) -> dict[str, Any]:
    """``message.metadata`` as JSON (``{}`` without)."""
    return MessageToDict(message.metadata) if message.HasField("metadata") else {}
