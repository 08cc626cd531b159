"""MAP Mail's cost on tasks (issue 26): one run, five servers driven in turns.

* ``off``: ``[server.map] enabled = false`` (no interception: the code before MAP Mail,
  as far as a task's path goes);
* ``on``: MAP Mail on, tasks with no conversation (the runtime's observer does one
  dictionary lookup per event);
* ``bound``: MAP Mail on, each task bound to a conversation created beforehand (untimed)
  with ``mail/create {taskId}``, which nobody reads while the tasks run: their turns are
  written by the next read (a catch-up), so this is the cost on the tasks' path;
* ``read``: as ``bound``, and each chunk ends with a catch-up of each conversation, timed
  (what the first read of each conversation afterwards does: its turns written, every
  message and tool call a turn): the whole cost of recording, counted against the task;
* ``watched``: as ``bound`` with a MAP subscription of the caller open on the server: the
  turns are written within 50 ms of their events (timed until they are), and each one
  is queued for the subscriber as a ``mail.turn.added`` event (which nobody reads: the
  oldest are dropped).

Each server keeps its tasks in SQLite in a temporary directory and runs in this process.
A round sends a chunk of sequential ``POST /message`` tasks (the three-turn swarm of
``benchmarks/http.py``) to each server in a rotating order, each chunk timed until its
answers are in and, for ``read`` and ``watched``, its turns written. Prints tasks/s per
server and the ratios to ``off`` (median of the per-round ratios, with their spread) of
the wall time and of the process's CPU time (all its threads: the stores' too), which
other processes on the machine disturb less.

    uv run python benchmarks/map_mail.py [--rounds 10] [--chunk 100] [--turn-ms 0]
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # benchmarks/http.py would shadow the standard library's http

import argparse
import asyncio
import importlib.util
import statistics
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from typing import Any

import aiohttp

from mail import MAILAgentTemplate, MAILSwarmTemplate
from mail.config import load_config
from mail.db import CallerKey
from mail.server import create_app
from mail.testing import StaticAuth
from mail.testing.server import serve

HERE = Path(__file__).resolve().parent
KEY = "bench-user-key"
MODES = ("off", "on", "bound", "read", "watched")
BOUND = ("bound", "read", "watched")


def _bench_http() -> Any:
    spec = importlib.util.spec_from_file_location("bench_http", HERE / "http.py")
    if spec is None or spec.loader is None:
        raise SystemExit("cannot load benchmarks/http.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _paced_template() -> MAILSwarmTemplate:
    """The same swarm, each turn waiting the milliseconds its task's body starts with."""
    paced = _bench_http().agents.paced
    supervisor = MAILAgentTemplate(
        "supervisor",
        lambda **_params: paced("supervisor"),
        ["worker"],
        [],
        {},
        enable_entrypoint=True,
        can_complete_tasks=True,
    )
    worker = MAILAgentTemplate("worker", lambda **_params: paced("worker"), ["supervisor"], [], {})
    return MAILSwarmTemplate("bench", "1.0.0", [supervisor, worker], [], "supervisor")


def _app(data_dir: Path, enabled: bool, paced: bool = False) -> Any:
    config = load_config(
        None,
        env={},
        search=False,
        overrides={
            "server": {
                "data_dir": str(data_dir),
                "map": {"enabled": enabled},
                "settings": {"print_llm_streams": False},
            },
            "database": {"persist": True, "sqlite_path": str(data_dir / "mail.db")},
        },
    )
    template = _paced_template() if paced else _bench_http()._template()
    return create_app(config, template=template, authenticator=StaticAuth({KEY: ("user", "b")}))


async def _bind(session: aiohttp.ClientSession, url: str, task_id: str) -> str:
    """A conversation bound to ``task_id``: its id."""
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "mail/create", "params": {"taskId": task_id}}
    async with session.post(f"{url}/map", json=rpc) as response:
        answer = await response.json()
    return str(answer["result"]["conversation"]["id"])


async def _record(app: Any, mode: str, conversations: list[str]) -> None:
    """What recording the chunk's turns takes beyond the tasks: for ``read``, a catch-up
    of each conversation (as its first read does); for ``watched``, the writes under way."""
    interceptor = app.state.mail.interceptor
    if mode == "watched":
        await interceptor.drain()
    elif mode == "read":
        store = app.state.mail.conversations.store
        key = CallerKey(swarm=app.state.mail.template.name, role="user", id="b")
        for cid in conversations:
            conv = await store.get(key, cid, "conversation", cid)
            await interceptor.catch_up(key, conv)


