"""A real ``mail server`` process of the persist swarm for the restart tests: started,
killed with SIGKILL and started again over the same data directory (SQLite) or database
(PostgreSQL), and the SSE frames its streams send."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server.conftest import MAIL_ENV, MAIL_TOML, free_port

from mail.testing.persist_swarm import swarm_definition

READY_WITHIN = 15.0


class Server:
    def __init__(self, tmp: Path, database_url: str | None) -> None:
        self.tmp = tmp
        self.data = tmp / "data"
        self.database_url = database_url
        swarms = tmp / "swarms.json"
        swarms.write_text(json.dumps([swarm_definition()]), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in MAIL_ENV}
        env |= {
            "MAIL_DATA_DIR": str(self.data),
            "SWARM_REGISTRY_FILE": str(self.data / "registry.json"),
            "MAIL_LOG_LEVEL": "WARNING",
        }
        if database_url is not None:
            env["DATABASE_URL"] = database_url
        self.env = env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [sys.executable, "-m", "mail.cli", "server", "-c", str(MAIL_TOML)]
        self.command += ["-p", str(self.port), "-H", "127.0.0.1"]
        self.command += ["-n", "persist", "-s", str(swarms)]
        self.process: subprocess.Popen[bytes] | None = None
        self.log = tmp / "server.log"

    def start(self) -> None:
        with self.log.open("ab") as output:
            self.process = subprocess.Popen(
                self.command, cwd=self.tmp, env=self.env, stdout=output, stderr=subprocess.STDOUT
            )
        # Polled for readiness: the subprocess has no other signal.
        deadline = time.perf_counter() + READY_WITHIN
        with httpx.Client(timeout=0.5) as client:
            while time.perf_counter() < deadline:
                if self.process.poll() is not None:
                    pytest.fail(f"mail server exited early:\n{self.output()}")
                try:
                    if client.get(f"{self.url}/health").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
        pytest.fail(f"mail server not healthy within {READY_WITHIN}s:\n{self.output()}")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-3000:]

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
