"""The A2A façade's cost: ``SendMessage`` (JSON-RPC, not streamed) through the façade
against ``POST /message`` on the same server, and against a minimal ``a2a-sdk`` server
(its ``DefaultRequestHandler``, an in-memory task store, an executor that completes at
once with an artifact).

Each request is one task of the ``runtime.py`` swarm (user -> supervisor ``send_request``
-> worker ``send_response`` -> supervisor ``task_complete``; every answer checked) for
the MAIL server, which keeps no store (``--store sqlite``: it keeps tasks, and the A2A
tasks, in SQLite). The three targets are driven in turns, in chunks of ``--chunk``
sequential requests over one keep-alive ``httpx`` client each (the machine's speed drifts:
alternating keeps the comparison fair); the figure is the median latency of each, and the
ratios.

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
from a2a.helpers import new_task
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, TaskState
from starlette.applications import Starlette

from mail import MAILAgentTemplate, MAILSwarmTemplate
from mail.config import load_config
from mail.server import create_app
from mail.testing import StaticAuth
from mail.testing.server import serve


def _agents() -> Any:
    """benchmarks/_agents.py, the agents every benchmark runs."""
    spec = importlib.util.spec_from_file_location("_agents", Path(__file__).parent / "_agents.py")
    if spec is None or spec.loader is None:
        raise SystemExit("cannot load benchmarks/_agents.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


class Done(AgentExecutor):
    """The minimal agent: a task completed at once, its artifact the question."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id and context.message
        await event_queue.enqueue_event(
            new_task(
                context.task_id,
                context.context_id,
                TaskState.TASK_STATE_SUBMITTED,
                history=[context.message],
            )
        )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.add_artifact([Part(text="answer:" + context.get_user_input())])
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


def minimal_a2a() -> Starlette:
    card = AgentCard(
        name="minimal",
        description="a2a-sdk's server with an in-memory store",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url="http://127.0.0.1/", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="answer", name="answer", description="answers", tags=["bench"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=Done(), task_store=InMemoryTaskStore(), agent_card=card
    )
    return Starlette(
        routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    )


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


async def chunk(send: Send, http: httpx.AsyncClient, url: str, size: int) -> list[float]:
    times = []
    for _ in range(size):
        start = time.perf_counter()
        await send(http, url)
        times.append(time.perf_counter() - start)
    return times


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
            order = list(targets)
            for r in range(rounds):
                for name in order[r % 3 :] + order[: r % 3]:  # a rotating order
                    send, url = targets[name]
                    times[name] += await chunk(send, http, url, size)
    medians = {name: statistics.median(t) * 1000 for name, t in times.items()}
    base = medians["POST /message"]
    print(f"{rounds} rounds of {size} sequential requests each, store: {store}")
    for name, ms in medians.items():
        print(f"  {name:30} median {ms:6.2f} ms   x{ms / base:.2f} of POST /message")
    facade, minimal_ms = medians["A2A façade SendMessage"], medians["minimal a2a-sdk SendMessage"]
    print(f"  façade / minimal a2a-sdk server: x{facade / minimal_ms:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--chunk", type=int, default=50)
    parser.add_argument("--store", choices=("memory", "sqlite"), default="memory")
    options = parser.parse_args()
    asyncio.run(main(options.rounds, options.chunk, options.store))
