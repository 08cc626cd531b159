"""Real faults under load: a real ``mail server`` process, 20 clients sending tasks (JSON
and streams), and a store that fails for real while they do.

* PostgreSQL through a TCP proxy (:mod:`tests.persistence.tcp_proxy`) that cuts the
  connections for 5 s, for 40 s, or black-holes them (a network partition), then heals.
* SQLite on a small tmpfs that a filler file fills up (a full disk), then frees; and a
  clean stop while it is still full.
* The poison burst: ordinary tasks sent at once with bodies no store holds.

Each checks the server's promises (docs/persistence.md, "When the store fails"): no task
acked and then lost; the tasks told "not stored yet" are stored once the store is back;
new tasks are refused at once while it fails; ``/health`` answers within ~3 s all along,
says ``degraded`` during the fault and ``healthy`` again afterwards. Each prints its
figures (``FIGURES {...}``; see :func:`tests.persistence.fault_load.report`).
"""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.persistence.fault_load import (
    HealthPoller,
    Load,
    StoredTask,
    Tally,
    lost,
    recovered,
    report,
    stored,
)
from tests.persistence.server_process import Server
from tests.persistence.tcp_proxy import TcpProxy

#: seconds an answer waits for its task to be committed (``MAIL_COMMIT_TIMEOUT``)
COMMIT_TIMEOUT = 2
#: /health must answer within this (its own checks give up after 2 s)
HEALTH_BOUND = 3.0
#: tasks acked before a fault starts, and after it ends
WARM = 40
AFTER = 20
RECOVER_WITHIN = 30.0


def _server(tmp: Path, database_url: str | None) -> Server:
    server = Server(tmp, database_url)
    server.env["MAIL_COMMIT_TIMEOUT"] = str(COMMIT_TIMEOUT)
    return server


@pytest.fixture
async def proxied(
    tmp_path: Path, postgres_database: tuple[str, str], postgres_proxy: TcpProxy
) -> AsyncIterator[Server]:
    """A server whose PostgreSQL database is reached through ``postgres_proxy``."""
    server = _server(tmp_path, postgres_proxy.url(postgres_database[1]))
    # (in threads: the proxy runs on this loop, and the server needs it to start and stop)
    await asyncio.to_thread(server.start)
    try:
        yield server
    finally:
        await asyncio.to_thread(server.stop)


async def _all_acked(client: httpx.AsyncClient, count: int, prefix: str) -> set[str]:
    """Send ``count`` tasks at once; each must be acked. Returns their ids."""
    answers = await asyncio.gather(
        *(client.post("/message", json={"body": f"{prefix} {n}"}) for n in range(count))
    )
    assert [a.status_code for a in answers] == [200] * count, [a.text for a in answers]
    assert {a.json()["status"] for a in answers} == {"completed"}
    return {a.json()["task_id"] for a in answers}


Fault = Callable[[], Awaitable[None]]


@dataclass
class Phase:
    """When the fault started and ended (``time.monotonic()``)."""

    started: float = 0.0
    ended: float = 0.0


async def _faulted(
    load: Load, client: httpx.AsyncClient, start: Fault, end: Fault | None, seconds: float
) -> tuple[Phase, float]:
    """With ``load`` running: once :data:`WARM` tasks are acked, ``start`` the fault, keep
    it ``seconds``, then ``end`` it, wait until ``/health`` is healthy and :data:`AFTER`
    new tasks are acked. Returns the phase and the seconds from ``end`` to healthy
    (``end=None``: the fault goes on, no recovery)."""
    await load.until(lambda t: len(t.acked) >= WARM, 30, "tasks acked before the fault")
    phase = Phase(started=time.monotonic())
    await start()
    await asyncio.sleep(seconds)  # the fault lasts this long: the scenario, not a wait
    phase.ended = time.monotonic()
    if end is None:
        return phase, 0.0
    await end()
    recovery = await recovered(client, phase.ended, RECOVER_WITHIN)
    healed = sum(1 for at in load.tally.acked_at.values() if at > phase.ended)
    await load.until(
        lambda t: sum(1 for at in t.acked_at.values() if at > phase.ended) >= healed + AFTER,
        30,
        "new tasks acked after the fault",
    )
    return phase, recovery


