"""The MAIL core: protocol types, tools, tasks, events and the runtime.

``mail.core`` imports nothing of ours but ``mail.errors``, ``mail._limits`` and ``mail._text``
(what outside input may look like) and the store interface ``mail.db.store``, and no I/O
library; it reaches agents, storage and remote swarms through small interfaces passed to
its constructors.

The names v1.3.6 re-exported here (``from mail.core import AgentCore, MAILRuntime, ...``)
resolve lazily through module ``__getattr__``, so ``import mail.core.message`` stays cheap
and does not load the runtime. So do the names the layers above need from the core's
private modules: the live output of an agent turn (``emit_delta``, ``report_usage``,
``DeltaKind``, and ``current_turn`` for log records), the tracer seam (``model_call``
around a model call, ``tracer_of``, ``traced_hop`` and ``trace_headers`` for calls to
other servers), the direction of an interswarm message (``Direction``), the subjects of
the runtime's system messages (``Subject``, ``SystemMessages``) and the help texts
(``HELP_SUMMARY``, ``full_protocol_text``, ``cached_mail_tool_spec``); and, for a server
that reads tasks without running them (a replica, MAP Mail), the runtime's scheduler type
and its store readers (``Scheduler``, ``restore``, ``stored_events``); and the owner of
background tasks (``Spawner``), for the server's connections too.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mail.core._live import (
        DeltaKind,
        current_task_id,
        current_turn,
        emit_delta,
        model_call,
        report_usage,
        trace_headers,
        traced_hop,
        tracer_of,
    )
    from mail.core._recorder import restore, stored_events
    from mail.core._remote import Direction
    from mail.core._scheduler import Scheduler
    from mail.core._spawn import Spawner
    from mail.core._system_messages import (
        HELP_SUMMARY,
        Subject,
        SystemMessages,
        full_protocol_text,
    )
    from mail.core._tool_specs import cached_mail_tool_spec
    from mail.core.actions import ActionCore, ActionFunction, ActionOverrideFunction
    from mail.core.agents import AgentCore, AgentFunction
    from mail.core.message import (
        MAILAddress,
        MAILBroadcast,
        MAILInterrupt,
        MAILInterswarmMessage,
        MAILMessage,
        MAILRequest,
        MAILResponse,
        create_admin_address,
        create_agent_address,
        create_system_address,
        create_user_address,
        format_agent_address,
        parse_agent_address,
    )
    from mail.core.runtime import MAILRuntime
    from mail.core.tasks import MAILTask
    from mail.core.tools import (
        MAIL_TOOL_NAMES,
        AgentToolCall,
        convert_call_to_mail_message,
        create_acknowledge_broadcast_tool,
        create_broadcast_tool,
        create_ignore_broadcast_tool,
        create_interrupt_tool,
        create_interswarm_broadcast_tool,
        create_mail_tools,
        create_request_tool,
        create_response_tool,
        create_supervisor_tools,
        create_swarm_discovery_tool,
        create_task_complete_tool,
        pydantic_model_to_tool,
    )

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
    "current_task_id": "_live",
    "report_usage": "_live",
    "model_call": "_live",
    "trace_headers": "_live",
    "traced_hop": "_live",
    "tracer_of": "_live",
    "current_turn": "_live",
    "DeltaKind": "_live",
    "Direction": "_remote",
    "Subject": "_system_messages",
    "HELP_SUMMARY": "_system_messages",
    "full_protocol_text": "_system_messages",
    "SystemMessages": "_system_messages",
    "Scheduler": "_scheduler",
    "Spawner": "_spawn",
    "restore": "_recorder",
    "stored_events": "_recorder",
    "cached_mail_tool_spec": "_tool_specs",
}

__all__ = [
    "ActionCore",
    "ActionFunction",
    "ActionOverrideFunction",
    "AgentCore",
    "AgentFunction",
    "AgentToolCall",
    "DeltaKind",
    "Direction",
    "HELP_SUMMARY",
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
    "Scheduler",
    "Spawner",
    "Subject",
    "SystemMessages",
    "cached_mail_tool_spec",
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
    "current_task_id",
    "emit_delta",
    "format_agent_address",
    "full_protocol_text",
    "parse_agent_address",
    "pydantic_model_to_tool",
    "report_usage",
    "model_call",
    "trace_headers",
    "traced_hop",
    "tracer_of",
    "current_turn",
    "restore",
    "stored_events",
]


# Hidden from type checkers, which see the TYPE_CHECKING imports above instead; a visible
# module ``__getattr__`` would make every misspelt ``mail.core.X`` type-check.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module 'mail.core' has no attribute {name!r}")
        value = getattr(importlib.import_module(f"mail.core.{module}"), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
