"""The spans of a runtime's tasks (``mail.telemetry.trace_runtime``), recorded by the
OpenTelemetry SDK's in-memory exporter: two LiteLLM agents answered by the stub LLM on
loopback, one of them calling an action."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mail._log_format import JSONFormatter
from mail.core.actions import ActionCore
from mail.core.agents import AgentCore
from mail.core.message import (
    MAILMessage,
    create_agent_address,
    create_user_address,
    make_request,
)
from mail.core.runtime import MAILRuntime
from mail.factories import LiteLLMAgentFunction, LiteLLMSupervisorFunction
from mail.telemetry import trace_runtime
from mail.testing import Incoming, ScriptedAgent, ScriptedCall, tc
from mail.testing.llm import StubLLMServer, StubReply

SUPERVISOR_PROMPT = "You are the supervisor."
WORKER_PROMPT = "You are the worker."


def answer(request: dict[str, Any]) -> StubReply:
    """Play both agents: the supervisor delegates then completes; the worker looks the
    answer up (an action), then replies."""
    messages = request["messages"]
    if messages[0]["content"] == SUPERVISOR_PROMPT:
        if not any('<from type="agent">' in str(m.get("content")) for m in messages):
            return StubReply.tool_calls(
                ("send_request", {"target": "worker", "subject": "Sum", "body": "2 + 40?"})
            )
        return StubReply.tool_calls(("task_complete", {"finish_message": "The sum is 42."}))
    if not any(m.get("role") == "tool" for m in messages):
        return StubReply.tool_calls(("lookup", {"question": "2 + 40"}))
    return StubReply.tool_calls(
        ("send_response", {"target": "supervisor", "subject": "Re: Sum", "body": "42"})
    )


class Lines(logging.Handler):
    """Keeps the JSON lines of the records of ``mail.*`` loggers."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(JSONFormatter())
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


async def lookup(args: dict[str, Any]) -> str:
    logging.getLogger("mail.test.lookup").warning("looking up %s", args["question"])
    return "42"


def recorded() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A tracer provider whose ended spans the exporter it comes with keeps."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def question(task_id: str, body: str) -> MAILMessage:
    """Alice's ``body`` to the supervisor, starting task ``task_id``."""
    return make_request(
        task_id=task_id,
        sender=create_user_address("alice"),
        recipient=create_agent_address("supervisor"),
        subject="New Message",
        body=body,
    )


def supervisor_only(function: Any) -> MAILRuntime:
    """Alice's runtime of a swarm of one agent, the supervisor, whose function is
    ``function``."""
    supervisor = AgentCore(function, [], enable_entrypoint=True, can_complete_tasks=True)
    return MAILRuntime(
        agents={"supervisor": supervisor},
        actions={},
        user_id="alice",
        swarm_name="demo",
        entrypoint="supervisor",
    )


async def run_traced(capture_content: bool) -> tuple[list[ReadableSpan], list[dict[str, Any]]]:
    provider, exporter = recorded()
    lines = Lines()
    logger = logging.getLogger("mail.test.lookup")
    logger.addHandler(lines)
    async with StubLLMServer(rule=answer) as llm:
        direct = {"use_proxy": False, "api_base": llm.base_url, "api_key": "k"}
        completions = {"tool_format": "completions", **direct}
        supervisor = LiteLLMSupervisorFunction(
            "supervisor", ["worker"], [], "openai/stub-model", SUPERVISOR_PROMPT, **completions
        )
        worker = LiteLLMAgentFunction(
            "worker",
            ["supervisor"],
            [{"name": "lookup", "description": "look it up", "parameters": {"type": "object"}}],
            "openai/stub-model",
            WORKER_PROMPT,
            **completions,
        )
        runtime = MAILRuntime(
            agents={
                "supervisor": AgentCore(
                    supervisor,
                    ["worker"],
                    enable_entrypoint=True,
                    can_complete_tasks=True,
                    tool_format="completions",
                ),
                "worker": AgentCore(
                    worker, ["supervisor"], actions=["lookup"], tool_format="completions"
                ),
            },
            actions={"lookup": ActionCore(lookup, "lookup", {})},
            user_id="alice",
            swarm_name="demo",
            entrypoint="supervisor",
        )
        trace_runtime(runtime, tracer_provider=provider, capture_content=capture_content)
        runtime.start()
        caller = provider.get_tracer("test")
        try:
            with caller.start_as_current_span("caller"):
                final = await runtime.submit_and_wait(
                    question("t-traced", "What is 2 + 40?"), timeout=30
                )
        finally:
            await runtime.shutdown(timeout=5.0)
            logger.removeHandler(lines)
    assert final["message"]["body"] == "The sum is 42."
    return list(exporter.get_finished_spans()), lines.lines