def _figures(
    tally: Tally, rows: dict[str, StoredTask], health: HealthPoller, phase: Phase
) -> dict[str, Any]:
    during = health.during(phase.started, phase.ended)
    acked_at = tally.acked_at.values()
    return {
        "fault_seconds": round(phase.ended - phase.started, 1),
        "acked": len(tally.acked),
        "acked_during_fault": sum(1 for at in acked_at if phase.started <= at <= phase.ended),
        "held": len(tally.held),
        "refused": tally.refused,
        "slowest_refusal_s": round(tally.slowest_refusal, 3),
        "stored_completed": len(rows) - len(lost(rows, rows)),
        "acked_lost": len(lost(rows, tally.acked)),
        "held_not_stored": len(lost(rows, tally.held)),
        "health_polls": len(health.samples),
        "health_max_latency_s": round(health.slowest, 3),
        "health_degraded_polls": sum(1 for s in during if s.status == "degraded"),
    }


def _check_told(tally: Tally, health: HealthPoller, phase: Phase) -> None:
    """What the clients and ``/health`` were told while the store failed."""
    assert tally.other == [], tally.other[:5]
    assert tally.held, "no task that ended during the fault was held back"
    assert tally.refused > 0, "no new task was refused while the store failed"
    assert tally.slowest_refusal < HEALTH_BOUND
    assert [s for s in health.samples if s.status == "error"] == []
    assert health.slowest < HEALTH_BOUND, [s for s in health.samples if s.latency >= 1]
    degraded = [s for s in health.during(phase.started, phase.ended) if s.status == "degraded"]
    assert degraded, f"/health never said degraded during the fault: {health.samples}"
    assert all(s.storage not in ("", "ok") for s in degraded), degraded


async def _through_a_fault(
    server: Server, database: str | Path, scenario: str, start: Fault, end: Fault, seconds: float
) -> None:
    """Load the server through a fault of ``seconds``; check every promise, report the
    figures."""
    async with server.async_client() as client:
        async with HealthPoller(server.url) as health, Load(client) as load:
            phase, recovery = await _faulted(load, client, start, end, seconds)
        tally = load.tally
        later = await _all_acked(client, AFTER, "later")
        await recovered(client, time.monotonic(), RECOVER_WITHIN, idle=True)  # all stored
    rows = await stored(database, tally.acked | tally.held | later)
    report(scenario, {**_figures(tally, rows, health, phase), "recovery_s": round(recovery, 3)})

    assert lost(rows, tally.acked) == [], "acked, then lost"
    assert lost(rows, tally.held) == [], "told not stored, and never stored"
    assert lost(rows, later) == []
    _check_told(tally, health, phase)


# --- PostgreSQL through a proxy ------------------------------------------------------------


def _at_once(control: Callable[[], None]) -> Fault:
    async def fault() -> None:
        control()

    return fault


@pytest.mark.timeout(60)
async def test_a_5s_cut_of_postgres_loses_no_acked_task(
    proxied: Server, postgres_proxy: TcpProxy, postgres_database: tuple[str, str]
) -> None:
    cut, heal = _at_once(postgres_proxy.cut), _at_once(postgres_proxy.heal)
    await _through_a_fault(proxied, postgres_database[1], "postgres cut 5 s", cut, heal, 5)


@pytest.mark.timeout(100)
async def test_a_40s_cut_of_postgres_loses_no_acked_task(
    proxied: Server, postgres_proxy: TcpProxy, postgres_database: tuple[str, str]
) -> None:
    # a real 40 s (the figure the issue asks about): the test takes about 45 s
    cut, heal = _at_once(postgres_proxy.cut), _at_once(postgres_proxy.heal)
    await _through_a_fault(proxied, postgres_database[1], "postgres cut 40 s", cut, heal, 40)


@pytest.mark.timeout(60)
async def test_a_partition_from_postgres_keeps_the_server_responsive(
    proxied: Server, postgres_proxy: TcpProxy, postgres_database: tuple[str, str]
) -> None:
    # writes and /health's probe get no answer at all (asyncpg would wait its 30 s
    # command_timeout); the server must still refuse at once and answer /health in time
    hole, heal = _at_once(postgres_proxy.blackhole), _at_once(postgres_proxy.heal)
    await _through_a_fault(proxied, postgres_database[1], "postgres partition 8 s", hole, heal, 8)


# --- SQLite on a full filesystem -----------------------------------------------------------

#: the tmpfs the data directory is on: small, so that a filler fills it at once
TMPFS_SIZE = "16m"
#: seconds the clients keep sending while the disk is full
FULL_FOR = 4


