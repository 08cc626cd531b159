"""The test proxy itself (:mod:`tests.persistence.tcp_proxy`), against an echo server:
it forwards, a cut resets, a partition swallows bytes silently, and healing forwards
again (resetting the connections whose bytes were dropped)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from tests.persistence.tcp_proxy import TcpProxy

pytestmark = pytest.mark.timeout(30)

#: how long "nothing arrives" is watched for
QUIET = 0.3


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(1024):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


@pytest.fixture
async def proxy() -> AsyncIterator[TcpProxy]:
    server = await asyncio.start_server(_echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with TcpProxy(("127.0.0.1", port)) as p:
        yield p
    server.close()
    await server.wait_closed()


async def _open(proxy: TcpProxy) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", proxy.port)


async def _echoed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, data: bytes) -> bytes:
    writer.write(data)
    await writer.drain()
    return await asyncio.wait_for(reader.readexactly(len(data)), 5)


async def _closed_by_peer(reader: asyncio.StreamReader) -> bool:
    """True when the connection is reset or closed by the other end within 5 s."""
    try:
        return await asyncio.wait_for(reader.read(1), 5) == b""
    except ConnectionResetError:
        return True


async def test_the_proxy_forwards_cuts_partitions_and_heals(proxy: TcpProxy) -> None:
    reader, writer = await _open(proxy)
    assert await _echoed(reader, writer, b"hello") == b"hello"

    proxy.cut()  # the open connection is reset, a new one too
    assert await _closed_by_peer(reader)
    writer.close()
    reader, writer = await _open(proxy)
    assert await _closed_by_peer(reader)
    writer.close()

    proxy.heal()
    reader, writer = await _open(proxy)
    assert await _echoed(reader, writer, b"again") == b"again"
    quiet_reader, quiet_writer = await _open(proxy)  # sends nothing during the partition
    assert await _echoed(quiet_reader, quiet_writer, b"q") == b"q"

    proxy.blackhole()  # the open connection stays open but nothing goes through
    writer.write(b"lost")
    await writer.drain()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(reader.read(1), QUIET)
    new_reader, new_writer = await _open(proxy)  # accepted, never forwarded
    new_writer.write(b"lost too")
    await new_writer.drain()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(new_reader.read(1), QUIET)

    proxy.heal()  # the streams that lost bytes are reset; the quiet one goes on
    assert await _closed_by_peer(reader)
    assert await _closed_by_peer(new_reader)
    assert await _echoed(quiet_reader, quiet_writer, b"still") == b"still"
    for w in (writer, new_writer, quiet_writer):
        w.close()
    reader, writer = await _open(proxy)
    assert await _echoed(reader, writer, b"healed") == b"healed"
    writer.close()
    assert proxy.connections == 6
