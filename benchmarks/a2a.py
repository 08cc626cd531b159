"""The A2A façade's cost: ``SendMessage`` (JSON-RPC, not streamed) through the façade
against ``POST /message`` on the same server, and against a minimal ``a2a-sdk`` server
(its ``DefaultRequestHandler``, an in-memory task store, an executor that completes at
once with an artifact).

Each request is one task of the ``runtime.py`` swarm (user -> supervisor ``send_request``
-> worker ``send_response`` -> supervisor ``task_complete``; every answer checked) for
the MAIL server, which keeps no store (``--store sqlite``: it keeps tasks, and the A2A
tasks, in SQLite). The three targets are driven in turns, in chunks of ``--chunk``
sequential requests over one keep-alive ``httpx`` client each (the machine's speed drifts:
alternating keeps the comparison fair); the figures are the median latency of each, and
the median CPU time of the process (servers and client: one event loop) per request, with
the ratios. On a machine other work loads, the CPU time moves less than the latency.

    uv run python benchmarks/a2a.py [--rounds 8] [--chunk 50] [--store sqlite]
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/http.py is named like the standard library's ``http``: keep this directory off
# the path.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import asyncio
import importlib.util
import itertools
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import httpx

from mail import MAILAgentTemplate, MAILSwarmTemplate
from mail.config import load_config
from mail.server import create_app
from mail.testing import StaticAuth
from mail.testing.server import serve


def _beside(name: str) -> Any:
    """benchmarks/<name>.py (this directory is kept off the path, see above)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / f"{name}.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load benchmarks/{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _agents() -> Any:
    """benchmarks/_agents.py, the agents every benchmark runs."""
    return _beside("_agents")


#: the minimal a2a-sdk server (benchmarks/_peer_apps.py)
minimal_a2a = _beside("_peer_apps").minimal_a2a


def _template() -> MAILSwarmTemplate:
    """The swarm of benchmarks/http.py and runtime.py."""
    agents = _agents()
    supervisor = MAILAgentTemplate(
        "supervisor",
        lambda **_params: agents.agent(agents.supervisor),
        ["worker"],
        [],
        {},
        enable_entrypoint=True,
        can_complete_tasks=True,
    )
    worker = MAILAgentTemplate(
        "worker", lambda **_params: agents.agent(agents.worker), ["supervisor"], [], {}
    )
    return MAILSwarmTemplate("bench", "1.0.0", [supervisor, worker], [], "supervisor")


API_KEY = "bench-user-key"
_IDS = itertools.count(1)

Send = Callable[[httpx.AsyncClient, str], Awaitable[None]]


def rpc(text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": next(_IDS),
        "method": "SendMessage",
        "params": {
            "message": {
                "role": "ROLE_USER",
                "messageId": f"m-{next(_IDS)}",
                "parts": [{"text": text}],
            }
        },
    }


async def post_message(http: httpx.AsyncClient, url: str) -> None:
    answer = (await http.post(f"{url}/message", json={"body": "q"})).json()
    assert answer["response"] == "answer:q", answer


async def send_message(http: httpx.AsyncClient, url: str) -> None:
    answer = (await http.post(url, json=rpc("q"), headers={"A2A-Version": "1.0"})).json()
    task = answer["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", answer
    assert task["artifacts"][0]["parts"][0]["text"] == "answer:q", answer


async def chunk(
    send: Send, http: httpx.AsyncClient, url: str, size: int
) -> tuple[list[float], float]:
    """The latency of each of ``size`` requests, and the process's CPU time per request."""
    times = []
    cpu = time.process_time()
    for _ in range(size):
        start = time.perf_counter()
        await send(http, url)
        times.append(time.perf_counter() - start)
    return times, (time.process_time() - cpu) / size


async def main(rounds: int, size: int, store: str) -> None:
    with tempfile.TemporaryDirectory(prefix="mail-bench-a2a-") as data:
        database: dict[str, Any] = {"persist": store != "memory"}
        if store == "sqlite":
            database["sqlite_path"] = f"{data}/mail.db"
        config = load_config(
            None,
            env={},
            search=False,
            overrides={"server": {"data_dir": data}, "database": database},
        )
        app = create_app(
            config, template=_template(), authenticator=StaticAuth({API_KEY: ("user", "bench")})
        )
        async with AsyncExitStack() as stack:
            mail = await stack.enter_async_context(serve(app))
            minimal = await stack.enter_async_context(serve(minimal_a2a()))
            headers = {"Authorization": f"Bearer {API_KEY}"}
            http = await stack.enter_async_context(httpx.AsyncClient(headers=headers, timeout=30))
            targets: dict[str, tuple[Send, str]] = {
                "POST /message": (post_message, mail),
                "A2A façade SendMessage": (send_message, f"{mail}/a2a"),
                "minimal a2a-sdk SendMessage": (send_message, minimal),
            }
            for send, url in targets.values():  # warm up
                await chunk(send, http, url, 20)
            times: dict[str, list[float]] = {name: [] for name in targets}
            cpus: dict[str, list[float]] = {name: [] for name in targets}
            order = list(targets)
            for r in range(rounds):
                for name in order[r % 3 :] + order[: r % 3]:  # a rotating order
                    send, url = targets[name]
                    latencies, cpu = await chunk(send, http, url, size)
                    times[name] += latencies
                    cpus[name].append(cpu)
    print(f"{rounds} rounds of {size} sequential requests each, store: {store}")
    report("latency", {name: statistics.median(t) * 1000 for name, t in times.items()})
    report("CPU per request", {name: statistics.median(c) * 1000 for name, c in cpus.items()})


def report(what: str, medians: dict[str, float]) -> None:
    base = medians["POST /message"]
    print(f" {what} (median):")
    for name, ms in medians.items():
        print(f"  {name:30} {ms:6.2f} ms   x{ms / base:.2f} of POST /message")
    facade, minimal_ms = medians["A2A façade SendMessage"], medians["minimal a2a-sdk SendMessage"]
    print(f"  façade / minimal a2a-sdk server: x{facade / minimal_ms:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--chunk", type=int, default=50)
    parser.add_argument("--store", choices=("memory", "sqlite"), default="memory")
    options = parser.parse_args()
    asyncio.run(main(options.rounds, options.chunk, options.store))
