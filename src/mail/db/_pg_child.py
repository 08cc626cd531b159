"""The PostgreSQL store's writer process, the child's side: :func:`main`, started as
``python -c "from mail.db._pg_child import main; main()" OPTIONS`` (JSON:
``connect_timeout``, ``command_timeout``), with the DSN in the environment variable
:data:`DSN_VARIABLE` (not on the command line, where any user could read it).

It keeps one connection (``application_name=mail-server``, as the store's pool) and
applies each request in one transaction by COPY (:class:`mail.db._pg_copy.PgApplier`),
encoding the batch's JSON itself (:mod:`mail.db._raw`): asyncpg's encoding of the rows
and the JSON were some 50 µs a task on the server's event loop. The first request's
``forms`` are the store's statements by name. A connection that broke is replaced at the
next request; one that cannot be made fails that request (the store retries it).

Imports only the store's modules that need no more than the standard library, and asyncpg.
The child leaves when its input closes and ignores SIGINT, as the SQLite writer does.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from mail.db._common import dumps
from mail.db._pg_copy import PgApplier
from mail.db._raw import expand
from mail.db._wire import LENGTH, body, frame, make_background

__all__ = ["DSN_VARIABLE", "START", "main"]

#: the environment variable that carries the DSN to the child
DSN_VARIABLE = "MAIL_PG_WRITER_DSN"
#: the child's program (``python -c START OPTIONS``)
START = "from mail.db._pg_child import main; main()"


class _Connection:
    """The child's one connection, made again when it broke."""

    def __init__(self, dsn: str, options: dict[str, Any]) -> None:
        self.dsn = dsn
        self.options = options
        self.conn: Any = None

    async def get(self) -> Any:
        conn = self.conn
        if conn is None or conn.is_closed():
            import asyncpg  # type: ignore[import-untyped]  # noqa: PLC0415  # no stubs

            conn = self.conn = await asyncpg.connect(
                self.dsn,
                timeout=self.options["connect_timeout"],
                command_timeout=self.options["command_timeout"],
                server_settings={"application_name": "mail-server"},
            )
        return conn

    async def close(self) -> None:
        if self.conn is not None and not self.conn.is_closed():
            await self.conn.close()


async def _main(options: dict[str, Any]) -> None:
    make_background()
    connection = _Connection(os.environ.pop(DSN_VARIABLE, ""), options)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**31)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer

    def reply(text: str) -> None:
        out.write(frame(text.encode()))
        out.flush()

    try:
        await connection.get()
    except Exception as e:  # noqa: BLE001  # reported to the parent, which raises it
        reply(str(e) or type(e).__name__)
        return
    reply("")
    applier: PgApplier | None = None
    while True:
        try:
            (size,) = LENGTH.unpack(await reader.readexactly(LENGTH.size))
            data = await reader.readexactly(size)
        except asyncio.IncompleteReadError:
            break  # the parent closed our input: leave
        try:
            request = body(data)
            if isinstance(request, tuple):
                forms, request = request
                applier = PgApplier(forms)
            if applier is None:
                raise RuntimeError("no statements were given")  # noqa: TRY301  # replied
            statements = list(expand(request, dumps))
            await applier.apply(await connection.get(), statements)
        except Exception as e:  # noqa: BLE001  # each failure goes back to the parent
            reply(str(e) or type(e).__name__)
        else:
            reply("")
    await connection.close()


def main() -> None:
    """The child: options from ``sys.argv[1]``, requests from stdin until it closes."""
    asyncio.run(_main(json.loads(sys.argv[1])))
