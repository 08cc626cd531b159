"""Clients that keep a server busy while its store fails, and what they were told.

:class:`Load` runs ``clients`` loops, each sending tasks of the persist swarm one after
the other (every other client streams), and sorts every answer into a :class:`Tally`:

* **acked**: a 200 JSON answer with status ``completed``, or a stream's closing
  ``task_complete`` (a final event, without an ``id:`` line): the task ended, for sure;
* **held**: told that the task ended but is not stored yet: a 503 naming the task, or a
  stream's final ``storage_error`` with ``stored: false``;
* **refused**: a 503 at the door (no task was started), with ``Retry-After``;
* **other**: anything else (a transport error, another status, a stream cut short),
  which the tests expect none of.

:class:`HealthPoller` asks ``/health`` every half second and keeps each answer and how
long it took. :func:`stored` reads the tasks' rows from the database itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tests.persistence.conftest import eventually
from tests.persistence.server_process import read_line

#: a refused client waits this long before its next task (it would honour Retry-After;
#: this keeps new tasks coming while the store fails, to check each is refused at once)
BACKOFF = 0.25
HEALTH_EVERY = 0.5
FIGURES_ENV = "MAIL_FAULT_FIGURES"


@dataclass
class Tally:
    acked: set[str] = field(default_factory=set)
    held: set[str] = field(default_factory=set)
    refused: int = 0
    #: the slowest 503 at the door, in seconds
    slowest_refusal: float = 0.0
    other: list[str] = field(default_factory=list)
    #: when each task was acked (``time.monotonic()``)
    acked_at: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class HealthSample:
    at: float
    latency: float
    status: str
    storage: str
    unsaved: int


class Load:
    """``clients`` loops sending tasks through ``client`` until :meth:`stop` (or the end
    of ``async with``, which waits for them). :meth:`until` waits for a condition on the
    tally, woken by each answer."""

    def __init__(self, client: httpx.AsyncClient, clients: int = 20) -> None:
        self.client = client
        self.clients = clients
        self.tally = Tally()
        self._counter = 0
        self._stop = asyncio.Event()
        self._changed = asyncio.Condition()
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> Load:
        self._tasks = [
            asyncio.create_task(self._loop(n % 2 == 1), name=f"load-client:{n}")
            for n in range(self.clients)
        ]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def stop(self) -> None:
        self._stop.set()
        try:
            async with asyncio.timeout(60):  # a client's answer waits commit_timeout at most
                await asyncio.gather(*self._tasks)
        finally:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def until(self, check: Callable[[Tally], bool], timeout: float, what: str) -> None:
        try:
            async with asyncio.timeout(timeout), self._changed:
                await self._changed.wait_for(lambda: check(self.tally))
        except TimeoutError:
            raise AssertionError(f"{what}: not within {timeout}s ({self.summary()})") from None

    def summary(self) -> str:
        t = self.tally
        return f"acked {len(t.acked)}, held {len(t.held)}, refused {t.refused}, other {t.other[:5]}"

    async def _loop(self, stream: bool) -> None:
        while not self._stop.is_set():
            self._counter += 1
            body = {"body": f"job {self._counter}"}
            started = time.monotonic()
            try:
                refused = await (self._stream(body) if stream else self._json(body))
            except (httpx.TransportError, httpx.StreamError) as e:
                self.tally.other.append(f"{type(e).__name__}: {e}")
                refused = False
            if refused:
                self.tally.refused += 1
                waited = time.monotonic() - started
                self.tally.slowest_refusal = max(self.tally.slowest_refusal, waited)
            async with self._changed:
                self._changed.notify_all()
            if refused:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), BACKOFF)

    def _ack(self, task_id: str) -> None:
        self.tally.acked.add(task_id)
        self.tally.acked_at[task_id] = time.monotonic()

    def _unavailable(self, response: httpx.Response, answer: dict[str, Any]) -> bool:
        """Sort a 503: held (names its task) or refused (True)."""
        if "retry-after" not in response.headers:
            self.tally.other.append(f"503 without Retry-After: {answer}")
        if answer.get("task_id"):
            self.tally.held.add(answer["task_id"])
            return False
        return True

    async def _json(self, body: dict[str, Any]) -> bool:
        response = await self.client.post("/message", json=body)
        answer = response.json()
        if response.status_code == 503:
            return self._unavailable(response, answer)
        if response.status_code == 200 and answer.get("status") == "completed":
            self._ack(answer["task_id"])
        else:
            self.tally.other.append(f"{response.status_code}: {answer}")
        return False

    async def _stream(self, body: dict[str, Any]) -> bool:
        async with self.client.stream("POST", "/message", json={**body, "stream": True}) as r:
            if r.status_code != 200:
                answer = json.loads(await r.aread())
                if r.status_code == 503:
                    return self._unavailable(r, answer)
                self.tally.other.append(f"stream {r.status_code}: {answer}")
                return False
            final = await _final_frame(r)
        if final is None:
            self.tally.other.append("a stream ended without its final event")
        elif final["event"] == "task_complete" and "response" in final["data"]:
            self._ack(final["data"]["task_id"])
        elif final["event"] == "storage_error" and final["data"]["extra_data"]["stored"] is False:
            self.tally.held.add(final["data"]["task_id"])
        else:
            self.tally.other.append(f"a stream ended with {final}")
        return False


async def _final_frame(response: httpx.Response) -> dict[str, Any] | None:
    """The frame without an ``id:`` that ends a stream (pings aside), or None."""
    frame: dict[str, Any] = {}
    final = None
    async for line in response.aiter_lines():
        done = read_line(frame, line)
        if done is not None and "id" not in done and done["event"] != "ping":
            final = done
    return final


class HealthPoller:
    """Asks ``/health`` every :data:`HEALTH_EVERY` seconds, in the background, on a client
    of its own; ``samples`` holds every answer (an unanswered one has status ``error``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.samples: list[HealthSample] = []
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def __aenter__(self) -> HealthPoller:
        self._task = asyncio.create_task(self._run(), name="health-poller")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            await asyncio.wait_for(self._task, 30)

    async def _run(self) -> None:
        async with httpx.AsyncClient(base_url=self.url, timeout=30) as client:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    answer = (await client.get("/health")).json()
                except (httpx.TransportError, ValueError) as e:
                    answer = {"status": "error", "storage": repr(e)}
                latency = time.monotonic() - started
                self.samples.append(
                    HealthSample(
                        started,
                        latency,
                        answer.get("status", ""),
                        answer.get("storage", ""),
                        answer.get("unsaved_tasks", -1),
                    )
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), max(0.0, HEALTH_EVERY - latency))

    def during(self, start: float, end: float) -> list[HealthSample]:
        return [s for s in self.samples if start <= s.at <= end]

    @property
    def slowest(self) -> float:
        return max((s.latency for s in self.samples), default=0.0)


