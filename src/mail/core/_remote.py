"""Messages from other swarms: checks, task ownership, deduplication, completion notices.

Public through :meth:`MAILRuntime.receive_interswarm
<mail.core.runtime.MAILRuntime.receive_interswarm>`. Per runtime it remembers:

* the ids of recent inbound messages (bounded), so a delivery the sender retried after a
  lost answer is queued once;
* per task, the swarm that forwarded the task here (its *upstream*), and per remote swarm
  the agent we last dealt with there, which is whom a completion notice addresses;
* the requests local agents sent to remote swarms that await a reply, each with its
  deadline: a reply from that swarm to that agent settles the oldest; a deadline that
  passes, or the peer's loss (:meth:`RemoteLedger.swarm_lost`), tells the agent it will get
  no reply, so its task goes on or fails as the agent decides.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal, cast

from mail.core._scheduler import Scheduler
from mail.core._system_messages import Subject, SystemMessages
from mail.core.agents import AgentCore
from mail.core.events import EventName
from mail.core.message import (
    MAILAddress,
    MAILInterswarmMessage,
    MAILMessage,
    MAILPayload,
    create_agent_address,
    get_recipients,
    parse_agent_address,
    parse_task_contributor,
)
from mail.core.tasks import MAILTask, TaskState, TaskTable
from mail.errors import InvalidMessageError, TaskNotFoundError, TaskStateError

__all__ = ["Direction", "RemoteLedger", "ReplyWait"]

Direction = Literal["forward", "back"]
#: Opens a task here: ``(task_id, owner, contributors)``; refused while shutting down.
TaskOpener = Callable[[str, str, list[str]], MAILTask]
#: Gives a task forwarded here its budget: ``(task, the message's metadata)``.
CarriedBudget = Callable[[MAILTask, Mapping[str, object] | None], None]
#: Tells remote swarms that a task completed: ``(task, agent, answer, swarms)``.
NoticeToSwarms = Callable[[MAILTask, str, str, Collection[str]], None]

#: How many inbound message ids a runtime remembers for deduplication.
SEEN_LIMIT = 4096


@dataclass(slots=True)
class _TaskLinks:
    """What a task knows about other swarms."""

    upstream: str | None = None
    # swarm -> the agent there that last messaged us (preferred) / that we last messaged
    heard_from: dict[str, str] = field(default_factory=dict)
    spoke_to: dict[str, str] = field(default_factory=dict)


class ReplyWait:
    """One request to a remote swarm awaiting its reply (see :meth:`RemoteLedger.await_reply`)."""

    __slots__ = ("is_delivered", "key", "ledger", "timer")

    def __init__(self, ledger: RemoteLedger, key: tuple[str, str, str]) -> None:
        self.ledger = ledger
        self.key = key  # (task id, swarm, local agent)
        self.is_delivered = False
        self.timer: asyncio.TimerHandle

    def delivered(self) -> None:
        """The peer accepted the request: from now on its loss fails the wait."""
        self.is_delivered = True

    def cancel(self) -> None:
        """The request was not sent: wait for no reply."""
        self.ledger._drop(self)  # the ledger's own helper


def _swarm_of(contributor: str) -> str | None:
    try:
        return parse_task_contributor(contributor)[2]
    except InvalidMessageError:
        return None


class RemoteLedger:
    """Inbound interswarm handling and cross-swarm bookkeeping for one runtime.

    Args:
        swarm_name: the local swarm.
        agents: the local agents (by name), whose ``comm_targets`` say whom they may answer.
        user_id: the caller the runtime serves (a reply to it ends the task's turn).
        owner: the runtime's caller as a task contributor (``role:id@swarm``).
        entrypoint: the agent that speaks for the swarm when a notice names no agent.
        tasks: the runtime's tasks.
        scheduler: where inbound messages go, and where turns end.
        system: the builder of the runtime's own messages.
        open_task: opens a task forwarded here.
        notify_completion: tells other swarms that a task completed.
        carried_budget: gives a task forwarded here the budget its message's ``metadata``
            carries (lowering the swarm's own).
    """

    def __init__(
        self,
        *,
        swarm_name: str,
        agents: Mapping[str, AgentCore],
        user_id: str,
        owner: str,
        entrypoint: str,
        tasks: TaskTable,
        scheduler: Scheduler,
        system: SystemMessages,
        open_task: TaskOpener,
        notify_completion: NoticeToSwarms,
        carried_budget: CarriedBudget | None = None,
        seen_limit: int = SEEN_LIMIT,
    ) -> None:
        self.swarm_name = swarm_name
        self.agents = agents
        self.user_id = user_id
        self.owner = owner
        self.entrypoint = entrypoint
        self.tasks = tasks
        self.scheduler = scheduler
        self.system = system
        self.open_task = open_task
        self.notify_completion = notify_completion
        self.carried_budget = carried_budget
        self._seen: OrderedDict[str, str] = OrderedDict()
        self._seen_limit = seen_limit
        self._links: dict[str, _TaskLinks] = {}
        # (task id, swarm, local agent) -> one deadline timer per request awaiting a reply
        self._waits: dict[tuple[str, str, str], list[ReplyWait]] = {}

    # --- bookkeeping -----------------------------------------------------------------------

    def spoke_to(self, task_id: str, address: str) -> None:
        """Record that a local message reached ``agent@swarm``."""
        name, swarm = parse_agent_address(address)
        if swarm is not None:
            self._links.setdefault(task_id, _TaskLinks()).spoke_to[swarm] = name

    def involved(self, task_id: str) -> set[str]:
        """The swarms that took part in the task: reached by us, or heard from."""
        links = self._links.get(task_id)
        if links is None:
            return set()
        return set(links.heard_from) | set(links.spoke_to)

    def contact(self, task_id: str, swarm: str) -> str | None:
        """The agent of ``swarm`` that last messaged us in the task, else the one we messaged."""
        links = self._links.get(task_id)
        if links is None:
            return None
        return links.heard_from.get(swarm) or links.spoke_to.get(swarm)

    def upstream(self, task_id: str) -> str | None:
        links = self._links.get(task_id)
        return links.upstream if links is not None else None

    def forget(self, task_id: str) -> None:
        self._links.pop(task_id, None)
        for key in [k for k in self._waits if k[0] == task_id]:
            for wait in self._waits.pop(key):
                wait.timer.cancel()

    # --- requests awaiting a remote reply ----------------------------------------------------

    def await_reply(self, task_id: str, swarm: str, agent: str, deadline: float) -> ReplyWait:
        """A request of local ``agent`` is going to ``swarm``: expect a reply within
        ``deadline`` s. Call ``delivered()`` on the result once the peer accepted it (only
        then does the peer's loss fail it), or ``cancel()`` when it was not sent."""
        key = (task_id, swarm, agent)
        wait = ReplyWait(self, key)
        wait.timer = asyncio.get_running_loop().call_later(deadline, self._expired, wait, deadline)
        self._waits.setdefault(key, []).append(wait)
        return wait

    def swarm_lost(self, swarm: str, reason: str) -> None:
        """``swarm`` is gone (marked inactive): the replies awaited from it will not come."""
        for key in [k for k in self._waits if k[1] == swarm]:
            lost = [w for w in self._waits[key] if w.is_delivered]
            for wait in lost:
                self._drop(wait)
            if lost:
                self._no_reply(key, reason, len(lost))

    def _drop(self, wait: ReplyWait) -> bool:
        """Forget ``wait`` and cancel its timer; False when it was already gone."""
        waits = self._waits.get(wait.key, [])
        if wait not in waits:
            return False
        waits.remove(wait)
        wait.timer.cancel()
        if not waits:
            del self._waits[wait.key]
        return True

    def _replied(self, task_id: str, swarm: str, recipients: list[MAILAddress]) -> None:
        for recipient in recipients:
            waits = self._waits.get((task_id, swarm, parse_agent_address(recipient["address"])[0]))
            if waits:
                self._drop(waits[0])  # the oldest request counts as answered

    def _expired(self, wait: ReplyWait, deadline: float) -> None:
        if self._drop(wait):
            swarm = wait.key[1]
            self._no_reply(wait.key, f"swarm {swarm} did not reply within {deadline:g} s", 1)

    def _no_reply(self, key: tuple[str, str, str], reason: str, count: int) -> None:
        """Tell ``agent`` that ``count`` of its requests will get no reply."""
        task_id, swarm, agent = key
        task = self.tasks.get(task_id)
        if task is None or not task.is_running:
            return
        task.log.emit(
            EventName.INTERSWARM_MESSAGE_ERROR,
            f"no reply from swarm {swarm} to {agent}: {reason}",
        )
        task.outstanding[agent] = max(task.outstanding.get(agent, 0) - count, 0)
        body = (
            f"Your request to swarm {swarm} will get no reply: {reason}. "
            "Continue without it, or end the task."
        )
        self.scheduler.put(self.system.agent_error(task_id, agent, body))

    def delivery_failed(self, task: MAILTask, agent: str | None, reason: str) -> None:
        """A message for another swarm was not delivered: tell the log and the sending
        ``agent`` (a local one, while the task runs)."""
        task.log.emit(EventName.INTERSWARM_MESSAGE_ERROR, reason)
        if agent is not None and agent in self.agents and task.is_running:
            body = f"Your message was not delivered: {reason}"
            self.scheduler.put(self.system.agent_error(task.task_id, agent, body))

    def end_task(self, task_id: str, body: str, *, failed: bool = False) -> bool:
        """End the running turn of ``task_id`` with a remote answer (or error) ``body``;
        False when it was not running. Raises :class:`TaskNotFoundError`."""
        task = self.tasks.get(task_id)
        if task is None:
            raise TaskNotFoundError(task_id)
        if failed:
            if task.is_running:  # like every failed turn, it stores its end
                task.log.emit(EventName.TASK_ERROR, body)
            return self.scheduler.finish(
                task, TaskState.FAILED, self.system.task_error(task_id, body)
            )
        final = self.system.complete(task_id, Subject.TASK_COMPLETE, body)
        return self.scheduler.finish(task, TaskState.COMPLETED, final)

    def _remember(self, message_id: str, task_id: str) -> None:
        self._seen[message_id] = task_id
        if len(self._seen) > self._seen_limit:
            self._seen.popitem(last=False)

    # --- inbound ---------------------------------------------------------------------------

    def receive(self, message: MAILInterswarmMessage, direction: Direction) -> MAILTask:
        """Queue a validated interswarm message; see ``MAILRuntime.receive_interswarm``."""
        if message["target_swarm"] != self.swarm_name:
            raise InvalidMessageError(
                f"is {message['target_swarm']!r}, but this is swarm {self.swarm_name!r}",
                field="target_swarm",
            )
        payload = message["payload"]
        task_id = payload["task_id"]
        known = self._seen.get(message["message_id"])
        if known is not None and (task := self.tasks.get(known)) is not None:
            return task  # a retried delivery: the first one was queued
        source = message["source_swarm"]
        recipients, to_caller = self._local_recipients(payload)
        sender = self._sender(payload["sender"], source)
        notice = message["msg_type"] == "response" and payload["subject"] == Subject.TASK_COMPLETE
        if message["msg_type"] == "request":
            self._check_answerable(recipients, sender["address"])
        task = self.tasks.get(task_id)
        if task is None:
            if direction == "back" or notice:
                raise TaskNotFoundError(task_id)
            task = self._create(message)
        else:
            self._check_known(task, message)
        self._remember(message["message_id"], task_id)
        links = self._links.setdefault(task_id, _TaskLinks())
        links.heard_from[source] = parse_agent_address(sender["address"])[0]
        task.log.emit(
            EventName.INTERSWARM_MESSAGE_RECEIVED,
            f"received interswarm message from swarm {source}",
        )
        envelope = self._envelope(message, sender, recipients)
        if message["msg_type"] == "response":
            self._answered(task, recipients)
            self._replied(task_id, source, recipients)
        if notice:
            if recipients:
                self._completion_notice(task, source, envelope)
        elif to_caller and not recipients:
            # a reply addressed to this runtime's caller: it is the answer of the turn
            self.scheduler.finish(task, TaskState.COMPLETED, envelope)
        else:
            if not task.is_running and task.task_owner != self.owner and source == links.upstream:
                self.scheduler.reopen(task)  # our copy of a remote task: its owner needs us again
            self.scheduler.put(envelope)
        return task

    def _local_recipients(self, payload: MAILPayload) -> tuple[list[MAILAddress], bool]:
        """Recipients in this swarm (others are skipped), and whether the caller is one."""
        field = "payload.recipients" if "recipients" in payload else "payload.recipient"
        local: list[MAILAddress] = []
        to_caller = False
        for recipient in get_recipients(payload):
            name, swarm = parse_agent_address(recipient["address"])
            if swarm != self.swarm_name:
                continue  # unqualified names belong to the sender's swarm
            if name == "all" or name in self.agents:
                local.append(create_agent_address(name if name == "all" else f"{name}@{swarm}"))
            elif name == self.user_id:
                to_caller = True
            else:
                raise InvalidMessageError(
                    f"agent {name!r} is not known to swarm {self.swarm_name!r}", field=field
                )
        if not local and not to_caller:
            raise InvalidMessageError(
                f"names no agent of swarm {self.swarm_name!r} (write agent@{self.swarm_name})",
                field=field,
            )
        return local, to_caller

    def _check_answerable(self, recipients: list[MAILAddress], sender: str) -> None:
        """Refuse a request that a recipient could not answer: its reply would be refused
        here, and the asking agent would wait for it in vain."""
        for recipient in recipients:
            name = parse_agent_address(recipient["address"])[0]
            agent = self.agents.get(name)
            if agent is not None and sender not in agent.comm_targets:
                raise InvalidMessageError(
                    f"refused by swarm {self.swarm_name!r}: its agent {name!r} may not answer "
                    f"{sender} (not among its comm_targets)",
                    field="payload.recipient",
                )

    @staticmethod
    def _sender(sender: MAILAddress, source: str) -> MAILAddress:
        # A remote sender is always an agent here (never system or admin: no priority
        # jump), and always qualified, so local agents can answer it.
        name, swarm = parse_agent_address(sender["address"])
        return create_agent_address(f"{name}@{swarm or source}")

    def _create(self, message: MAILInterswarmMessage) -> MAILTask:
        contributors = list(message["task_contributors"])
        if self.owner not in contributors:
            contributors.append(self.owner)
        task_id = message["payload"]["task_id"]
        task = self.open_task(task_id, message["task_owner"], contributors)
        if self.carried_budget is not None:
            self.carried_budget(task, message.get("metadata"))
        self._links.setdefault(task_id, _TaskLinks()).upstream = message["source_swarm"]
        return task

    @staticmethod
    def _answered(task: MAILTask, recipients: list[MAILAddress]) -> None:
        # as a local send_response does: the recipient waits for one answer less
        for recipient in recipients:
            name = parse_agent_address(recipient["address"])[0]
            if task.outstanding.get(name):
                task.outstanding[name] -= 1

    def _check_known(self, task: MAILTask, message: MAILInterswarmMessage) -> None:
        """Only the task's owner, through a swarm that took part in it, may continue it."""
        task_id = task.task_id
        if task.task_owner != message["task_owner"]:
            raise TaskStateError(f"task '{task_id}' has another owner")
        source = message["source_swarm"]
        involved = (
            source in task.remote_swarms
            or source == self.upstream(task_id)
            or any(_swarm_of(c) == source for c in task.task_contributors)
        )
        if not involved:
            raise TaskNotFoundError(task_id)  # not for this peer to see
        merged = list(message["task_contributors"])
        merged += [c for c in task.task_contributors if c not in merged]
        task.task_contributors = merged

    def _envelope(
        self, message: MAILInterswarmMessage, sender: MAILAddress, recipients: list[MAILAddress]
    ) -> MAILMessage:
        payload = dict(message["payload"])
        payload["sender"] = sender
        if "recipients" in payload:
            payload["recipients"] = recipients
        elif recipients:
            payload["recipient"] = recipients[0]
        return {
            "id": message["message_id"],
            "timestamp": message["timestamp"],
            "message": cast(MAILPayload, payload),
            "msg_type": message["msg_type"],
        }

    def _completion_notice(self, task: MAILTask, source: str, envelope: MAILMessage) -> None:
        """The task completed in ``source``: close our copy if it came from there."""
        if not task.is_running:
            return
        if task.task_owner == self.owner or source != self.upstream(task.task_id):
            self.scheduler.put(envelope)  # a helper finished its part: tell the agent
            return
        payload = envelope["message"]
        recipients = get_recipients(payload)
        name = parse_agent_address(recipients[0]["address"])[0] if recipients else ""
        agent = name if name in self.agents else self.entrypoint
        body = payload["body"]
        others = self.involved(task.task_id) - {source}
        if others:
            self.notify_completion(task, agent, body, others)
        self.scheduler.finish(
            task,
            TaskState.COMPLETED,
            self.system.complete(task.task_id, Subject.TASK_COMPLETE, body),
        )