async def _task(session: aiohttp.ClientSession, url: str, task_id: str, turn_ms: int = 0) -> None:
    body = f"{turn_ms}:q{task_id[-6:]}" if turn_ms else f"q{task_id[-6:]}"
    async with session.post(f"{url}/message", json={"body": body, "task_id": task_id}) as r:
        answer = await r.json()
    if answer.get("response") != "answer:" + body:
        raise AssertionError(f"task {task_id} answered {answer!r}")


async def _chunk(
    session: aiohttp.ClientSession, url: str, app: Any, mode: str, n: int
) -> tuple[float, float]:
    """Run ``n`` tasks: their wall time and this process's CPU time (every thread's: the
    store's too) until their answers are in and their turns written."""
    elapsed = cpu = 0.0
    conversations = []
    for _ in range(n):
        task_id = f"bench-{uuid.uuid4().hex}"
        if mode in BOUND:  # untimed: the conversation exists beforehand
            conversations.append(await _bind(session, url, task_id))
        start, start_cpu = time.perf_counter(), time.process_time()
        await _task(session, url, task_id)
        elapsed += time.perf_counter() - start
        cpu += time.process_time() - start_cpu
    start, start_cpu = time.perf_counter(), time.process_time()
    await _record(app, mode, conversations)
    return elapsed + time.perf_counter() - start, cpu + time.process_time() - start_cpu


async def _wave(
    session: aiohttp.ClientSession, url: str, app: Any, mode: str, n: int, turn_ms: int
) -> tuple[float, float]:
    """Run ``n`` tasks at once, each turn waiting ``turn_ms`` as an LLM call would: the
    wall time until every answer is in and every turn written, and the CPU time."""
    ids = [f"bench-{uuid.uuid4().hex}" for _ in range(n)]
    conversations = []
    if mode in BOUND:  # untimed
        conversations = await asyncio.gather(*(_bind(session, url, t) for t in ids))
    start, start_cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(_task(session, url, t, turn_ms) for t in ids))
    await _record(app, mode, list(conversations))
    return time.perf_counter() - start, time.process_time() - start_cpu


def _ratios(times: dict[str, list[float]], mode: str) -> str:
    ratios = [t / base for t, base in zip(times[mode], times["off"], strict=True)]
    return f"median {statistics.median(ratios):.3f} (rounds {min(ratios):.3f} - {max(ratios):.3f})"


async def main(args: argparse.Namespace) -> None:
    async with AsyncExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mail-map-bench-")))
        servers: dict[str, tuple[str, Any]] = {}
        paced = args.turn_ms > 0
        for mode in MODES:
            app = _app(tmp / mode, enabled=mode != "off", paced=paced)
            servers[mode] = (await stack.enter_async_context(serve(app)), app)
            if mode == "watched":  # a subscriber: the turns are written as they come
                key = CallerKey(swarm=app.state.mail.template.name, role="user", id="b")
                app.state.mail.conversations.bus.subscribe(key, {})
        session = await stack.enter_async_context(
            aiohttp.ClientSession(headers={"Authorization": f"Bearer {KEY}"})
        )
        for mode, (url, app) in servers.items():  # warm-up
            await _chunk(session, url, app, mode, 20)
        times: dict[str, list[float]] = {mode: [] for mode in MODES}
        cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
        for r in range(args.rounds):
            order = MODES[r % len(MODES) :] + MODES[: r % len(MODES)]
            for mode in order:
                url, app = servers[mode]
                if paced:
                    wall, used = await _wave(session, url, app, mode, args.chunk, args.turn_ms)
                else:
                    wall, used = await _chunk(session, url, app, mode, args.chunk)
                times[mode].append(wall)
                cpu[mode].append(used)
    for mode in MODES:
        rate = args.chunk * args.rounds / sum(times[mode])
        print(f"{mode:>6}: {rate:7.1f} tasks/s   time vs off: {_ratios(times, mode)}")
        print(f"{'':>6}  {'':>13}   CPU  vs off: {_ratios(cpu, mode)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="MAP Mail's cost on tasks (issue 26)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=100)
    parser.add_argument(
        "--turn-ms",
        type=int,
        default=0,
        help="each agent turn waits this long, as an LLM call would; a chunk's tasks then "
        "run all at once (default 0: sequential tasks, no wait: the worst case)",
    )
    asyncio.run(main(parser.parse_args()))
