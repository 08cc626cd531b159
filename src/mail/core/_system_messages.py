"""Every message the runtime itself sends, built in one place.

System messages come from ``{system, <swarm>}``; their subjects are ``::name::`` and their
bodies are prose meant for the agent that receives them.
"""

from __future__ import annotations

import json
from enum import StrEnum
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from mail.core._tool_help import get_tool_help as tool_help_lines
from mail.core.message import (
    MAILMessage,
    create_agent_address,
    create_system_address,
    make_broadcast,
    make_broadcast_complete,
    make_request,
    make_response,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from mail.core.agents import AgentCore
    from mail.core.events import MAILEvent

__all__ = [
    "CANCELLED_BODY",
    "HELP_SUMMARY",
    "Subject",
    "SystemMessages",
    "full_protocol_text",
    "is_system_subject",
]

#: The answer of a task its owner cancelled, and the notice its peers receive.
CANCELLED_BODY = "The task was cancelled by its owner."


class Subject(StrEnum):
    ACTION_COMPLETE = "::action_complete::"
    ACTION_ERROR = "::action_error::"
    ACTION_COMPLETE_BROADCAST = "::action_complete_broadcast::"
    TOOL_CALL_ERROR = "::tool_call_error::"
    INVALID_RECIPIENT = "::invalid_recipient::"
    AGENT_ERROR = "::agent_error::"
    IMPROPER_RESPONSE_TO_USER = "::improper_response_to_user::"
    HELP = "::help::"
    MAXIMUM_STEPS_REACHED = "::maximum_steps_reached::"
    BREAKPOINT_TOOL_CALL = "::breakpoint_tool_call::"
    RUNTIME_ERROR = "::runtime_error::"
    TASK_TIMEOUT = "::task_timeout::"
    TASK_ERROR = "::task_error::"
    TASK_COMPLETE = "::task_complete::"
    SHUTDOWN_REQUESTED = "::shutdown_requested::"
    MANUAL_STEP = "::manual_step::"
    BUDGET_WARNING = "::budget_warning::"


def is_system_subject(subject: str) -> bool:
    return subject.startswith("::")


_MAX_STEPS_BODY = (
    "The swarm has reached the maximum number of steps allowed. You must now call "
    "`task_complete` and provide a response to the best of your ability."
)


class SystemMessages:
    """Builds the runtime's messages for one swarm."""

    __slots__ = ("swarm",)

    def __init__(self, swarm: str) -> None:
        self.swarm = swarm

    def response(self, task_id: str, agent: str, subject: str, body: str) -> MAILMessage:
        """A system ``response`` to one agent."""
        return make_response(
            task_id=task_id,
            sender=create_system_address(self.swarm),
            recipient=create_agent_address(agent),
            subject=subject,
            body=body,
            sender_swarm=self.swarm,
            recipient_swarm=self.swarm,
        )

    def broadcast(
        self, task_id: str, agents: Iterable[str], subject: str, body: str
    ) -> MAILMessage:
        """A system ``broadcast`` to the given agents."""
        return make_broadcast(
            task_id=task_id,
            sender=create_system_address(self.swarm),
            recipients=[create_agent_address(a) for a in agents],
            subject=subject,
            body=body,
            sender_swarm=self.swarm,
            recipient_swarms=[self.swarm],
        )

    def complete(self, task_id: str, subject: str, body: str) -> MAILMessage:
        """A system ``broadcast_complete`` that ends the task's turn."""
        return make_broadcast_complete(
            task_id=task_id,
            sender=create_system_address(self.swarm),
            subject=subject,
            body=body,
            sender_swarm=self.swarm,
            recipient_swarms=[self.swarm],
        )

    # --- the named messages ------------------------------------------------------------

    def action_complete(self, task_id: str, agent: str) -> MAILMessage:
        return self.broadcast(
            task_id, [agent], Subject.ACTION_COMPLETE, "Action completed successfully"
        )

    def action_error(self, task_id: str, agent: str, errors: list[tuple[str, str]]) -> MAILMessage:
        body = "\n\n".join(f"Error: {tool}\n{explanation}" for tool, explanation in errors)
        return self.response(task_id, agent, Subject.ACTION_ERROR, body)

    def action_complete_broadcast(self, task_id: str, agent: str) -> MAILMessage:
        return self.broadcast(task_id, [agent], Subject.ACTION_COMPLETE_BROADCAST, "")

    def tool_call_error(self, task_id: str, agent: str, body: str) -> MAILMessage:
        return self.response(task_id, agent, Subject.TOOL_CALL_ERROR, body)

    def invalid_recipient(
        self, task_id: str, agent: str, targets: list[str], allowed: list[str]
    ) -> MAILMessage:
        body = (
            f"Your message could not be delivered: you may not contact {', '.join(targets)}. "
            f"Allowed recipients: {', '.join(allowed) or '(none)'}."
        )
        return self.response(task_id, agent, Subject.INVALID_RECIPIENT, body)

    def agent_error(self, task_id: str, agent: str, body: str) -> MAILMessage:
        return self.response(task_id, agent, Subject.AGENT_ERROR, body)

    def improper_response_to_user(self, task_id: str, agent: str, user: str) -> MAILMessage:
        body = (
            f"You addressed '{user}', which is the user of this task. Agents cannot message "
            "the user directly: call `task_complete` with your full answer instead."
        )
        return self.response(task_id, agent, Subject.IMPROPER_RESPONSE_TO_USER, body)

    def manual_step(self, task_id: str, agent: str, body: str) -> MAILMessage:
        """The ``buffered`` request that gives ``agent`` its manual step (body only)."""
        request = make_request(
            task_id=task_id,
            sender=create_system_address(self.swarm),
            recipient=create_agent_address(agent),
            subject=Subject.MANUAL_STEP,
            body=body,
            sender_swarm=self.swarm,
            recipient_swarm=self.swarm,
        )
        request["msg_type"] = "buffered"
        return request

    def help(self, task_id: str, agent: str, body: str) -> MAILMessage:
        return self.broadcast(task_id, [agent], Subject.HELP, body)

    def maximum_steps_reached(
        self, task_id: str, entrypoint: str, events: list[MAILEvent]
    ) -> MAILMessage:
        blocks = [
            f"--- Event {i} ---\n"
            + json.dumps({"event": e.event, "description": e.description}, indent=2)
            for i, e in enumerate(events, start=1)
        ]
        body = _MAX_STEPS_BODY + ("\n\n" + "\n\n".join(blocks) if blocks else "")
        return self.response(task_id, entrypoint, Subject.MAXIMUM_STEPS_REACHED, body)

    def budget_warning(self, task_id: str, entrypoint: str, body: str) -> MAILMessage:
        return self.response(task_id, entrypoint, Subject.BUDGET_WARNING, body)

    def breakpoint_tool_call(self, task_id: str, calls: list[dict[str, object]]) -> MAILMessage:
        body = json.dumps(calls, separators=(",", ":"))
        return self.complete(task_id, Subject.BREAKPOINT_TOOL_CALL, body)

    def runtime_error(self, task_id: str, body: str) -> MAILMessage:
        return self.complete(task_id, Subject.RUNTIME_ERROR, body)

    def task_timeout(self, task_id: str) -> MAILMessage:
        return self.complete(task_id, Subject.TASK_TIMEOUT, "The task timed out.")

    def task_error(self, task_id: str, error: str) -> MAILMessage:
        return self.complete(
            task_id, Subject.TASK_ERROR, f"The task encountered an error: {error}."
        )

    def cancelled(self, task_id: str) -> MAILMessage:
        return self.complete(task_id, Subject.TASK_ERROR, CANCELLED_BODY)

    def shutdown(self, task_id: str) -> MAILMessage:
        return self.complete(
            task_id,
            Subject.SHUTDOWN_REQUESTED,
            "The task was cancelled because the runtime shut down.",
        )


# --- help ------------------------------------------------------------------------------


HELP_SUMMARY = (
    "MAIL (Multi-Agent Interface Layer) lets agents of a swarm exchange messages. Every "
    "message you receive arrives as <incoming_message> XML with its sender, recipients, "
    "subject and body. You act only through tool calls: send_request / send_response to "
    "talk to other agents, actions to do work, and task_complete (if you may complete "
    "tasks) to give the user the final answer. Messages with subjects like ::name:: come "
    "from the runtime itself."
)


@lru_cache(maxsize=1)
def full_protocol_text() -> str:
    """The protocol specification (spec/SPEC.md), shipped with the package when installed."""
    try:
        return resources.files("mail").joinpath("spec/SPEC.md").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        pass
    repo_copy = Path(__file__).resolve().parents[3] / "spec" / "SPEC.md"
    try:
        return repo_copy.read_text(encoding="utf-8")
    except OSError:
        return "(the protocol specification is not available in this installation)"


def build_help(
    agent: str,
    core: AgentCore,
    swarm: str,
    *,
    get_summary: bool = True,
    get_identity: bool = False,
    get_tool_help: list[str] | None = None,
    get_full_protocol: bool = False,
) -> str:
    """The body of the ``::help::`` broadcast for ``agent``."""
    sections: list[str] = []
    if get_summary:
        sections.append(f"===== SUMMARY =====\n{HELP_SUMMARY}")
    if get_identity:
        sections.append(
            "===== YOUR IDENTITY =====\n"
            f"name: {agent}\nswarm: {swarm}\n"
            f"comm_targets: {', '.join(core.comm_targets) or '(none)'}\n"
            f"actions: {', '.join(core.actions) or '(none)'}\n"
            f"can_complete_tasks: {core.can_complete_tasks}\n"
            f"enable_interswarm: {core.enable_interswarm}"
        )
    if get_tool_help:
        sections.append("===== TOOL HELP =====\n" + tool_help_lines(get_tool_help))
    if get_full_protocol:
        sections.append(f"===== FULL MAIL PROTOCOL SPECIFICATION =====\n{full_protocol_text()}")
    return "\n\n".join(sections) or "(no help sections requested)"
