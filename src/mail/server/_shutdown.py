"""What requests in flight get when the server is told to stop (SIGTERM, Ctrl-C).

uvicorn stops accepting connections, waits for open requests (``timeout_graceful_shutdown``),
cancels the rest and only then runs the lifespan's shutdown, which stores every caller's
tasks. A request waiting for a task (one that waits on a peer, say) would be cancelled and
answered uvicorn's plain-text 500. Instead, :func:`serve` tells the app at once
(:meth:`ServerState.begin_shutdown <mail.server._state.ServerState.begin_shutdown>`): a
waiting ``POST /message`` answers a JSON 503 (:func:`shutting_down`) and a stream ends with
a final ``task_error`` event saying the same; the lifespan then stores the task as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi.responses import JSONResponse

from mail._sse import Signal, first_of, shutting_down_detail

if TYPE_CHECKING:
    from fastapi import FastAPI

    from mail.server._state import ServerState

__all__ = [
    "Signal",
    "first_of",
    "handed_over",
    "serve",
    "shutting_down",
    "shutting_down_detail",
    "unless_closing",
]

T = TypeVar("T")
#: uvicorn's exit status when the server could not start.
STARTUP_FAILURE = 3


def shutting_down(task_id: str) -> JSONResponse:
    """``503 {"detail": ...}`` for a request whose task the shutdown cut short."""
    return JSONResponse({"detail": shutting_down_detail(task_id)}, status_code=503)


def handed_over(task_id: str) -> JSONResponse:
    """Cluster mode's ``503`` for a request whose replica stops while its task runs: the
    task goes on on another replica."""
    detail = (
        f"this replica is stopping; task '{task_id}' goes on on another replica: read it "
        f"with GET /task?task_id={task_id}, or follow it with GET /tasks/{task_id}/events, "
        "from any replica"
    )
    return JSONResponse({"detail": detail}, status_code=503)


async def unless_closing(work: Awaitable[T], *signals: Signal) -> tuple[bool, T | None]:
    """``(True, result)`` of ``work``, or ``(False, None)`` when one of ``signals`` is set
    first (``work`` is then cancelled)."""
    job: asyncio.Future[T] = asyncio.ensure_future(work)
    stop = asyncio.ensure_future(first_of(signals))
    both: set[asyncio.Future[Any]] = {job, stop}
    try:
        await asyncio.wait(both, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not job.done():
            job.cancel()
            await asyncio.wait({job})
    if job.cancelled():
        return False, None
    return True, job.result()


def serve(
    app: FastAPI,
    options: dict[str, Any],
    *,
    on_started: Callable[[int], None] | None = None,
    prepare: Callable[[], Awaitable[None]] | None = None,
) -> signal.Signals | None:
    """``uvicorn.run(app, **options)`` (no reload), telling the app when a signal asks
    the server to stop, before uvicorn waits for (and then cancels) open requests.
    ``on_started`` is called with the bound port once the server listens. ``prepare``
    runs on the server's loop before the app's lifespan; what it raises (a
    :class:`~mail.errors.MAILError` the CLI reports as one line) propagates from here,
    with nothing started yet.

    Returns ``SIGTERM`` when that signal stopped the server, else ``None`` (Ctrl-C).
    uvicorn re-raises the signal it caught once it has shut down; SIGTERM's default
    action would end the process on the spot, skipping the caller's cleanup (its
    ``finally`` blocks), so it is handed back instead: the caller cleans up, then calls
    ``signal.raise_signal`` on it for the exit status a supervisor expects."""
    import uvicorn  # noqa: PLC0415  # only the server process needs it

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[Any] | None = None) -> None:
            if prepare is not None:
                await prepare()
            await super().startup(sockets=sockets)
            if self.started and on_started is not None:
                bound = self.servers[0].sockets[0].getsockname()
                await asyncio.to_thread(on_started, bound[1])

        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            state: ServerState | None = getattr(app.state, "mail", None)
            if state is not None and state.loop is not None:
                state.loop.call_soon_threadsafe(state.begin_shutdown)

    config = uvicorn.Config(app, **options)
    config.load_app()
    server = _Server(config)
    terminated: list[signal.Signals] = []

    def _terminated(sig: int, frame: Any) -> None:
        # the handler uvicorn restores and re-raises SIGTERM into (and one for a SIGTERM
        # that comes before uvicorn installs its own): note it, stop, end nothing yet
        terminated.append(signal.SIGTERM)
        server.should_exit = True

    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        with contextlib.suppress(KeyboardInterrupt):  # the re-raised SIGINT, as uvicorn.run
            server.run()
    finally:
        signal.signal(signal.SIGTERM, previous)
    if not server.started:
        sys.exit(STARTUP_FAILURE)
    return signal.SIGTERM if terminated else None
