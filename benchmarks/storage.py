"""Bytes on disk per task: the scripted three-turn swarm of ``runtime.py`` kept in SQLite.

Workload per task: user -> supervisor (send_request) -> worker (send_response) ->
supervisor (task_complete), task ids as the server makes them (UUIDs), 100 tasks in
flight. The script runs ``--warmup`` tasks, checkpoints the WAL into the file
(``PRAGMA wal_checkpoint(TRUNCATE)``, no VACUUM) and notes its size, runs ``--tasks``
more, checkpoints again and prints the growth per task, then the bytes per task of each
table and index (``dbstat``: pages in use, and the payload bytes the rows hold). With
``--postgres DSN`` it also prints the row bytes per task of each PostgreSQL table
(``pg_column_size`` of the rows written, without indexes or page overhead).

    uv run python benchmarks/storage.py [--tasks 2000] [--warmup 200] [--postgres DSN]

Like ``runtime.py``, it measures whichever checkout's ``mail`` its Python imports.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from _agents import agent, supervisor, worker  # beside this script

from mail.core.agents import AgentCore
from mail.core.message import create_agent_address, create_user_address, make_request
from mail.core.runtime import MAILRuntime
from mail.db import SQLiteStore

IN_FLIGHT = 100


def build_runtime(store: Any, user: str) -> MAILRuntime:
    agents = {
        "supervisor": AgentCore(
            agent(supervisor), ["worker"], enable_entrypoint=True, can_complete_tasks=True
        ),
        "worker": AgentCore(agent(worker), ["supervisor"]),
    }
    return MAILRuntime(
        agents,
        {},
        user_id=user,
        swarm_name="bench",
        entrypoint="supervisor",
        max_finished_tasks=100,
        store=store,
    )


async def run_one(rt: MAILRuntime, i: int) -> None:
    body = f"What is the weather like in city number {i} today?"
    message = make_request(
        task_id=str(uuid.uuid4()),
        sender=create_user_address("bench"),
        recipient=create_agent_address("supervisor"),
        subject="New Message",
        body=body,
        sender_swarm="bench",
        recipient_swarm="bench",
    )
    final = await rt.submit_and_wait(message, timeout=60)
    if final["message"]["body"] != "answer:" + body:
        raise AssertionError(f"task {i} got {final['message']['body']!r}")


async def run_tasks(store: Any, n: int, offset: int, user: str = "bench") -> None:
    rt = build_runtime(store, user)
    rt.start()
    for batch in range(0, n, IN_FLIGHT):
        size = min(IN_FLIGHT, n - batch)
        await asyncio.gather(*(run_one(rt, offset + batch + i) for i in range(size)))
    await rt.shutdown()


def checkpointed_size(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size


def per_table(path: Path) -> list[tuple[str, int, int]]:
    """``(table or index, bytes of pages in use, payload bytes)`` for each."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT name, sum(pgsize - unused), sum(payload) FROM dbstat GROUP BY name"
            " ORDER BY 2 DESC"
        ).fetchall()
    return [(str(name), int(used), int(payload)) for name, used, payload in rows]


async def sqlite_figures(tasks: int, warmup: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        await _sqlite_figures(Path(tmp) / "mail.db", tasks, warmup)


async def _sqlite_figures(path: Path, tasks: int, warmup: int) -> None:
    async with SQLiteStore(path) as store:
        await run_tasks(store, warmup, 0)
    base = checkpointed_size(path)
    async with SQLiteStore(path) as store:
        await run_tasks(store, tasks, warmup)
    size = checkpointed_size(path)
    total = warmup + tasks
    print(f"SQLite: {tasks} tasks after {warmup}: file {base:,} -> {size:,} bytes")
    print(f"  growth per task: {(size - base) / tasks:,.0f} bytes")
    print(f"  {'table or index':<40} {'bytes/task':>10} {'payload/task':>12}")
    for name, used, payload in per_table(path):
        print(f"  {name:<40} {used / total:>10,.0f} {payload / total:>12,.0f}")


async def postgres_figures(dsn: str, tasks: int) -> None:
    import asyncpg  # optional

    from mail.db import PostgresStore

    user = f"bench-{uuid.uuid4().hex}"  # this run's rows only
    async with PostgresStore(dsn) as store:
        await run_tasks(store, tasks, 0, user)
    conn = await asyncpg.connect(dsn)
    try:
        tables = await conn.fetch(
            "SELECT table_name FROM information_schema.columns"
            " WHERE column_name = 'caller_id' AND table_schema = 'public'"
        )
        print(f"PostgreSQL: row bytes per task over {tasks} tasks (no indexes)")
        for (table,) in tables:
            where = f"FROM {table} t WHERE caller_id = $1"
            size = await conn.fetchval(
                f"SELECT coalesce(sum(pg_column_size(t.*)), 0) {where}", user
            )
            print(f"  {table:<20} {size / tasks:>10,.0f}")
            await conn.execute(f"DELETE {where}", user)
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--postgres", metavar="DSN")
    args = parser.parse_args()
    asyncio.run(sqlite_figures(args.tasks, args.warmup))
    if args.postgres:
        asyncio.run(postgres_figures(args.postgres, args.tasks))


if __name__ == "__main__":
    sys.exit(main())
