"""An A2A agent's call to a remote A2A agent (a real ``a2a-sdk`` server process on
loopback) is a span of the traced turn, and the remote receives its ``traceparent``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from tests._servers import Server
from tests.a2a.test_members import (
    TOKEN,
    noted,
    remote,  # noqa: F401  # the fixture: the remote process
    swarm,
)

from mail.config import StdlibConfig, StdlibHTTPConfig
from mail.stdlib._settings import configure
from mail.telemetry import trace_runtime

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def loopback_allowed() -> Iterator[None]:
    """The stdlib's outbound guard lets loopback through (the remote is on it)."""
    previous = configure(StdlibConfig(http=StdlibHTTPConfig(allow_loopback=True)))
    try:
        yield
    finally:
        configure(previous)


@pytest.mark.usefixtures("loopback_allowed")
async def test_the_a2a_call_is_a_hop_span_whose_traceparent_the_remote_gets(
    remote: tuple[Server, Path],  # noqa: F811  # the fixture imported above
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, events = remote
    monkeypatch.setenv("A2A_TEST_TOKEN", TOKEN)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    template = swarm(server.url, auth={"token": "${A2A_TEST_TOKEN}"}, streaming=False)
    members = template.instantiate({"user_token": "k"}, user_id="u1", print_llm_streams=False)
    trace_runtime(members.runtime, tracer_provider=provider)
    try:
        final, _ = await members.post_message("hello", task_id="t-a2a", timeout=30)
    finally:
        await members.shutdown()

    assert final["message"]["body"] == "remote answered: remote says: hello"
    spans = exporter.get_finished_spans()
    (hop,) = [s for s in spans if s.name == "a2a send_message"]
    (turn,) = [s for s in spans if s.name == "invoke_agent remote"]
    assert hop.kind is SpanKind.CLIENT
    assert hop.parent is not None and hop.parent.span_id == turn.context.span_id
    assert hop.attributes is not None and hop.attributes["mail.peer"] == "remote"
    text = await noted(events, "traceparent")
    # version 00, the hop's trace and span ids, then its flags (sampled)
    sent = f"traceparent 00-{hop.context.trace_id:032x}-{hop.context.span_id:016x}-"
    # every request of the hop carries it (the send, and the task list a context new to
    # the server is looked up in first)
    lines = [line for line in text.splitlines() if line.startswith("traceparent")]
    assert lines
    assert all(line.startswith(sent) and int(line.rsplit("-", 1)[1], 16) & 1 for line in lines)
