"""The scheduling loop: priority queue, routing, delivery and the end of turns.

One loop pops ``(priority, sequence, message)`` items and routes each message. Delivery to
an agent starts that agent's turn as an owned asyncio task, unless the agent is already
running a turn of the same task: then the message waits in that agent's per-task inbox,
so one agent's history is never written by two turns at once. Messages for a task that
is not running are stashed in the task when they are popped and pushed back, with their
original priority and sequence, when the task resumes. Nothing here costs more as the
queue or the number of past tasks grows, beyond the heap's O(log n). Messages queued by
turns are routed by a drain the event loop runs next; a submitted one (a new task, a
follow-up) is routed at once, in the submitting call.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from typing import TYPE_CHECKING

from mail.core._spawn import Spawner
from mail.core._system_messages import Subject
from mail.core.events import EventName
from mail.core.message import (
    MAILAddress,
    MAILMessage,
    build_mail_xml,
    get_recipients,
    message_priority,
    parse_agent_address,
)
from mail.core.tasks import MAILTask, QueueItem, TaskState
from mail.errors import InvalidMessageError

if TYPE_CHECKING:
    from mail.core.runtime import MAILRuntime

__all__ = ["Scheduler"]

logger = logging.getLogger("mail.runtime")

_UNSERIALIZED = frozenset({"broadcast", "broadcast_complete"})
# (priority, sequence, message, rendered xml) waiting for a busy agent
_Delivery = tuple[int, int, MAILMessage, dict[str, str]]
# a turn to run: (task, agent, inbox key, message, rendered xml)
_Job = tuple[MAILTask, str, str, MAILMessage, dict[str, str]]
# a worker running turns back to back gives the event loop a chance every so often
_YIELD_EVERY = 32
# enum members the hot paths use, looked up once (a class attribute of an enum goes
# through EnumType.__getattr__ on Python 3.11: ten times a global's cost)
_RUNNING = TaskState.RUNNING
_NEW_MESSAGE = EventName.NEW_MESSAGE
_ACTION_COMPLETE_BROADCAST = str(Subject.ACTION_COMPLETE_BROADCAST)


class Scheduler:
    """Owns the queue, the loop, routing and delivery of one runtime."""

    def __init__(self, runtime: MAILRuntime) -> None:
        self.rt = runtime
        self._heap: list[QueueItem] = []
        self._seq = itertools.count()
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._drain_scheduled = False
        self._claim_open = False
        self._claimed: _Job | None = None
        self._inboxes: dict[str, list[_Delivery]] = {}
        self.spawner = Spawner()

    # --- the queue -----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._heap)

    def put(self, message: MAILMessage) -> None:
        """Queue ``message`` at its protocol priority.

        :meth:`push` and :meth:`_schedule_drain`, inlined: every message a turn sends
        comes this way.
        """
        task = self.rt.tasks.get(message["message"]["task_id"])
        if task is not None:
            task.queued += 1
        heapq.heappush(self._heap, (message_priority(message), next(self._seq), message))
        if self._loop is not None and not self._drain_scheduled:
            self._drain_scheduled = True
            self._loop.call_soon(self._drain)

    def next_seq(self) -> int:
        """A fresh queue sequence number (ties of equal priority run in this order)."""
        return next(self._seq)

    def push(self, item: QueueItem, *, now: bool = False) -> None:
        """Queue ``item``; routed by the next drain, or (``now``, for a submission made
        outside the loop's own callbacks) by one run right here: the drain the loop would
        run next, without the trip through the loop."""
        task = self.rt.tasks.get(item[2]["message"]["task_id"])
        if task is not None:
            task.queued += 1
        heapq.heappush(self._heap, item)
        if now and self._loop is not None:
            self._drain()
        else:
            self._schedule_drain()

    def submit(self, message: MAILMessage) -> None:
        """Queue a submitted ``message`` and route it at once (see :meth:`push`)."""
        self.push((message_priority(message), next(self._seq), message), now=True)

    def _schedule_drain(self) -> None:
        # Draining is a plain callback on the event loop rather than a coroutine woken
        # by an event: one loop iteration per burst of messages, not two.
        if self._loop is not None and not self._drain_scheduled:
            self._drain_scheduled = True
            self._loop.call_soon(self._drain)

    def wake(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        """Route messages until the runtime stops."""
        self._loop = asyncio.get_running_loop()
        self._wake.clear()
        try:
            self._schedule_drain()
            await self._wake.wait()
        finally:
            self._loop = None

    def _drain(self) -> None:
        """Pop and route every queued message, in priority order."""
        self._drain_scheduled = False
        rt = self.rt
        heap = self._heap
        while heap and not rt.stopping and self._loop is not None:
            item = heapq.heappop(heap)
            try:
                self.dispatch(item)
            except Exception as e:  # one bad message must not stop the loop
                logger.exception("error routing message %s", item[2].get("id"))
                rt.runtime_log.emit(EventName.RUN_LOOP_ERROR, f"error in run loop: {e}")

    def _drain_claiming(self) -> _Job | None:
        """Drain, keeping the first turn for an idle agent for the calling worker to run."""
        self._claim_open = True
        try:
            self._drain()
        finally:
            self._claim_open = False
        job, self._claimed = self._claimed, None
        return job

    # --- dispatch ------------------------------------------------------------------------

    def dispatch(self, item: QueueItem) -> None:
        rt = self.rt
        message = item[2]
        task = rt.tasks.get(message["message"]["task_id"])
        if task is None:
            logger.warning("dropping message %s for unknown task", message["id"])
            return
        task.queued -= 1
        if task.state is not _RUNNING:
            if message["msg_type"] != "broadcast_complete":
                task.stash.append(item)
            return
        if message["msg_type"] == "broadcast_complete":
            self.finish(task, TaskState.COMPLETED, message)
            return
        payload = message["message"]
        # a step: a message not from the system and not a ::notice:: (a call saved per hop)
        if payload["sender"]["address_type"] != "system" and not payload["subject"].startswith(
            "::"
        ):
            task.steps += 1
            limit = task.max_steps if task.max_steps_set else rt.max_steps
            if limit is not None and task.steps > limit:
                message = rt.system.maximum_steps_reached(
                    task.task_id, rt.entrypoint, task.log.all()
                )
        self.route(task, message)

    def route(self, task: MAILTask, message: MAILMessage) -> None:
        """Deliver ``message`` to its local recipients, hand remote ones to the router."""
        rt = self.rt
        payload = message["message"]
        sender = payload["sender"]
        sender_name = sender["address"]
        from_local_agent = sender["address_type"] == "agent" and sender_name in rt.agents
        # single_recipient(payload), inlined
        single: MAILAddress | None = payload.get("recipient")  # type: ignore[assignment]
        if from_local_agent and message["msg_type"] not in _UNSERIALIZED:
            allowed = rt.agents[sender_name].comm_targets
            if single is not None and single["address"] in allowed:
                bad = []
            else:
                bad = [
                    r["address"]
                    for r in get_recipients(payload)
                    if r["address_type"] == "agent"
                    and r["address"] != "all"
                    and r["address"] not in allowed
                ]
            if bad:
                task.log.emit(
                    EventName.AGENT_ERROR,
                    f"agent attempted to contact disallowed recipients: {', '.join(bad)}",
                )
                self.put(rt.system.invalid_recipient(task.task_id, sender_name, bad, allowed))
                return
        if single is not None:  # _split_recipients' one-recipient case, inlined
            address = single["address"]
            if address in rt.agents and "@" not in address and address != "all":
                if address == sender_name and sender["address_type"] != "system":
                    return
                self.deliver(task, address, message, build_mail_xml(message))
                return
        local, remote, unknown = self._split_recipients(message, sender_name)
        for name in unknown:
            if not self._unknown_recipient(task, message, name, from_local_agent):
                return
        if remote:
            rt.send_remote(task, message, remote, from_local_agent)
        if local:
            xml = build_mail_xml(message)
            for agent in local:
                self.deliver(task, agent, message, xml)

    def _split_recipients(
        self, message: MAILMessage, sender_name: str
    ) -> tuple[list[str], list[str], list[str]]:
        # (route() takes the common case, one local agent, before coming here)
        rt = self.rt
        payload = message["message"]
        skip_self = payload["sender"]["address_type"] != "system"
        local: list[str] = []
        remote: list[str] = []
        unknown: list[str] = []
        for recipient in get_recipients(payload):
            address = recipient["address"]
            if address == "all":
                local.extend(rt.agents)
                continue
            try:
                name, swarm = parse_agent_address(address)
            except InvalidMessageError:
                unknown.append(address)
                continue
            if swarm is not None and swarm != rt.swarm_name:
                remote.append(address)
            elif name in rt.agents:
                local.append(name)
            else:
                unknown.append(name)
        seen: set[str] = {sender_name} if skip_self else set()
        local = [a for a in local if not (a in seen or seen.add(a))]  # type: ignore[func-returns-value]
        return local, remote, unknown

    def _unknown_recipient(
        self, task: MAILTask, message: MAILMessage, name: str, from_agent: bool
    ) -> bool:
        """Report an unknown recipient; False when the task had to end."""
        rt = self.rt
        sender = message["message"]["sender"]["address"]
        if name == rt.swarm_name:
            reason = (
                f"agent {name} is the swarm name; message from {sender} cannot be delivered to it"
            )
            task.log.emit(EventName.TASK_ERROR, reason)
            self.finish(task, TaskState.FAILED, rt.system.runtime_error(task.task_id, reason))
            return False
        if not from_agent:
            reason = f"agent {name} is unknown; message from {sender} cannot be delivered to it"
            task.log.emit(EventName.TASK_ERROR, reason)
            self.finish(task, TaskState.FAILED, rt.system.task_error(task.task_id, reason))
            return False
        if name == rt.user_id:
            task.log.emit(
                EventName.AGENT_ERROR, f"agent {sender} attempted to send a message to the user"
            )
            self.put(rt.system.improper_response_to_user(task.task_id, sender, name))
            return True
        reason = f"agent {name} is unknown; message from {sender} cannot be delivered to it"
        task.log.emit(EventName.AGENT_ERROR, reason)
        self.put(
            rt.system.agent_error(
                task.task_id,
                sender,
                f"Your message could not be delivered: agent '{name}' is not known to this swarm.",
            )
        )
        return True

    # --- delivery ------------------------------------------------------------------------

    def deliver(
        self, task: MAILTask, agent: str, message: MAILMessage, xml: dict[str, str]
    ) -> None:
        """Hand ``message`` to ``agent``: start its turn, or queue it behind the running one.

        A waiting message sits in the agent's per-task inbox, itself ordered by priority,
        so an interrupt still overtakes requests that wait for a busy agent.
        """
        if message["message"]["subject"] != _ACTION_COMPLETE_BROADCAST:
            task.log.emit(
                _NEW_MESSAGE,
                "sending message:\n" + xml["content"],
                {"full_message": message},
            )
        key = f"{task.task_id}::{agent}"
        inbox = self._inboxes.get(key)
        if inbox is not None:
            heapq.heappush(inbox, (message_priority(message), next(self._seq), message, xml))
            return
        self._inboxes[key] = []
        task.busy.add(agent)
        job = (task, agent, key, message, xml)
        if self._claim_open and self._claimed is None:
            self._claimed = job  # the worker that is draining runs this turn itself
            return
        self.spawner.spawn(self._agent_worker(job), name=f"agent:{task.task_id}:{agent}")

    def waiting_for(self, task_id: str, agent: str) -> int:
        """How many delivered messages wait for ``agent``'s current turn in the task."""
        inbox = self._inboxes.get(f"{task_id}::{agent}")
        return len(inbox) if inbox else 0

    def _release(self, job: _Job) -> None:
        task, agent, key = job[0], job[1], job[2]
        del self._inboxes[key]
        task.busy.discard(agent)

    async def _agent_worker(self, job: _Job) -> None:
        """Run turns: the agent's inbox first, then turns handed over by later drains.

        Handing a turn to the worker that produced its message, instead of starting a new
        asyncio task, saves a trip through the event loop per hop; agents still run
        concurrently, since a worker only takes over a turn for an agent that was idle.
        """
        chained = 0
        running: _Job | None = None
        claimed: _Job | None = job
        rt = self.rt
        turns = rt.turns
        try:
            while claimed is not None:
                running, claimed = claimed, None
                task, agent, key, message, xml = running
                inbox = self._inboxes[key]
                while True:
                    # one turn (inlined here: one coroutine less per turn)
                    if task.log.followers:
                        # someone streams this task: let them send what happened so far
                        # before this turn, rather than after the whole chain of turns
                        # this worker runs back to back
                        await asyncio.sleep(0)
                    await turns.run(task, agent, message, xml)
                    if rt.recorder is not None:
                        rt.recorder.turn_ended(task, agent)
                    if inbox and task.state is _RUNNING:
                        if self._heap and self._loop is not None:
                            self._drain()
                        _, _, message, xml = heapq.heappop(inbox)
                        continue
                    if inbox:  # the task stopped: park what waits until it resumes
                        task.stash.extend(item[:3] for item in inbox)
                        inbox.clear()
                    del self._inboxes[key]  # self._release(running), inlined
                    task.busy.discard(agent)
                    running = None
                    if self._heap and self._loop is not None:
                        claimed = self._drain_claiming()
                    break
                chained += 1
                if claimed is not None and chained % _YIELD_EVERY == 0:
                    await asyncio.sleep(0)  # let other work run between chained turns
        except BaseException:
            self._abandon(running, claimed)
            raise

    def _abandon(self, running: _Job | None, claimed: _Job | None) -> None:
        """Release a worker's turns when it stops on an exception or a cancellation."""
        if running is not None:
            self._release(running)
        if claimed is not None:  # never started: its message waits for a resume
            self._release(claimed)
            claimed[0].stash.append((message_priority(claimed[3]), next(self._seq), claimed[3]))

    # --- the end of a turn -------------------------------------------------------------

    def finish(self, task: MAILTask, state: TaskState, message: MAILMessage) -> bool:
        """End the task's current turn in ``state``; False when it had already ended."""
        if task.state is not _RUNNING:
            return False
        task.close_turn(state, message)
        task.changed()
        for evicted in self.rt.tasks.mark_finished(task):
            self.rt.forget(evicted)
        return True

    def resume(self, task: MAILTask) -> None:
        """Put the task's stashed messages back on the queue."""
        stash, task.stash = task.stash, []
        for item in stash:
            self.push(item)
