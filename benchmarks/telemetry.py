"""What traces cost: the realistic swarm and HTTP with telemetry off and on.

* ``runtime``: benchmarks/runtime.py's realistic workload (three agent turns per task, each
  waiting ``--turn-delay-ms`` as an LLM call would, ``--in-flight`` tasks at all times) on
  a bare ``MAILRuntime``, untraced ("off") and traced with :func:`mail.telemetry.trace_runtime`
  ("on": a span per task turn and agent turn, batch-exported over OTLP/HTTP to a receiver
  in a child process, ``python -m mail.testing.otlp --quiet``). Prints the share of the
  ideal rate reached and the process's CPU time per task (export thread included).
* ``llm``: the same three turns made by LiteLLM agents (chat completions) answered by the
  stub LLM server (``mail.testing.llm``, in this process), 20 tasks at a time: the CPU
  per task of a swarm whose turns are model calls, untraced and traced (then also a
  ``chat <model>`` span per call).
* ``http``: benchmarks/http.py's sequential and 20-client phases against two in-process
  servers, ``[server.telemetry]`` off and on (exporting to the same receiver: HTTP server
  spans, task, agent-turn and the rest).

Off and on alternate for ``--rounds`` rounds so the machine's load falls on both alike; the
medians and their difference are printed.

    uv run python benchmarks/telemetry.py [--rounds 6] [--tasks 2000] [--turn-delay-ms 200]
        [--in-flight 500] [--http-tasks 500] [--llm-tasks 200] [--only runtime|http|llm]
        [--sample 0.1]

``--sample R`` keeps a share R of the runtime's traces (``ParentBased(TraceIdRatioBased(R))``,
what ``OTEL_TRACES_SAMPLER=parentbased_traceidratio`` makes in ``mail server``).

``--only runtime --no-trace-both`` runs "off" alone: run it with another checkout's
environment (``cd OTHER && uv run python PATH/benchmarks/telemetry.py ...``) to compare
untraced runs of two versions.
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
import subprocess
import time
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent


def _beside(name: str) -> ModuleType:
    """benchmarks/<name>.py, imported as ``bench_<name>`` (``_agents`` found beside it)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.append(str(HERE))  # runtime.py's `from _agents import ...`
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(HERE))
    return module


bench = _beside("runtime")
web = _beside("http")
_PROVIDER: Any = None


class TracedRunner(bench.RuntimeRunner):
    """benchmarks/runtime.py's runner, its runtime traced."""

    def __init__(self, max_finished: int = 1000) -> None:
        from mail.telemetry import trace_runtime

        super().__init__(max_finished)
        trace_runtime(self.rt, tracer_provider=_PROVIDER)


