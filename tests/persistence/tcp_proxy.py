"""A TCP proxy between a server and its database, to break the network for real.

``async with TcpProxy(("127.0.0.1", 5432)) as proxy`` listens on ``127.0.0.1:<proxy.port>``
and forwards every connection to the target; :meth:`TcpProxy.url` gives a PostgreSQL URL
that goes through it. Three controls, each taking effect at once:

* :meth:`~TcpProxy.cut`: every open connection is reset (RST, both sides), and every new
  one is reset as soon as it is accepted: the database is gone.
* :meth:`~TcpProxy.blackhole`: a network partition. Open connections stay open, but every
  byte is silently dropped, in both directions; new connections are accepted and never
  forwarded. Nobody is told anything: a client waits until its own timeouts.
* :meth:`~TcpProxy.heal`: forwarding again. A byte stream that lost bytes cannot go on
  (TCP would have delivered them late or given up on the connection), so a connection
  that lost some, or was accepted during a partition, is reset now; the others go on.

Every connection is served by a task the proxy owns; :meth:`TcpProxy.close` resets the
connections, waits for those tasks (cancelling the ones that hang) and stops listening.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from dataclasses import dataclass
from typing import Literal, Self
from urllib.parse import urlsplit, urlunsplit

__all__ = ["TcpProxy"]

Mode = Literal["forward", "cut", "blackhole"]
_CHUNK = 65536


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close ``writer``'s connection with a RST (``SO_LINGER`` 0), not a FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


@dataclass(eq=False, slots=True)
class _Link:
    """One client connection and, once forwarded, its upstream connection."""

    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter | None = None
    #: bytes dropped (a partition); such a link is reset when the proxy heals
    dropped: int = 0
    #: accepted during a partition: never forwarded, reset when the proxy heals
    partitioned: bool = False

    def reset(self) -> None:
        _reset(self.client)
        if self.upstream is not None:
            _reset(self.upstream)


class TcpProxy:
    """Forwards ``127.0.0.1:<port>`` to ``target`` until told to :meth:`cut` or
    :meth:`blackhole` (see the module). ``connections`` counts the connections accepted."""

    def __init__(self, target: tuple[str, int] = ("127.0.0.1", 5432)) -> None:
        self.target = target
        self.mode: Mode = "forward"
        self.port = 0
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Listen on a free port of 127.0.0.1 (:attr:`port`)."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def url(self, database_url: str) -> str:
        """``database_url`` (``postgresql://user@host:port/db``) through this proxy."""
        parts = urlsplit(database_url)
        user = parts.netloc.rpartition("@")[0]
        netloc = f"{user}@127.0.0.1:{self.port}" if user else f"127.0.0.1:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc))

    # --- controls ------------------------------------------------------------------------

    def cut(self) -> None:
        """Reset every open connection, and every new one when it is accepted."""
        self.mode = "cut"
        for link in list(self._links):
            link.reset()

    def blackhole(self) -> None:
        """Drop every byte, both ways, and forward no new connection (a partition)."""
        self.mode = "blackhole"

    def heal(self) -> None:
        """Forward again; reset the connections that lost bytes during a partition."""
        self.mode = "forward"
        for link in list(self._links):
            if link.dropped or link.partitioned:
                link.reset()

    # --- serving -------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        link = _Link(writer)
        self._links.add(link)
        try:
            await self._forward(link, reader)
        except asyncio.CancelledError:
            link.reset()
            raise
        except OSError:
            link.reset()
        finally:
            self._links.discard(link)
            if not writer.transport.is_closing():
                writer.transport.abort()
            if link.upstream is not None and not link.upstream.transport.is_closing():
                link.upstream.transport.abort()
            self._tasks.discard(task)

    async def _forward(self, link: _Link, reader: asyncio.StreamReader) -> None:
        if self.mode == "cut":
            link.reset()
            return
        if self.mode == "blackhole":
            link.partitioned = True
            await self._pump(reader, None, link)  # read and drop until reset or EOF
            return
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        link.upstream = up_writer
        if self.mode != "forward":  # cut (or partitioned) while connecting
            link.partitioned = True
            if self.mode == "cut":
                link.reset()
                return
        await asyncio.gather(
            self._pump(reader, up_writer, link), self._pump(up_reader, link.client, link)
        )

    async def _pump(
        self, source: asyncio.StreamReader, dest: asyncio.StreamWriter | None, link: _Link
    ) -> None:
        """Copy ``source`` to ``dest`` while forwarding; drop what arrives otherwise. A
        connection error on either side resets the link (so the other pump ends too)."""
        try:
            while data := await source.read(_CHUNK):
                if dest is None or self.mode != "forward" or link.dropped or link.partitioned:
                    link.dropped += len(data)
                    continue
                dest.write(data)
                await dest.drain()
            if dest is not None and not dest.transport.is_closing() and dest.can_write_eof():
                dest.write_eof()  # a FIN passes on as a FIN
        except OSError:
            link.reset()

    async def close(self) -> None:
        """Stop listening, reset every connection and wait for their tasks."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for link in list(self._links):
            link.reset()  # which ends their pumps
        if self._tasks:
            _, pending = await asyncio.wait(list(self._tasks), timeout=5)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if server is not None:
            await server.wait_closed()
