"""An aiohttp application served on a loopback port, the base of the test servers."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["LoopbackApp"]


class LoopbackApp:
    """Serves the routes a subclass adds in :meth:`_routes` on ``host``:``port`` (0: a free
    port, read back once started). ``async with`` starts and closes it; :meth:`close`
    sets ``_closing``, so handlers waiting out a delay can stop early."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._port = port
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()

    def _routes(self, app: web.Application) -> None:
        raise NotImplementedError

    async def start(self) -> None:
        """Bind and start serving."""
        from aiohttp import web  # noqa: PLC0415  # keeps `import mail.testing` cheap

        app = web.Application()
        self._routes(app)
        runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0
        )
        await runner.setup()
        await web.TCPSite(runner, self._host, self._port).start()
        self._runner = runner
        self._port = int(runner.addresses[0][1])

    async def close(self) -> None:
        """Stop serving; answers still waiting are cut short."""
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
