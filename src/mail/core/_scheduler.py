"""The scheduling loop: priority queue, routing, delivery and the ends of turns.

The queue is an ``asyncio.PriorityQueue`` of ``(priority, sequence, message)`` items. The
loop (:meth:`Scheduler.run`) awaits it and routes each message as it comes: messages from
other swarms, from the server. What a turn queued is routed when that turn ends, and a
submission at once (:meth:`Scheduler.route_queued` empties the queue without waiting), so
an agent's next turn never waits for the loop's next wake-up. Delivery to
an agent starts a worker for that agent in that task, an owned asyncio task that runs the
agent's turn; a message for an agent whose worker is running waits in the worker's inbox,
itself ordered by priority, so one agent's history is never written by two turns at once
and an interrupt still overtakes the requests that wait. Messages for a task that is not
running are stashed in the task and pushed back, with their original priority and
sequence, when the task resumes.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Literal, cast

from mail.core._manual import ManualStep
from mail.core._spawn import Spawner
from mail.core._system_messages import Subject, SystemMessages, is_system_subject
from mail.core.agents import AgentCore
from mail.core.events import EventLog, EventName
from mail.core.message import (
    MAILMessage,
    build_mail_xml,
    get_recipients,
    message_priority,
    parse_agent_address,
)
from mail.core.tasks import MAILTask, QueueItem, TaskState, TaskTable
from mail.errors import InvalidMessageError

__all__ = ["MAX_TOOL_ERROR_TURNS", "RemoteSend", "Scheduler", "TurnFunction"]

# Turns that end in these states store a task_error (by their cause), not a task_complete.
_NO_STORED_END = frozenset({TaskState.FAILED, TaskState.CANCELLED})
#: An agent whose tool calls fail this many turns in a row (each turn answering the error
#: of the last) fails its task: such a loop never ends by itself, and system messages do
#: not count toward the task's step limit.
MAX_TOOL_ERROR_TURNS = 10


def _is_tool_error(message: MAILMessage) -> bool:
    payload = message["message"]
    return (
        payload["sender"]["address_type"] == "system"
        and payload["subject"] == Subject.TOOL_CALL_ERROR
    )


logger = logging.getLogger("mail.runtime")

#: Runs one turn: ``(task, agent, message, message rendered for the agent)``.
TurnFunction = Callable[[MAILTask, str, MAILMessage, dict[str, str]], Awaitable[None]]
#: Hands a message to remote recipients: ``(task, message, targets, from_local_agent)``.
RemoteSend = Callable[[MAILTask, MAILMessage, list[str], bool], None]

# message types not restricted by the sender's comm_targets
_UNRESTRICTED = frozenset({"broadcast", "broadcast_complete"})
# (priority, sequence, message, rendered message) waiting for a busy agent
_Delivery = tuple[int, int, MAILMessage, dict[str, str]]
# put by stop() to wake the loop; it sorts before every message
_STOP: QueueItem = (-1, -1, cast("MAILMessage", {}))


class Scheduler:
    """Owns the queue, the loop, routing and delivery of one runtime.

    Args:
        tasks: the runtime's tasks.
        agents: the local agents by name.
        swarm_name: the local swarm.
        user_id: the caller the runtime serves (agents may not address it).
        entrypoint: the agent told to finish a task that reached its step limit.
        system: the builder of the runtime's own messages.
        log: where errors of the loop are reported (the runtime's event log).
        run_turn: runs one agent turn.
        send_remote: hands a message to its remote recipients.
    """

    def __init__(
        self,
        *,
        tasks: TaskTable,
        agents: Mapping[str, AgentCore],
        swarm_name: str,
        user_id: str,
        entrypoint: str,
        system: SystemMessages,
        log: EventLog,
        run_turn: TurnFunction,
        send_remote: RemoteSend,
    ) -> None:
        self.tasks = tasks
        self.agents = agents
        self.swarm_name = swarm_name
        self.user_id = user_id
        self.entrypoint = entrypoint
        self.system = system
        self.log = log
        self._run_turn = run_turn
        self._send_remote = send_remote
        #: the step limit of tasks that have none of their own
        self.max_steps: int | None = None
        #: ``manual``: messages to agents wait in their buffers for a manual step
        self.mode: Literal["continuous", "manual"] = "continuous"
        #: the manual steps under way, by the id of their ``::manual_step::`` message
        self.manual_steps: dict[str, ManualStep] = {}
        #: the agent workers
        self.spawner = Spawner()
        self._queue: asyncio.PriorityQueue[QueueItem] = asyncio.PriorityQueue()
        self._seq = itertools.count()
        self._loop: asyncio.AbstractEventLoop | None = None  # while run() runs
        self._stopped = asyncio.Event()
        self._took = asyncio.Event()  # pulsed each time run() takes an item off the queue
        self._stopping = False
        self._inboxes: dict[str, list[_Delivery]] = {}

    # --- the queue and the loop ------------------------------------------------------------

    def __len__(self) -> int:
        return self._queue.qsize()

    def is_idle(self) -> bool:
        """Nothing queued, no agent turn and no background work of the runtime running."""
        return self._queue.qsize() == 0 and not self._inboxes and len(self.spawner) == 0

    async def wait_idle(self) -> None:
        """Return once :meth:`is_idle`: wait for the running work, then for :meth:`run` to
        take what is queued (forever if it does not run)."""
        while not self.is_idle():
            if len(self.spawner):
                await self.spawner.wait_all()
            else:
                await self._took.wait()

    def next_seq(self) -> int:
        """A fresh queue sequence number (ties of equal priority run in this order)."""
        return next(self._seq)

    def put(self, message: MAILMessage) -> None:
        """Queue ``message`` at its protocol priority."""
        self.push((message_priority(message), self.next_seq(), message))

    def push(self, item: QueueItem) -> None:
        """Queue ``item`` (a stashed one keeps its priority and sequence); it is routed by
        the loop, or before by :meth:`route_queued`."""
        task = self.tasks.get(item[2]["message"]["task_id"])
        if task is not None:
            task.queued += 1
        self._queue.put_nowait(item)

    @property
    def running(self) -> bool:
        """True while :meth:`run` runs."""
        return self._loop is not None

    async def run(self) -> None:
        """Route the queued messages as they come, until :meth:`stop` (a second call while
        it runs waits for the same stop)."""
        if self._loop is not None:
            await self._stopped.wait()
            return
        self._loop = asyncio.get_running_loop()
        try:
            while not self._stopping:
                item = await self._queue.get()
                if item is not _STOP and not self._stopping:
                    self._route_item(item)
                elif item is not _STOP:
                    self._queue.put_nowait(item)  # kept for the next run
                self._took.set()
                self._took.clear()
        finally:
            self._loop = None
            self._stopping = False
            self._stopped.set()
            self._stopped.clear()

    def stop(self) -> None:
        """End :meth:`run` (or the next one, if none runs); the queue is kept."""
        self._stopping = True
        if self._loop is not None:
            self._queue.put_nowait(_STOP)

    def route_queued(self) -> None:
        """Route every queued message now, in priority order (while :meth:`run` runs)."""
        queue = self._queue
        while not queue.empty() and self._loop is not None and not self._stopping:
            item = queue.get_nowait()
            if item is not _STOP:
                self._route_item(item)

    def _route_item(self, item: QueueItem) -> None:
        try:
            self.dispatch(item)
        except Exception as e:  # one bad message must not stop the loop
            logger.exception("error routing message %s", item[2].get("id"))
            self.log.emit(EventName.RUN_LOOP_ERROR, f"error in run loop: {e}")

    # --- dispatch ----------------------------------------------------------------------------

    def dispatch(self, item: QueueItem) -> None:
        """Route a popped message, or stash it when its task is not running."""
        message = item[2]
        task = self.tasks.get(message["message"]["task_id"])
        if task is None:
            logger.warning("dropping message %s for unknown task", message["id"])
            return
        task.queued -= 1
        if task.state is not TaskState.RUNNING:
            if message["msg_type"] != "broadcast_complete":
                task.stash.append(item)
            return
        if message["msg_type"] == "broadcast_complete":
            self.finish(task, TaskState.COMPLETED, message)
            return
        payload = message["message"]
        # a step: a message not from the system and not a ::notice::
        if payload["sender"]["address_type"] != "system" and not is_system_subject(
            payload["subject"]
        ):
            task.steps += 1
            limit = task.max_steps if task.max_steps_set else self.max_steps
            if limit is not None and task.steps > limit:
                message = self.system.maximum_steps_reached(
                    task.task_id, self.entrypoint, task.log.all()
                )
        self.route(task, message)

    def route(self, task: MAILTask, message: MAILMessage) -> None:
        """Deliver ``message`` to its local recipients, hand remote ones to the router."""
        sender = message["message"]["sender"]["address"]
        from_local_agent = (
            message["message"]["sender"]["address_type"] == "agent" and sender in self.agents
        )
        if from_local_agent and not self._allowed(task, message):
            return
        local, remote, unknown = self._split_recipients(message)
        for name in unknown:
            if not self._unknown_recipient(task, message, name, from_local_agent):
                return
        if remote:
            self._send_remote(task, message, remote, from_local_agent)
        if local:
            xml = build_mail_xml(message)
            for agent in local:
                self.deliver(task, agent, message, xml)

    def _allowed(self, task: MAILTask, message: MAILMessage) -> bool:
        """Whether a local agent may send ``message`` (else it is told why not)."""
        if message["msg_type"] in _UNRESTRICTED:
            return True
        sender = message["message"]["sender"]["address"]
        allowed = self.agents[sender].comm_targets
        bad = [
            r["address"]
            for r in get_recipients(message["message"])
            if r["address_type"] == "agent"
            and r["address"] != "all"
            and r["address"] not in allowed
        ]
        if not bad:
            return True
        task.log.emit(
            EventName.AGENT_ERROR,
            f"agent attempted to contact disallowed recipients: {', '.join(bad)}",
        )
        self.put(self.system.invalid_recipient(task.task_id, sender, bad, allowed))
        return False

    def _split_recipients(self, message: MAILMessage) -> tuple[list[str], list[str], list[str]]:
        """``(local agents, remote addresses, unknown names)``; a sender other than the
        system is not among its own local recipients."""
        payload = message["message"]
        local: list[str] = []
        remote: list[str] = []
        unknown: list[str] = []
        for recipient in get_recipients(payload):
            address = recipient["address"]
            if address == "all":
                local.extend(self.agents)
                continue
            try:
                name, swarm = parse_agent_address(address)
            except InvalidMessageError:
                unknown.append(address)
                continue
            if swarm is not None and swarm != self.swarm_name:
                remote.append(address)
            elif name in self.agents:
                local.append(name)
            else:
                unknown.append(name)
        local = list(dict.fromkeys(local))
        sender = payload["sender"]
        if sender["address_type"] != "system":
            local = [a for a in local if a != sender["address"]]
        return local, remote, unknown

    def _unknown_recipient(
        self, task: MAILTask, message: MAILMessage, name: str, from_agent: bool
    ) -> bool:
        """Report an unknown recipient; False when the task had to end."""
        sender = message["message"]["sender"]["address"]
        if name == self.swarm_name:
            reason = (
                f"agent {name} is the swarm name; message from {sender} cannot be delivered to it"
            )
            task.log.emit(EventName.TASK_ERROR, reason)
            self.finish(task, TaskState.FAILED, self.system.runtime_error(task.task_id, reason))
            return False
        if not from_agent:
            reason = f"agent {name} is unknown; message from {sender} cannot be delivered to it"
            task.log.emit(EventName.TASK_ERROR, reason)
            self.finish(task, TaskState.FAILED, self.system.task_error(task.task_id, reason))
            return False
        if name == self.user_id:
            task.log.emit(
                EventName.AGENT_ERROR, f"agent {sender} attempted to send a message to the user"
            )
            self.put(self.system.improper_response_to_user(task.task_id, sender, name))
            return True
        reason = f"agent {name} is unknown; message from {sender} cannot be delivered to it"
        task.log.emit(EventName.AGENT_ERROR, reason)
        self.put(
            self.system.agent_error(
                task.task_id,
                sender,
                f"Your message could not be delivered: agent '{name}' is not known to this swarm.",
            )
        )
        return True

    # --- delivery ----------------------------------------------------------------------------

    def deliver(
        self, task: MAILTask, agent: str, message: MAILMessage, xml: dict[str, str]
    ) -> None:
        """Hand ``message`` to ``agent``: start its worker, or queue it in the worker's inbox
        (in manual mode, a message not from the system goes to the agent's buffer)."""
        if message["message"]["subject"] != Subject.ACTION_COMPLETE_BROADCAST:
            task.log.emit_message("sending message:\n", xml["content"], message)
        if self.mode == "manual" and message["message"]["sender"]["address_type"] != "system":
            task.manual_buffer.setdefault(agent, []).append(message)
            return
        key = f"{task.task_id}::{agent}"
        inbox = self._inboxes.get(key)
        if inbox is not None:
            heapq.heappush(inbox, (message_priority(message), self.next_seq(), message, xml))
            return
        self._inboxes[key] = []
        task.busy.add(agent)
        self.spawner.spawn(
            self._work(task, agent, message, xml), name=f"agent:{task.task_id}:{agent}"
        )

    def waiting_for(self, task_id: str, agent: str) -> int:
        """How many delivered messages wait for ``agent``'s current turn in the task."""
        return len(self._inboxes.get(f"{task_id}::{agent}", ()))

    async def _work(
        self, task: MAILTask, agent: str, message: MAILMessage, xml: dict[str, str]
    ) -> None:
        """Run ``agent``'s turns in ``task``: on ``message``, then on what its inbox receives
        meanwhile, while the task runs."""
        key = f"{task.task_id}::{agent}"
        inbox = self._inboxes[key]
        errors = 0  # turns in a row started by this agent's own tool errors
        try:
            while True:
                await self._run_turn(task, agent, message, xml)
                self.route_queued()  # what the turn sent, in priority order
                if not inbox or task.state is not TaskState.RUNNING:
                    break
                _, _, message, xml = heapq.heappop(inbox)
                errors = errors + 1 if _is_tool_error(message) else 0
                if errors > MAX_TOOL_ERROR_TURNS:
                    self._runaway(task, agent, message)
                    break
                # a turn need not suspend (a scripted agent): let the rest of the loop run
                await asyncio.sleep(0)
        finally:
            del self._inboxes[key]
            task.busy.discard(agent)
            # what still waits (the task stopped) is delivered again when it resumes
            task.stash.extend(item[:3] for item in inbox)

    def _runaway(self, task: MAILTask, agent: str, message: MAILMessage) -> None:
        reason = (
            f"agent {agent} made tool errors in {MAX_TOOL_ERROR_TURNS} turns in a row; "
            f"the last: {message['message']['body']}"
        )
        task.log.emit(EventName.TASK_ERROR, reason)
        self.finish(task, TaskState.FAILED, self.system.task_error(task.task_id, reason))

    # --- the start and the end of a turn -------------------------------------------------

    def finish(self, task: MAILTask, state: TaskState, message: MAILMessage) -> bool:
        """End the task's current turn in ``state``; False when it had already ended.

        A turn that did not fail stores one ``task_complete`` event, whoever waits for it
        (``submit_and_wait``, a stream, nobody): streams close with their own final event
        instead (:meth:`EventLog.follow` with ``stored_ends=False``)."""
        if task.state is not TaskState.RUNNING:
            return False
        if state not in _NO_STORED_END:
            task.log.emit(EventName.TASK_COMPLETE, f"response: '{message['message']['body']}'")
        task.close_turn(state, message)
        task.changed()
        self.tasks.mark_finished(task)
        return True

    def cancel(self, task: MAILTask, message: MAILMessage) -> bool:
        """End a running or paused task as cancelled: its pending breakpoints and the
        messages waiting for it are dropped. False when it had already ended."""
        if task.state not in {TaskState.RUNNING, TaskState.WAITING_BREAKPOINT}:
            return False
        task.pending_breakpoints.clear()
        task.stash.clear()
        task.close_turn(TaskState.CANCELLED, message)
        task.changed()
        self.tasks.mark_finished(task)
        return True

    def reopen(self, task: MAILTask) -> None:
        """Open a new turn of ``task`` (a follow-up); when it was not running, its step
        count starts again and its stashed messages go back on the queue."""
        was_running = task.is_running
        task.open_turn()
        if not was_running:
            task.steps = 0
            self.tasks.mark_active(task.task_id)
            self.resume(task)
        task.changed()

    def resume(self, task: MAILTask) -> None:
        """Put the task's stashed messages back on the queue."""
        stash, task.stash = task.stash, []
        for item in stash:
            self.push(item)