@contextmanager
def tmpfs(path: Path) -> Iterator[Path]:
    """A :data:`TMPFS_SIZE` tmpfs mounted on ``path`` (created), unmounted afterwards; the
    test is skipped where mounting is not permitted."""
    path.mkdir(parents=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs (a disk to fill) needs root")
    mount = ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(path)]
    done = subprocess.run(mount, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


def _fill(directory: Path) -> Path:
    """Write a file in ``directory`` until its filesystem is full (ENOSPC)."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        for size in (1 << 20, 4096, 1):
            chunk = b"\xff" * size
            try:
                while True:
                    os.write(fd, chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
    finally:
        os.close(fd)
    return filler


@pytest.fixture
def full_disk_server(tmp_path: Path) -> Iterator[Server]:
    """A server (not started) whose data directory, SQLite file included, is on a small
    tmpfs; stopped before the tmpfs is unmounted."""
    server = _server(tmp_path, None)
    with tmpfs(server.data):
        try:
            yield server
        finally:
            server.stop()


def _disk_fault(server: Server) -> tuple[Fault, Fault]:
    filler: list[Path] = []

    async def fill() -> None:
        filler.append(await asyncio.to_thread(_fill, server.data))

    async def free() -> None:
        filler.pop().unlink()

    return fill, free


@pytest.mark.timeout(60)
async def test_a_full_disk_loses_no_acked_task_sqlite(full_disk_server: Server) -> None:
    server = full_disk_server
    await asyncio.to_thread(server.start)
    fill, free = _disk_fault(server)
    await _through_a_fault(
        server, server.data / "mail.db", "sqlite full disk", fill, free, FULL_FOR
    )


@pytest.mark.timeout(60)
async def test_a_stop_while_the_disk_is_full_loses_no_acked_task_sqlite(
    full_disk_server: Server,
) -> None:
    server = full_disk_server
    await asyncio.to_thread(server.start)
    fill, free = _disk_fault(server)
    async with (
        server.async_client() as client,
        HealthPoller(server.url) as health,
        Load(client) as load,
    ):
        phase, _ = await _faulted(load, client, fill, None, FULL_FOR)
    tally = load.tally
    await asyncio.to_thread(server.stop)  # a clean stop, the disk still full
    assert server.process is not None
    stopped = server.process.returncode
    await free()
    await asyncio.to_thread(server.start)
    async with server.async_client() as client:
        await recovered(client, time.monotonic(), RECOVER_WITHIN, idle=True)
        later = await _all_acked(client, AFTER, "after the restart")
    rows = await stored(server.data / "mail.db", tally.acked | tally.held | later)
    figures = _figures(tally, rows, health, phase)
    report("sqlite stop while full", {**figures, "exit_status": stopped})

    assert stopped == 0, server.output()
    assert lost(rows, tally.acked) == [], "acked, then lost at the stop"
    assert lost(rows, later) == []
    _check_told(tally, health, phase)
    # the tasks whose clients were told "not stored yet" could not be stored before the
    # stop: they are gone, and the log says how many
    unstored = lost(rows, tally.held)
    if unstored:
        log = server.log.read_text(encoding="utf-8", errors="replace")
        assert f"closing: {len(unstored)} tasks could not be stored" in log


# --- the poison burst ----------------------------------------------------------------------

POISON = {
    "lone surrogate": b'{"body": "x\\ud800y"}',
    "NUL character": b'{"body": "a\\u0000b"}',
}


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str | None:
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("postgres_database")[1]
    return url


@pytest.mark.timeout(60)
async def test_a_poison_burst_is_refused_and_the_rest_stored(
    tmp_path: Path, database_url: str | None
) -> None:
    server = _server(tmp_path, database_url)
    await asyncio.to_thread(server.start)
    try:
        async with server.async_client() as client:
            headers = {"Content-Type": "application/json"}
            answers = await asyncio.gather(
                *(client.post("/message", json={"body": f"burst {n}"}) for n in range(40)),
                *(
                    client.post("/message", content=body, headers=headers)
                    for body in POISON.values()
                ),
            )
            burst, poisoned = answers[:40], answers[40:]
            for problem, answer in zip(POISON, poisoned, strict=True):
                assert answer.status_code == 400, answer.text
                detail = answer.json()["detail"]
                assert detail.startswith("error parsing request: body contains"), detail
                assert problem in detail
            assert [a.status_code for a in burst] == [200] * 40, [a.text for a in burst]
            assert {a.json()["status"] for a in burst} == {"completed"}
            acked = {a.json()["task_id"] for a in burst}
            later = await _all_acked(client, AFTER, "after the burst")
            await recovered(client, time.monotonic(), RECOVER_WITHIN, idle=True)
            health = (await client.get("/health")).json()
    finally:
        await asyncio.to_thread(server.stop)
    database = database_url or server.data / "mail.db"
    rows = await stored(database, acked | later)
    report(
        f"poison burst {'postgres' if database_url else 'sqlite'}",
        {"acked": len(acked | later), "stored_completed": len(rows), "health": health},
    )
    assert lost(rows, acked | later) == []
    assert (health["status"], health["storage"], health["unsaved_tasks"]) == ("healthy", "ok", 0)