def receiver() -> tuple[subprocess.Popen[bytes], str]:
    """``python -m mail.testing.otlp --quiet`` on a free port; its URL once it listens."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mail.testing.otlp", "--port", "0", "--quiet"],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    url = line.split(" at ")[1].removesuffix("/v1/traces\n")
    return proc, url


def provider(url: str, sample: float) -> Any:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    traced = TracerProvider(
        resource=Resource.create({"service.name": "bench"}),
        sampler=ParentBased(TraceIdRatioBased(sample)),
    )
    traced.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    return traced


async def runtime_round(n: int, in_flight: int, offset: int) -> tuple[float, float]:
    """(tasks/s, CPU ms per task) of ``n`` tasks ``in_flight`` at a time."""
    cpu = time.process_time()
    rate = await bench.steady(n, in_flight, offset)
    if _PROVIDER is not None:
        _PROVIDER.force_flush()  # the export of this round's spans counts in it
    return rate, (time.process_time() - cpu) / n * 1000


async def compare_runtime(args: argparse.Namespace, url: str) -> None:
    global _PROVIDER  # noqa: PLW0603  # one provider for every traced round
    bench.TURN_DELAY = args.turn_delay_ms / 1000
    ideal = args.in_flight / (bench.TURNS_PER_TASK * bench.TURN_DELAY)
    traced = provider(url, args.sample)
    sides = ("off", "on") if args.trace_both else ("off",)
    figures: dict[str, list[tuple[float, float]]] = {v: [] for v in sides}
    print(
        f"# realistic swarm: turn delay {args.turn_delay_ms:g} ms, {args.in_flight} in flight, "
        f"traces sampled {args.sample:.0%}"
    )
    for r in range(args.rounds + 1):  # round 0 warms up
        for v in sides if r % 2 == 0 else sides[::-1]:
            bench.RUNNER = TracedRunner if v == "on" else bench.RuntimeRunner
            _PROVIDER = traced if v == "on" else None
            print(f"round {r}, telemetry {v}:")
            figure = await runtime_round(args.tasks, args.in_flight, (r * 2 + len(v)) * 1_000_000)
            if r:
                figures[v].append(figure)
    traced.shutdown()
    for v in sides:
        rate = statistics.median(f[0] for f in figures[v])
        cpu = statistics.median(f[1] for f in figures[v])
        print(
            f"median telemetry {v:<3} {rate:>7,.0f} tasks/s ({rate / ideal:.1%} of ideal), {cpu:.3f} ms CPU/task"
        )
    if args.trace_both:
        off, on = (statistics.median(f[1] for f in figures[v]) for v in ("off", "on"))
        print(f"CPU per task, on / off: {on / off:.3f} ({(on - off) / off * 100:+.1f} %)")


SUPERVISOR_PROMPT = "You are the supervisor."


def _llm_rule(request: dict[str, Any]) -> Any:
    """The stub LLM plays both agents: the supervisor delegates, the worker answers, the
    supervisor completes (three model calls a task, as the scripted workload's turns)."""
    from mail.testing.llm import StubReply

    messages = request["messages"]
    if messages[0]["content"] == SUPERVISOR_PROMPT:
        if not any('<from type="agent">' in str(m.get("content")) for m in messages):
            return StubReply.tool_calls(
                ("send_request", {"target": "worker", "subject": "Sum", "body": "2 + 40?"})
            )
        return StubReply.tool_calls(("task_complete", {"finish_message": "42"}))
    return StubReply.tool_calls(
        ("send_response", {"target": "supervisor", "subject": "Re", "body": "42"})
    )


async def compare_llm(args: argparse.Namespace, url: str) -> None:
    """LiteLLM agents answered by the stub LLM server (in this process: its CPU counts on
    both sides), untraced and traced: CPU per task."""
    from mail.core.agents import AgentCore
    from mail.core.message import create_agent_address, create_user_address, make_request
    from mail.core.runtime import MAILRuntime
    from mail.factories import LiteLLMAgentFunction, LiteLLMSupervisorFunction
    from mail.telemetry import trace_runtime
    from mail.testing.llm import StubLLMServer

    traced = provider(url, args.sample)
    cpu: dict[str, list[float]] = {"off": [], "on": []}
    async with StubLLMServer(rule=_llm_rule) as llm:
        direct = {"use_proxy": False, "api_base": llm.base_url, "api_key": "k"}
        common = {"tool_format": "completions", "stream_tokens": False, **direct}

        def runtime(on: bool) -> MAILRuntime:
            supervisor = LiteLLMSupervisorFunction(
                "supervisor", ["worker"], [], "openai/stub", SUPERVISOR_PROMPT, **common
            )
            worker = LiteLLMAgentFunction(
                "worker", ["supervisor"], [], "openai/stub", "You are the worker.", **common
            )
            rt = MAILRuntime(
                agents={
                    "supervisor": AgentCore(
                        supervisor,
                        ["worker"],
                        enable_entrypoint=True,
                        can_complete_tasks=True,
                        tool_format="completions",
                    ),
                    "worker": AgentCore(worker, ["supervisor"], tool_format="completions"),
                },
                actions={},
                user_id="bench",
                swarm_name="bench",
                entrypoint="supervisor",
            )
            if on:
                trace_runtime(rt, tracer_provider=traced)
            return rt

        async def one(rt: MAILRuntime, task_id: str) -> None:
            question = make_request(
                task_id=task_id,
                sender=create_user_address("bench"),
                recipient=create_agent_address("supervisor"),
                subject="New Message",
                body="What is 2 + 40?",
            )
            final = await rt.submit_and_wait(question, timeout=60)
            assert final["message"]["body"] == "42", final

        for r in range(args.rounds + 1):
            for v in ("off", "on") if r % 2 == 0 else ("on", "off"):
                rt = runtime(v == "on")
                rt.start()
                started = time.process_time()
                room = asyncio.Semaphore(20)

                async def bounded(
                    i: int, rt: MAILRuntime = rt, v: str = v, r: int = r, room: Any = room
                ) -> None:
                    async with room:
                        await one(rt, f"{v}-{r}-{i}")

                await asyncio.gather(*(bounded(i) for i in range(args.llm_tasks)))
                if v == "on":
                    traced.force_flush()
                spent = (time.process_time() - started) / args.llm_tasks * 1000
                await rt.shutdown()
                print(f"round {r}, telemetry {v}: {spent:.2f} ms CPU/task")
                if r:
                    cpu[v].append(spent)
    traced.shutdown()
    off, on = (statistics.median(cpu[v]) for v in ("off", "on"))
    print(
        f"# LiteLLM agents, stub LLM: CPU per task off {off:.2f} ms, on {on:.2f} ms "
        f"({(on - off) / off * 100:+.1f} %)"
    )


async def compare_http(args: argparse.Namespace, url: str) -> None:
    """``http.py``'s phases against two servers, telemetry off and on (exporting to
    ``url``), in alternating rounds."""
    await web.off_and_on(
        "telemetry",
        lambda v, data_dir: web.build_server(data_dir, telemetry=url if v == "on" else None),
        rounds=args.rounds,
        tasks=args.http_tasks,
        clients=20,
        client_kind="aiohttp",
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--tasks", type=int, default=2000, help="per runtime round")
    parser.add_argument("--turn-delay-ms", type=float, default=200.0)
    parser.add_argument("--in-flight", type=int, default=500)
    parser.add_argument("--http-tasks", type=int, default=500, help="per HTTP phase")
    parser.add_argument("--only", choices=["runtime", "http", "llm"])
    parser.add_argument("--llm-tasks", type=int, default=200, help="per LLM round")
    parser.add_argument(
        "--sample", type=float, default=1.0, help="share of the runtime's traces kept (0-1)"
    )
    parser.add_argument("--no-trace-both", dest="trace_both", action="store_false")
    args = parser.parse_args()
    proc, url = receiver()
    try:
        if args.only in (None, "runtime"):
            await compare_runtime(args, url)
        if args.only in (None, "http"):
            await compare_http(args, url)
        if args.only in (None, "llm"):
            await compare_llm(args, url)
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    asyncio.run(main())
