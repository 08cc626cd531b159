"""An MCP tool call of a traced turn carries the action span's ``traceparent`` in the
request's ``_meta``, as a real MCP server (over streamable HTTP, on loopback) reads it."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests._servers import serve

from mail.api import MAILAgentTemplate, MAILSwarmTemplate
from mail.examples.mcp_demo.agents import McpDemoFunction
from mail.stdlib.mcp import MCPServerSpec
from mail.telemetry import trace_runtime

pytestmark = pytest.mark.timeout(45)


def recording_server(seen: list[dict[str, Any]]) -> MCPServer:
    """An MCP server whose ``add`` keeps the ``_meta`` of each call in ``seen``."""
    server = MCPServer("traced")

    @server.tool(description="Add two integers and return their sum.")
    def add(a: int, b: int, ctx: Context) -> int:
        seen.append(dict(ctx.request_context.meta or {}))
        return a + b

    return server


async def test_the_mcp_call_carries_the_action_span_in_its_meta() -> None:
    seen: list[dict[str, Any]] = []
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with serve(recording_server(seen).streamable_http_app()) as base:
        agent = MAILAgentTemplate(
            "assistant",
            McpDemoFunction,
            [],
            [],
            {"server": "remote"},
            enable_entrypoint=True,
            can_complete_tasks=True,
            mcp_servers=["remote"],
        )
        template = MAILSwarmTemplate(
            "traced-mcp",
            "1.0",
            [agent],
            [],
            "assistant",
            mcp_servers=[MCPServerSpec(name="remote", url=f"{base}/mcp")],
        )
        async with template:
            swarm = template.instantiate({}, user_id="u1")
            trace_runtime(swarm.runtime, tracer_provider=provider)
            try:
                final, _ = await swarm.post_message("add 2 and 40", timeout=30)
            finally:
                await swarm.shutdown()

    assert final["message"]["body"] == "The MCP tool remote__add answered: 42"
    (action,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool remote__add"]
    (meta,) = seen
    ids = f"00-{action.context.trace_id:032x}-{action.context.span_id:016x}-"
    assert str(meta.get("traceparent", "")).startswith(ids), meta
