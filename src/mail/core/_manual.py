"""Manual mode: messages for agents wait in a buffer until the caller steps an agent.

With ``run_continuous(mode="manual")`` every message delivered to a local agent by anyone
but the system (the user's message, the agents' requests, responses and broadcasts) is
kept in the agent's buffer in its task instead of starting a turn; the runtime's own
notices (``::action_complete::``, errors, help) still run the agent at once. A
:func:`manual_step` hands an agent everything its buffer holds as one ``buffered``
request from the system, subject ``::manual_step::``, whose body joins the messages as
``<public_message>`` (broadcasts) and ``<private_message>`` (with ``<to>``) blocks, then
the caller's ``payload``. The turn is an ordinary turn of that agent (one at a time per
agent and task, tool calls processed as usual) with tool choice ``auto``; a plain-text
answer becomes a message of ``response_type`` to ``response_targets``, which is sent,
and so buffered at its recipients, and returned.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from mail.core.message import MAILMessage, build_mail_xml, get_recipients
from mail.errors import InvalidMessageError, TaskNotFoundError, TaskStateError

if TYPE_CHECKING:
    from mail.core._system_messages import SystemMessages
    from mail.core.tasks import MAILTask, TaskTable

__all__ = ["ManualStep", "ManualSteps", "ResponseType", "render_buffer"]

ResponseType = Literal["broadcast", "response", "request"]


@dataclass(slots=True, kw_only=True)
class ManualStep:
    """A manual step under way: how to route the agent's text, and its outcome."""

    response_targets: list[str]
    response_type: ResponseType
    outcome: asyncio.Future[MAILMessage | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    started: bool = False
    #: the message made from the agent's text answer
    sent: MAILMessage | None = None

    def settle(self, error: BaseException | None = None) -> None:
        """Resolve :attr:`outcome` (once) with :attr:`sent`, or with ``error``."""
        if self.outcome.done():
            return
        if error is None:
            self.outcome.set_result(self.sent)
        else:
            self.outcome.set_exception(error)


def _text(value: str) -> str:
    # escaped as in the <incoming_message> turns (mail.core.message.build_mail_xml)
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _block(message: MAILMessage) -> str:
    payload = message["message"]
    sender = _text(payload["sender"]["address"])
    recipients = [r["address"] for r in get_recipients(payload)]
    if message["msg_type"] == "broadcast" or "all" in recipients:
        return (
            f"<public_message>\n<from>{sender}</from>\n{_text(payload['body'])}\n</public_message>"
        )
    to = _text(", ".join(recipients))
    return (
        f"<private_message>\n<from>{sender}</from>\n<to>{to}</to>\n"
        f"{_text(payload['body'])}\n</private_message>"
    )


def render_buffer(messages: Sequence[MAILMessage], payload: str | None = None) -> str:
    """The body of a ``::manual_step::`` message: one block per buffered message, in the
    order they arrived, then ``payload`` (the caller's own words, unescaped)."""
    parts = [_block(m) for m in messages]
    if payload:
        parts.append(payload)
    return "\n\n".join(parts)


class Deliverer(Protocol):
    """What the steps need of the scheduler (``mail.core._scheduler.Scheduler``)."""

    manual_steps: dict[str, ManualStep]

    def deliver(
        self, task: MAILTask, agent: str, message: MAILMessage, xml: dict[str, str]
    ) -> None: ...


class ManualSteps:
    """The manual steps of one runtime (``MAILRuntime.manual``)."""

    def __init__(
        self,
        tasks: TaskTable,
        agents: Collection[str],
        scheduler: Deliverer,
        system: SystemMessages,
    ) -> None:
        self._tasks = tasks
        self._agents = agents
        self._scheduler = scheduler
        self._system = system

    async def step(
        self,
        task_id: str,
        target: str,
        response_targets: list[str] | None = None,
        response_type: ResponseType = "broadcast",
        payload: str | None = None,
    ) -> MAILMessage | None:
        """Give agent ``target`` the messages buffered for it in running task ``task_id``,
        then ``payload``, and wait for the end of its turn.

        Its text answer becomes a ``response_type`` message to ``response_targets``
        (default ``["all"]``), which is sent and returned; ``None`` when it answered with
        tool calls only. Raises :class:`TaskNotFoundError`, :class:`InvalidMessageError`
        (unknown agent or response type) and :class:`TaskStateError` (the task is not
        running, or its turn ends before the agent's turn begins: the step is then
        delivered when the task resumes).
        """
        task = self._tasks.get(task_id)
        if task is None:
            raise TaskNotFoundError(task_id)
        if target not in self._agents:
            raise InvalidMessageError(f"unknown agent {target!r}", field="target")
        if response_type not in ("broadcast", "response", "request"):
            raise InvalidMessageError(
                f"must be 'broadcast', 'response' or 'request', got {response_type!r}",
                field="response_type",
            )
        if not task.is_running:
            raise TaskStateError(f"task '{task_id}' is not running")
        step = ManualStep(
            response_targets=list(response_targets or ["all"]), response_type=response_type
        )
        buffered = task.manual_buffer.pop(target, [])
        body = render_buffer(buffered, payload)
        return await self._run(task, target, step, self._system.manual_step(task_id, target, body))

    async def _run(
        self, task: MAILTask, target: str, step: ManualStep, message: MAILMessage
    ) -> MAILMessage | None:
        scheduler = self._scheduler
        scheduler.manual_steps[message["id"]] = step
        turn = task.wait_turn()
        try:
            scheduler.deliver(task, target, message, build_mail_xml(message))
            both: set[asyncio.Future[Any]] = {step.outcome, turn}
            await asyncio.wait(both, return_when=asyncio.FIRST_COMPLETED)
            if not step.outcome.done() and not step.started:
                raise TaskStateError(
                    f"task '{task.task_id}' ended before agent {target} took its manual step"
                )
            return await step.outcome
        finally:
            turn.cancel()
            del scheduler.manual_steps[message["id"]]
