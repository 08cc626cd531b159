"""A remote A2A agent for the tests: a real ``a2a-sdk`` server (its own request handler,
in-memory task store and app builder) on loopback, run as a process:
``python _remote_agent.py PORT TOKEN EVENTS_FILE``.

It wants ``Authorization: Bearer TOKEN`` and answers by the message's text:

- ``fail ...``: the task fails (``remote failure``);
- ``ask ...``: ``input-required`` (``Which city?``); the next message completes it with
  ``remote answer for <that message>``;
- ``slow ...``: works until it is cancelled (``started <task id>``, then ``cancelled
  <task id>``, are appended to EVENTS_FILE);
- ``die ...``: the process exits at once;
- anything else: completed, artifact ``remote says: <text>``.

Each request's ``traceparent``, when it has one, is appended to EVENTS_FILE too.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import uvicorn
from a2a.helpers import new_task
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    Part,
    TaskState,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send


class Remote(AgentExecutor):
    def __init__(self, events: Path) -> None:
        self.events = events

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id and context.message
        text = context.get_user_input()
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        task = context.current_task
        if task is None:
            await event_queue.enqueue_event(
                new_task(
                    context.task_id,
                    context.context_id,
                    TaskState.TASK_STATE_SUBMITTED,
                    history=[context.message],
                )
            )
        await updater.start_work()
        if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await self._done(updater, f"remote answer for {text}")
        elif text.startswith("fail"):
            await updater.failed(updater.new_agent_message([Part(text="remote failure")]))
        elif text.startswith("ask"):
            await updater.requires_input(updater.new_agent_message([Part(text="Which city?")]))
        elif text.startswith("slow"):
            self._note(f"started {context.task_id}")
            await asyncio.Event().wait()  # until cancelled
        elif text.startswith("die"):
            os._exit(3)
        else:
            await self._done(updater, f"remote says: {text}")

    async def _done(self, updater: TaskUpdater, text: str) -> None:
        await updater.add_artifact([Part(text=text)], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self._note(f"cancelled {context.task_id}")

    def _note(self, line: str) -> None:
        with self.events.open("a", encoding="utf-8") as out:
            out.write(line + "\n")


class Bearer:
    """401 without ``Authorization: Bearer <token>`` (the card stays public); the
    ``traceparent`` of each request that has one is appended to ``events``."""

    def __init__(self, app: ASGIApp, token: str, events: Path) -> None:
        self.app, self.token, self.events = app, token, events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] not in ("/health",)
            and "well-known" not in scope["path"]
        ):
            headers = dict(scope["headers"])
            if b"traceparent" in headers:
                with self.events.open("a", encoding="utf-8") as out:
                    out.write(f"traceparent {headers[b'traceparent'].decode()}\n")
            if headers.get(b"authorization") != f"Bearer {self.token}".encode():
                await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def health(_request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def main() -> None:
    port, token, events = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    url = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name="remote",
        description="A remote A2A agent for the tests",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )
    handler = DefaultRequestHandler(
        agent_executor=Remote(events), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [
        Route("/health", health),
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/"),
    ]
    app = Bearer(Starlette(routes=routes), token, events)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
