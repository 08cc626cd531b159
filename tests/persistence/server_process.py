"""A real ``mail server`` process of the persist swarm for the restart tests: started,
killed with SIGKILL and started again over the same data directory (SQLite) or database
(PostgreSQL), and the SSE frames its streams send."""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests._servers import Server as _Server
from tests._servers import clean_env, free_port
from tests.server.conftest import MAIL_TOML

from mail.testing.persist_swarm import swarm_definition


class Server(_Server):
    """The persist swarm's ``mail server`` (``database_url``, else SQLite in ``tmp/data``),
    its output in ``tmp/server.log`` across restarts; not started."""

    def __init__(self, tmp: Path, database_url: str | None) -> None:
        self.tmp = tmp
        self.data = tmp / "data"
        self.database_url = database_url
        swarms = tmp / "swarms.json"
        swarms.write_text(json.dumps([swarm_definition()]), encoding="utf-8")
        env = clean_env(self.data) | {"MAIL_LOG_LEVEL": "WARNING"}
        if database_url is not None:
            env["DATABASE_URL"] = database_url
        self.port = free_port()
        command = [sys.executable, "-m", "mail.cli", "server", "-c", str(MAIL_TOML)]
        command += ["-p", str(self.port), "-H", "127.0.0.1"]
        command += ["-n", "persist", "-s", str(swarms)]
        url = f"http://127.0.0.1:{self.port}"
        super().__init__(command, env=env, cwd=tmp, log=tmp / "server.log", url=url)

    def output(self) -> str:
        return self.tail()

    def _user_key(self) -> str:
        credentials = json.loads((self.data / "credentials.json").read_text(encoding="utf-8"))
        return str(next(k["key"] for k in credentials["keys"] if k["role"] == "user"))

    def client(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self._user_key()}"}
        return httpx.Client(base_url=self.url, timeout=15, headers=headers)

    def async_client(self) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self._user_key()}"}
        return httpx.AsyncClient(base_url=self.url, timeout=15, headers=headers)


def read_line(frame: dict[str, Any], line: str) -> dict[str, Any] | None:
    """Add one SSE line to ``frame``; at the blank line that ends it, return the frame
    (an event's) and empty ``frame`` for the next."""
    if not line:
        done = dict(frame) if "event" in frame else None
        frame.clear()
        return done
    name, _, value = line.partition(":")
    value = value.removeprefix(" ")
    if name == "id":
        frame["id"] = int(value)
    elif name == "event":
        frame["event"] = value
    elif name == "data":
        frame["data"] = json.loads(value)
    return None


def frames(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    frame: dict[str, Any] = {}
    for line in lines:
        if (done := read_line(frame, line)) is not None:
            yield done


def postgres_database() -> Iterator[str]:
    """A throwaway database on the server of ``MAIL_TEST_POSTGRES_URL`` (the test is
    skipped, with the reason, without one), dropped afterwards."""
    base = os.environ.get("MAIL_TEST_POSTGRES_URL")
    if not base:
        pytest.skip("MAIL_TEST_POSTGRES_URL is not set")
    asyncpg = pytest.importorskip("asyncpg")
    import asyncio

    name = f"mail_restart_{uuid.uuid4().hex[:12]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(base, timeout=5)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    try:
        asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError) as e:
        pytest.skip(f"PostgreSQL at MAIL_TEST_POSTGRES_URL is unreachable: {e}")
    head, _, _ = base.rpartition("/")
    try:
        yield f"{head}/{name}"
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
