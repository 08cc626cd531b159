"""Run an ASGI app (a MAIL server) on loopback for tests: ``async with serve(app) as url``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import uvicorn

__all__ = ["serve"]


async def _serve_forever(server: uvicorn.Server) -> None:
    # uvicorn reports a failed startup with sys.exit(3); inside a task that would escape
    # the event loop, so it becomes an ordinary error here.
    try:
        await server.serve()
    except SystemExit as e:
        raise RuntimeError(f"uvicorn exited with status {e.code}") from None


async def _started(server: uvicorn.Server, task: asyncio.Task[None]) -> None:
    # uvicorn offers no event for "listening": poll its flag (the caller bounds the wait)
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("uvicorn stopped before it started")
        await asyncio.sleep(0.005)


@asynccontextmanager
async def serve(
    app: Any, *, start_timeout: float = 10.0, stop_timeout: float = 20.0
) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn on ``127.0.0.1:0`` and yield ``http://127.0.0.1:PORT``.

    The lifespan runs; leaving the block stops the server and waits for it. Raises
    ``RuntimeError`` when the server fails to start, ``TimeoutError`` when it does not
    start or stop in time.
    """
    import uvicorn  # noqa: PLC0415  # only tests that serve an app need it

    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="on",
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(_serve_forever(server), name="uvicorn")
    try:
        await asyncio.wait_for(_started(server, task), start_timeout)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, stop_timeout)