async def recovered(
    client: httpx.AsyncClient, since: float, timeout: float, *, idle: bool = False
) -> float:
    """Wait until ``/health`` is ``healthy`` (with nothing unsaved when the server is
    ``idle``: under load, tasks always wait for the next commit); return the seconds it
    took from ``since``."""

    async def healthy() -> bool:
        health = (await client.get("/health")).json()
        return health["status"] == "healthy" and (not idle or health.get("unsaved_tasks") == 0)

    await eventually(healthy, timeout=timeout, what="/health is healthy")
    return time.monotonic() - since


# --- what the database holds -------------------------------------------------------------


@dataclass(frozen=True)
class StoredTask:
    state: str
    #: its closing ``task_complete`` event is stored too
    completed_event: bool


async def stored(database: str | Path, task_ids: Iterable[str]) -> dict[str, StoredTask]:
    """The stored state of each of ``task_ids`` found, read from the database itself:
    a PostgreSQL URL or the path of an SQLite file."""
    ids = sorted(set(task_ids))
    if isinstance(database, Path):
        rows = await asyncio.to_thread(_sqlite_rows, database, ids)
    else:
        rows = await _postgres_rows(database, ids)
    return {task_id: StoredTask(state, done) for task_id, state, done in rows}


_STORED = """SELECT t.task_id, t.state, EXISTS (SELECT 1 FROM task_events AS e
        WHERE e.task_id = t.task_id AND e.event_type = 'task_complete')
    FROM tasks AS t WHERE t.task_id IN ({marks})"""


async def _postgres_rows(url: str, ids: list[str]) -> list[tuple[str, str, bool]]:
    import asyncpg

    conn = await asyncpg.connect(url, timeout=10)
    try:
        sql = _STORED.replace("IN ({marks})", "= ANY($1::text[])")
        return [(r[0], r[1], r[2]) for r in await conn.fetch(sql, ids)]
    finally:
        await conn.close()


def _sqlite_rows(path: Path, ids: list[str]) -> list[tuple[str, str, bool]]:
    rows: list[tuple[str, str, bool]] = []
    with closing(sqlite3.connect(path, timeout=10)) as conn:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            sql = _STORED.format(marks=", ".join("?" * len(chunk)))
            rows += [(r[0], r[1], bool(r[2])) for r in conn.execute(sql, chunk)]
    return rows


def lost(tasks: dict[str, StoredTask], task_ids: Iterable[str]) -> list[str]:
    """The tasks of ``task_ids`` not stored completed with their closing event."""
    done = StoredTask("completed", completed_event=True)
    return sorted(t for t in task_ids if tasks.get(t) != done)


def report(scenario: str, figures: dict[str, Any]) -> None:
    """Print a scenario's figures (and add them to the JSON-lines file named by
    ``MAIL_FAULT_FIGURES``, when set)."""
    line = json.dumps({"scenario": scenario, **figures})
    print(f"\nFIGURES {line}")
    path = os.environ.get(FIGURES_ENV)
    if path:
        with Path(path).open("a", encoding="utf-8") as out:
            out.write(line + "\n")


@asynccontextmanager
async def loaded(client: httpx.AsyncClient, url: str) -> AsyncIterator[tuple[Load, HealthPoller]]:
    """:class:`Load` on ``client`` and a :class:`HealthPoller` of ``url``, both stopped
    (and waited for) at the end."""
    async with HealthPoller(url) as health, Load(client) as load:
        yield load, health