def named(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


async def test_a_task_is_one_trace_of_turns_model_calls_and_an_action() -> None:
    spans, lines = await run_traced(capture_content=False)

    (caller,) = named(spans, "caller")
    (task,) = named(spans, "mail task")
    assert task.parent is not None and task.parent.span_id == caller.context.span_id
    assert {s.context.trace_id for s in spans} == {caller.context.trace_id}
    assert task.attributes is not None
    assert task.attributes["mail.task.id"] == "t-traced"
    assert task.attributes["mail.swarm"] == "demo"
    assert task.attributes["mail.task.status"] == "completed"

    supervisor_turns = named(spans, "invoke_agent supervisor")
    worker_turns = named(spans, "invoke_agent worker")
    assert len(supervisor_turns) == 2 and len(worker_turns) == 2
    for turn in supervisor_turns + worker_turns:
        assert turn.parent is not None and turn.parent.span_id == task.context.span_id
        assert turn.attributes is not None
        assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"

    calls = named(spans, "chat stub-model")
    assert len(calls) == 4
    turn_ids = {t.context.span_id for t in supervisor_turns + worker_turns}
    for call in calls:
        assert call.kind is SpanKind.CLIENT
        assert call.parent is not None and call.parent.span_id in turn_ids
        attributes = call.attributes
        assert attributes is not None
        assert attributes["gen_ai.system"] == "openai"
        assert attributes["gen_ai.request.model"] == "stub-model"
        assert attributes["gen_ai.usage.input_tokens"] == 10
        assert attributes["gen_ai.usage.output_tokens"] == 5
        assert tuple(attributes["gen_ai.response.finish_reasons"]) == ("tool_calls",)
        assert "gen_ai.input.messages" not in attributes
        assert "gen_ai.output.messages" not in attributes

    (action,) = named(spans, "execute_tool lookup")
    assert action.parent is not None
    assert action.parent.span_id == worker_turns[0].context.span_id
    assert action.attributes is not None
    assert action.attributes["gen_ai.tool.name"] == "lookup"
    assert action.attributes["mail.action.status"] == "success"
    assert action.status.status_code is not StatusCode.ERROR

    # the action's log line names its span (and the task and agent)
    (line,) = [line for line in lines if line["message"] == "looking up 2 + 40"]
    assert line["trace_id"] == format(action.context.trace_id, "032x")
    assert line["span_id"] == format(action.context.span_id, "016x")
    assert line["task_id"] == "t-traced" and line["agent"] == "worker"


async def test_model_content_is_recorded_only_when_asked() -> None:
    spans, _ = await run_traced(capture_content=True)

    calls = named(spans, "chat stub-model")
    assert calls
    first = min(calls, key=lambda s: s.start_time or 0)
    assert first.attributes is not None
    messages = json.loads(str(first.attributes["gen_ai.input.messages"]))
    assert messages[0] == {"role": "system", "content": SUPERVISOR_PROMPT}
    assert "What is 2 + 40?" in json.dumps(messages)
    output = json.loads(str(first.attributes["gen_ai.output.messages"]))
    assert output["tool_calls"][0]["function"]["name"] == "send_request"


pytestmark = pytest.mark.timeout(60)


async def test_closing_the_tracing_ends_the_turns_still_running() -> None:
    provider, exporter = recorded()
    entered = asyncio.Event()

    async def stuck(messages: list[dict[str, Any]], tool_choice: Any = "required") -> Any:
        entered.set()
        await asyncio.Event().wait()  # until the runtime stops

    runtime = supervisor_only(stuck)
    tracing = trace_runtime(runtime, tracer_provider=provider)
    runtime.start()
    try:
        await runtime.submit(question("t-stuck", "anything"))
        await asyncio.wait_for(entered.wait(), 10)
        assert named(list(exporter.get_finished_spans()), "mail task") == []  # still running
        tracing.close()
        [turn] = named(list(exporter.get_finished_spans()), "mail task")
        assert turn.attributes is not None
        assert (turn.attributes["mail.task.id"], turn.attributes["mail.task.status"]) == (
            "t-stuck",
            "stopped",
        )
    finally:
        await runtime.shutdown(timeout=5.0)
    # the agent turn's span ends with the turn, cancelled by the shutdown, under the task's
    [agent] = named(list(exporter.get_finished_spans()), "invoke_agent supervisor")
    assert agent.parent is not None and agent.parent.span_id == turn.context.span_id


async def test_an_agent_turn_that_raised_has_an_error_status() -> None:
    provider, exporter = recorded()
    calls = 0

    def rule(incoming: Incoming) -> ScriptedCall:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("the model is down")
        return tc("task_complete", finish_message="done")

    runtime = supervisor_only(ScriptedAgent(rule=rule))
    trace_runtime(runtime, tracer_provider=provider)
    runtime.start()
    try:
        final = await runtime.submit_and_wait(question("t-flaky", "anything"), timeout=30)
    finally:
        await runtime.shutdown(timeout=5.0)

    assert final["message"]["body"] == "done"
    failed, *later = named(list(exporter.get_finished_spans()), "invoke_agent supervisor")
    assert failed.status.status_code is StatusCode.ERROR
    assert "RuntimeError: the model is down" in (failed.status.description or "")
    assert later and all(s.status.status_code is not StatusCode.ERROR for s in later)
