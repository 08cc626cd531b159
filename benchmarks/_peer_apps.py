"""The peers ``peers.py`` and ``a2a.py`` measure MAIL against: a minimal ``a2a-sdk`` server
(its ``DefaultRequestHandler``, an in-memory task store, an agent that completes at once
with an artifact) and a bare FastAPI app whose routes answer a constant.

Run as a script, it serves one of them with uvicorn as ``mail server`` runs (no access
log, warnings only), as a process of its own, importing nothing of ``mail``:

    python benchmarks/_peer_apps.py a2a|fastapi PORT
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/a2a.py and http.py are named like the SDK's and the standard library's modules:
# keep this directory off the path.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

from typing import Any

__all__ = ["bare_fastapi", "minimal_a2a"]


def minimal_a2a() -> Any:
    """The SDK's request handler and JSON-RPC route in a bare Starlette app."""
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
        AgentSkill,
        Part,
        TaskState,
    )
    from starlette.applications import Starlette

    class Done(AgentExecutor):
        """The minimal agent: a task completed at once, its artifact the question."""

        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            assert context.task_id and context.context_id and context.message
            await event_queue.enqueue_event(
                new_task(
                    context.task_id,
                    context.context_id,
                    TaskState.TASK_STATE_SUBMITTED,
                    history=[context.message],
                )
            )
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            await updater.add_artifact([Part(text="answer:" + context.get_user_input())])
            await updater.complete()

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            return None

    card = AgentCard(
        name="minimal",
        description="a2a-sdk's server with an in-memory store",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url="http://127.0.0.1/", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="answer", name="answer", description="answers", tags=["bench"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=Done(), task_store=InMemoryTaskStore(), agent_card=card
    )
    return Starlette(
        routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    )


def bare_fastapi() -> Any:
    """``GET /health`` and ``POST /message`` answer a constant; ``POST /stream`` one
    server-sent event (sse-starlette, as MAIL's streams)."""
    from collections.abc import AsyncIterator

    from fastapi import FastAPI
    from sse_starlette import EventSourceResponse

    app = FastAPI()

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/message")
    async def message() -> dict[str, str]:
        return {"response": "answer", "status": "completed"}

    @app.post("/stream")
    async def stream() -> EventSourceResponse:
        async def events() -> AsyncIterator[dict[str, str]]:
            yield {"event": "task_complete", "data": '{"response":"answer"}'}

        return EventSourceResponse(events())

    return app


if __name__ == "__main__":
    import uvicorn

    apps = {"a2a": minimal_a2a, "fastapi": bare_fastapi}
    uvicorn.run(
        apps[sys.argv[1]](),
        host="127.0.0.1",
        port=int(sys.argv[2]),
        log_level="warning",
        access_log=False,
    )
