"""Runtime throughput, latency and memory for a scripted three-turn swarm, in process.

Workload per task: user -> supervisor (send_request) -> worker (send_response) ->
supervisor (task_complete). Every answer is checked. Prints tasks/s, agent turns/s and
p50/p99 task latency for sequential and concurrent submission, then RSS figures.

With ``--turn-delay-ms D`` every agent turn first waits D ms, as a call to an LLM would,
and the measured phase keeps ``--in-flight`` tasks running at all times: the ideal rate is
``in_flight / (3 * D)`` tasks/s, and the script prints the share of it reached. With
``--store sqlite`` (or ``memory``) the runtime keeps its tasks in that store, and every
answer waits until its task is stored, as the server's do.

    uv run python benchmarks/runtime.py [--tasks 1000] [--loop uvloop] [--api]
        [--turn-delay-ms 200 --in-flight 500] [--store sqlite]

The script runs against whichever checkout's ``mail`` its Python imports: run it with
another checkout's environment (``cd OTHER && uv run python PATH/benchmarks/runtime.py``)
to compare two versions in one session.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _agents import agent, supervisor, worker  # beside this script

from mail.core.agents import AgentCore
from mail.core.message import create_agent_address, create_user_address, make_request
from mail.core.runtime import MAILRuntime

TURNS_PER_TASK = 3
#: seconds each agent turn waits before answering (--turn-delay-ms)
TURN_DELAY = 0.0
#: where runtimes keep their tasks (--store): None, or an opened store
STORE: Any = None


class ApiRunner:
    """The same workload through the public API: MAILSwarmTemplate -> MAILSwarm.post_message."""

    def __init__(self, max_finished: int = 1000) -> None:
        from mail import MAILAgentTemplate, MAILSwarmTemplate

        def factory(rule: Any) -> Any:
            return lambda **_params: agent(rule, TURN_DELAY)

        template = MAILSwarmTemplate(
            "bench",
            "1.0.0",
            [
                MAILAgentTemplate(
                    "supervisor",
                    factory(supervisor),
                    ["worker"],
                    [],
                    {},
                    enable_entrypoint=True,
                    can_complete_tasks=True,
                ),
                MAILAgentTemplate("worker", factory(worker), ["supervisor"], [], {}),
            ],
            [],
            "supervisor",
        )
        self.swarm = template.instantiate(
            {}, user_id="bench", max_finished_tasks=max_finished, **store_argument("bench")
        )

    def start(self) -> None:
        pass

    async def run_one(self, i: int) -> float:
        body = f"q{i}"
        start = time.perf_counter()
        final, _ = await self.swarm.post_message(body, task_id=f"task-{i}", timeout=60)
        elapsed = time.perf_counter() - start
        if final["message"]["body"] != "answer:" + body:
            raise AssertionError(f"task {i} got {final['message']['body']!r}")
        return elapsed

    async def shutdown(self) -> None:
        await self.swarm.shutdown()

    @property
    def tasks(self) -> Any:
        return self.swarm.runtime.tasks


class RuntimeRunner:
    """The workload on a bare MAILRuntime."""

    def __init__(self, max_finished: int = 1000) -> None:
        self.rt = build_runtime(max_finished)

    def start(self) -> None:
        self.rt.start()

    async def run_one(self, i: int) -> float:
        return await run_one(self.rt, i)

    async def shutdown(self) -> None:
        await self.rt.shutdown()

    @property
    def tasks(self) -> Any:
        return self.rt.tasks


RUNNER: type[ApiRunner] | type[RuntimeRunner] = RuntimeRunner


def store_argument(swarm: str) -> dict[str, Any]:
    """The ``store=`` argument of a runtime of ``swarm`` for the caller ``bench``: the
    store itself, or (before the store interface became public) an adapter to it."""
    if STORE is None:
        return {}
    try:
        from mail._api_store import StoreSink  # an older checkout

        from mail.db import CallerKey
    except ImportError:
        return {"store": STORE}
    return {"store": StoreSink(STORE, CallerKey(swarm=swarm, role="user", id="bench"))}


def build_runtime(max_finished: int = 1000) -> MAILRuntime:
    agents = {
        "supervisor": AgentCore(
            agent(supervisor, TURN_DELAY),
            ["worker"],
            enable_entrypoint=True,
            can_complete_tasks=True,
        ),
        "worker": AgentCore(agent(worker, TURN_DELAY), ["supervisor"]),
    }
    return MAILRuntime(
        agents,
        {},
        user_id="bench",
        swarm_name="bench",
        entrypoint="supervisor",
        max_finished_tasks=max_finished,
        **store_argument("bench"),
    )


async def run_one(rt: MAILRuntime, i: int) -> float:
    body = f"q{i}"
    message = make_request(
        task_id=f"task-{i}",
        sender=create_user_address("bench"),
        recipient=create_agent_address("supervisor"),
        subject="New Message",
        body=body,
        sender_swarm="bench",
        recipient_swarm="bench",
    )
    start = time.perf_counter()
    final = await rt.submit_and_wait(message, timeout=60)
    elapsed = time.perf_counter() - start
    if final["message"]["body"] != "answer:" + body:
        raise AssertionError(f"task {i} got {final['message']['body']!r}")
    return elapsed


def rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 1e6


def report(label: str, n: int, wall: float, latencies: list[float]) -> float:
    lat = sorted(latencies)
    p50 = statistics.median(lat) * 1e3
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3
    rate = n / wall
    print(
        f"{label:<28} {rate:>9,.0f} tasks/s  {rate * TURNS_PER_TASK:>9,.0f} turns/s  "
        f"p50 {p50:7.3f} ms  p99 {p99:7.3f} ms"
    )
    return rate


async def sequential(n: int, offset: int) -> float:
    gc.collect()  # do not bill this phase for the previous phase's garbage
    rt = RUNNER()
    rt.start()
    start = time.perf_counter()
    latencies = [await rt.run_one(offset + i) for i in range(n)]
    wall = time.perf_counter() - start
    await rt.shutdown()
    return report(f"sequential ({n})", n, wall, latencies)


async def concurrent(n: int, in_flight: int, offset: int) -> float:
    gc.collect()
    rt = RUNNER()
    rt.start()
    latencies: list[float] = []
    start = time.perf_counter()
    for batch in range(0, n, in_flight):
        size = min(in_flight, n - batch)
        latencies += await asyncio.gather(*(rt.run_one(offset + batch + i) for i in range(size)))
    wall = time.perf_counter() - start
    await rt.shutdown()
    return report(f"{in_flight} in flight ({n})", n, wall, latencies)


async def steady(n: int, in_flight: int, offset: int) -> float:
    """``n`` tasks with ``in_flight`` of them running at all times."""
    gc.collect()
    rt = RUNNER()
    rt.start()
    room = asyncio.Semaphore(in_flight)

    async def one(i: int) -> float:
        async with room:
            return await rt.run_one(offset + i)

    start = time.perf_counter()
    latencies = list(await asyncio.gather(*(one(i) for i in range(n))))
    wall = time.perf_counter() - start
    await rt.shutdown()
    return report(f"{in_flight} in flight, steady ({n})", n, wall, latencies)


async def realistic(n: int, in_flight: int) -> None:
    """Turns that wait: the share of the ideal rate reached."""
    ideal = in_flight / (TURNS_PER_TASK * TURN_DELAY)
    print("warm-up:")
    await steady(min(n, in_flight), in_flight, 0)
    print("measured:")
    rate = await steady(n, in_flight, 1_000_000)
    print(f"ideal {ideal:,.0f} tasks/s; reached {rate / ideal:.1%} of it")


async def memory(total: int, checkpoint: int) -> None:
    rt = RUNNER()
    rt.start()
    gc.collect()
    base = rss_mb()
    at_checkpoint = 0.0
    for batch in range(0, total, 100):
        await asyncio.gather(*(rt.run_one(10_000_000 + batch + i) for i in range(100)))
        if batch + 100 == checkpoint:
            gc.collect()
            at_checkpoint = rss_mb()
    gc.collect()
    final = rss_mb()
    await rt.shutdown()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    print(
        f"RSS at start {base:.1f} MB; after {checkpoint:,} tasks {at_checkpoint:.1f} MB; after {total:,} tasks {final:.1f} MB"
    )
    print(
        f"retained after {checkpoint:,} -> {total:,} finished tasks: {final - at_checkpoint:+.1f} MB "
        f"({(final - at_checkpoint) * 1e6 / (total - checkpoint):.0f} bytes/task); peak RSS {peak:.1f} MB; "
        f"tasks kept in memory: {len(rt.tasks)}"
    )


async def open_store(kind: str, data_dir: str) -> Any:
    if kind == "none":
        return None
    from mail.db import MemoryStore, SQLiteStore

    store = MemoryStore() if kind == "memory" else SQLiteStore(Path(data_dir) / "mail.db")
    await store.open()
    return store


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--memory-tasks", type=int, default=20_000)
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    parser.add_argument(
        "--api", action="store_true", help="go through MAILSwarmTemplate/post_message"
    )
    parser.add_argument(
        "--turn-delay-ms", type=float, default=0.0, help="each agent turn waits this long first"
    )
    parser.add_argument("--in-flight", type=int, default=500, help="with --turn-delay-ms")
    parser.add_argument("--store", choices=["none", "memory", "sqlite"], default="none")
    args = parser.parse_args()
    global RUNNER, TURN_DELAY, STORE  # noqa: PLW0603  # chosen once, before any phase runs
    RUNNER = ApiRunner if args.api else RuntimeRunner
    TURN_DELAY = args.turn_delay_ms / 1000
    with tempfile.TemporaryDirectory(prefix="mail-bench-") as data_dir:
        STORE = await open_store(args.store, data_dir)
        print(
            f"# {'public API (MAILSwarm.post_message)' if args.api else 'MAILRuntime'}, "
            f"loop {args.loop}, store {args.store}, turn delay {args.turn_delay_ms:g} ms"
        )
        try:
            if TURN_DELAY:
                await realistic(args.tasks, args.in_flight)
                return
            n = args.tasks
            # Warm-up: a process's first thousands of tasks run slower (the allocator's
            # arenas, the interpreter's specialised instructions).
            print("warm-up:")
            await sequential(n, 0)
            await concurrent(n, 1000, 50_000)
            print("measured:")
            await sequential(n, 100_000)
            ten = await concurrent(n, 10, 200_000)
            await concurrent(n, 200, 300_000)
            thousand = await concurrent(n, 1000, 400_000)
            print(f"1000 in flight / 10 in flight: {thousand / ten:.2f}x")
            await memory(args.memory_tasks, args.memory_tasks // 10)
        finally:
            if STORE is not None:
                await STORE.close()


if __name__ == "__main__":
    if "--loop=uvloop" in sys.argv or "uvloop" in sys.argv:
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())
