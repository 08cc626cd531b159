"""Run an ASGI app (a MAIL server) on loopback for tests and benchmarks.

``async with serve(app) as url`` serves it for a block; :func:`start` starts a configured
``uvicorn.Server`` and returns its task and URL; :class:`ServerProcess` runs a command that
serves and prints its URL as its first line of output (a server in a child process).
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import uvicorn

__all__ = ["ServerProcess", "serve", "start"]


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


async def start(server: uvicorn.Server, timeout: float = 10.0) -> tuple[asyncio.Task[None], str]:
    """Start ``server`` (bound to a port on 127.0.0.1); return its task and base URL.

    Raises ``RuntimeError`` when it fails to start, ``TimeoutError`` when it takes longer
    than ``timeout`` seconds. Stop it with ``server.should_exit = True`` and await the task.
    """
    task = asyncio.create_task(_serve_forever(server), name="uvicorn")
    try:
        await asyncio.wait_for(_started(server, task), timeout)
    except BaseException:
        server.should_exit = True
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)  # its error is the one raised
        raise
    port = server.servers[0].sockets[0].getsockname()[1]
    return task, f"http://127.0.0.1:{port}"


class ServerProcess:
    """A child process running ``argv``, which serves and prints its base URL first.

    Raises ``RuntimeError`` (with what it said) when the first line is not an ``http://``
    URL. :meth:`close` terminates it, and kills it after ``timeout`` seconds.
    """

    def __init__(self, argv: Sequence[str], *, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, text=True)  # noqa: S603  # the caller's command
        assert self.proc.stdout is not None  # noqa: S101  # stdout=PIPE
        line = self.proc.stdout.readline().strip()
        if not line.startswith("http://"):
            self.close()
            raise RuntimeError(f"{' '.join(argv)} did not start a server (said {line!r})")
        self.url = line

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


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
    task, url = await start(server, start_timeout)
    try:
        yield url
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, stop_timeout)
