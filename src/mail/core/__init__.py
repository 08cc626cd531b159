"""The MAIL core: protocol types, tools, tasks, events and the runtime.

``mail.core`` imports nothing of ours but ``mail.errors`` and ``mail._limits`` (what outside
input may look like) and no I/O library; it reaches
agents, storage and remote swarms through small interfaces passed to its constructors.

The names v1.3.6 re-exported here (``from mail.core import AgentCore, MAILRuntime, ...``)
resolve lazily through module ``__getattr__``, so ``import mail.core.message`` stays cheap
and does not load the runtime.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "ActionFunction": "actions",
    "ActionOverrideFunction": "actions",
    "ActionCore": "actions",
    "AgentCore": "agents",
    "AgentFunction": "agents",
    "MAILAddress": "message",
    "MAILBroadcast": "message",
    "MAILInterrupt": "message",
    "MAILInterswarmMessage": "message",
    "MAILMessage": "message",
    "MAILRequest": "message",
    "MAILResponse": "message",
    "create_admin_address": "message",
    "create_agent_address": "message",
    "create_system_address": "message",
    "create_user_address": "message",
    "format_agent_address": "message",
    "parse_agent_address": "message",
    "MAILRuntime": "runtime",
    "MAILTask": "tasks",
    "MAIL_TOOL_NAMES": "tools",
    "AgentToolCall": "tools",
    "convert_call_to_mail_message": "tools",
    "create_acknowledge_broadcast_tool": "tools",
    "create_broadcast_tool": "tools",
    "create_ignore_broadcast_tool": "tools",
    "create_interrupt_tool": "tools",
    "create_interswarm_broadcast_tool": "tools",
    "create_mail_tools": "tools",
    "create_request_tool": "tools",
    "create_response_tool": "tools",
    "create_supervisor_tools": "tools",
    "create_swarm_discovery_tool": "tools",
    "create_task_complete_tool": "tools",
    "pydantic_model_to_tool": "tools",
    "emit_delta": "_live",
    "report_usage": "_live",
}

__all__ = [
    "ActionCore",
    "ActionFunction",
    "ActionOverrideFunction",
    "AgentCore",
    "AgentFunction",
    "AgentToolCall",
    "MAILAddress",
    "MAILBroadcast",
    "MAILInterrupt",
    "MAILInterswarmMessage",
    "MAILMessage",
    "MAILRequest",
    "MAILResponse",
    "MAILRuntime",
    "MAILTask",
    "MAIL_TOOL_NAMES",
    "convert_call_to_mail_message",
    "create_acknowledge_broadcast_tool",
    "create_admin_address",
    "create_agent_address",
    "create_broadcast_tool",
    "create_ignore_broadcast_tool",
    "create_interrupt_tool",
    "create_interswarm_broadcast_tool",
    "create_mail_tools",
    "create_request_tool",
    "create_response_tool",
    "create_supervisor_tools",
    "create_swarm_discovery_tool",
    "create_system_address",
    "create_task_complete_tool",
    "create_user_address",
    "emit_delta",
    "format_agent_address",
    "parse_agent_address",
    "pydantic_model_to_tool",
    "report_usage",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mail.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"mail.core.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
