"""The one-paragraph help of each MAIL tool: the ``::help::`` broadcast and v1.3.6's
``*_HELP_STRING`` constants of :mod:`mail.core.tools` read it."""

from __future__ import annotations

__all__ = ["TOOL_HELP", "get_tool_help"]

TOOL_HELP: dict[str, str] = {
    "send_request": "send_request(target, subject, body): ask one agent to do something; "
    "it answers with send_response.",
    "send_response": "send_response(target, subject, body): answer a request you received.",
    "send_broadcast": "send_broadcast(subject, body, targets): tell several agents at once "
    "(['all'] for every agent); they may respond, acknowledge or ignore.",
    "send_interrupt": "send_interrupt(target, subject, body): a high-priority message that "
    "is delivered before queued requests.",
    "acknowledge_broadcast": "acknowledge_broadcast(note): note a broadcast without replying.",
    "ignore_broadcast": "ignore_broadcast(reason): drop a broadcast without replying.",
    "await_message": "await_message(reason): end your turn and wait for the next message; "
    "only valid while you wait for answers.",
    "task_complete": "task_complete(finish_message): end the task; finish_message is the "
    "full answer the user receives.",
}


def get_tool_help(tools: list[str]) -> str:
    """The help lines of ``tools`` (MAIL tool names), one per line, as ``::help::`` shows them."""
    return "\n".join(TOOL_HELP.get(name, f"{name}: no help available") for name in tools)
