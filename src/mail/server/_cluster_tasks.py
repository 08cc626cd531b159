"""Cluster mode's :class:`~mail.server._task_service.TaskService`: any replica answers any
request about a task (docs/scaling.md).

A task runs on one replica, the holder of its lease (:mod:`mail.server._cluster_leases`);
a replica's runtimes keep only the tasks it holds as current. For the routes:

* **starting a turn** (:meth:`ClusterTasks._claim`, under :meth:`Tasks.send
  <mail.server._tasks.Tasks.send>`): a new task takes its lease here; a follow-up or
  breakpoint answer takes the lease when it is free or expired (loading the task from the
  store, :func:`~mail.server._cluster_failover.take_over`) and runs here, or, when another
  replica holds it, is handed to that replica (:meth:`Relay.hand_over`) and followed from
  here;
* **reading** (:meth:`ClusterTasks.task`, :meth:`ClusterTasks.events`): the local task
  when this replica runs it, else the store's copy, then the live events of its stream;
* **cancelling** and **interswarm** messages: here or on the replica running the task.

:meth:`ClusterTasks.run` keeps the leases renewed, claims expired ones (fail-over),
publishes committed events and serves the requests handed to this replica
(:class:`~mail.server._cluster_keeper.LeaseKeeper`).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator, Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from mail.core import SystemMessages, restore
from mail.core.events import STREAM_ONLY_EVENTS, MAILEvent
from mail.core.tasks import MAILTask, TaskTable, TurnRequest
from mail.db.store import CallerKey
from mail.errors import MAILError, TaskNotFoundError, TaskStateError
from mail.server._cluster import Cluster
from mail.server._cluster_failover import checkpoint, take_over
from mail.server._cluster_keeper import LeaseKeeper, caller_of
from mail.server._cluster_leases import Leases
from mail.server._cluster_relay import Relay
from mail.server._follow import follow_local
from mail.server._interswarm_here import back_here, forward_here, local_contributors
from mail.server._sse import sse_object
from mail.server._task_service import Answer, RelayedError, Stream, Turn, TurnCutShortError
from mail.server._tasks import Tasks
from mail.server.auth import Caller

if TYPE_CHECKING:
    from mail.api import MAILSwarm
    from mail.core import Direction
    from mail.core.message import MAILInterswarmMessage, MAILMessage
    from mail.core.runtime import MAILRuntime
    from mail.server._state import ServerState

__all__ = ["ClusterTasks"]

logger = logging.getLogger("mail.server.cluster")


class ClusterTasks(Tasks):
    """This replica's tasks among the cluster's (see the module): the
    :class:`~mail.server._tasks.TaskService` of replicas."""

    #: a stream of a stopping replica just ends: the task goes on on another replica,
    #: where the client follows it with ``Last-Event-ID``
    final_on_stop = False

    def __init__(self, state: ServerState, cluster: Cluster) -> None:
        super().__init__(state)
        self.cluster = cluster
        self.replica_id = cluster.replica_id
        self.relay = Relay(cluster)
        self._system = SystemMessages(state.template.name)

    @cached_property
    def leases(self) -> Leases:
        """This replica's leases (made on first use, once the cluster's pool is open)."""
        cluster = self.cluster
        return Leases(
            cluster.pool, cluster.replica_id, cluster.lease_seconds, self.state.template.name
        )

    def key(self, caller: Caller) -> CallerKey:
        role = "swarm" if caller.role == "agent" else caller.role
        return CallerKey(swarm=self.state.template.name, role=role, id=caller.id)

    async def attach(self, runtime: MAILRuntime, key: CallerKey) -> int:
        """A new runtime of this replica: its streams show committed events only, and
        what it commits is published. It loads a task when it takes its lease, never at
        once (0 loaded)."""
        runtime.tasks.gated = True
        runtime.hand_over = True  # a replica that stops leaves its tasks to the others
        recorder = runtime.recorder
        if recorder is not None:
            recorder.on_commit = lambda done: self.relay.committed(key, done)
            # every write of a task is conditional on the lease this replica holds
            recorder.fence = lambda task_id: (
                self.replica_id,
                self.leases.held.get((key, task_id), -1),
            )
            recorder.on_lost = lambda task_id: self.keeper.lost(key, task_id)
        return 0

    def health(self) -> dict[str, Any]:
        return {"replica_id": self.replica_id, "owned_tasks": self.state.swarms.owned_tasks()}

    # --- reading -----------------------------------------------------------------------------

    def local(self, caller: Caller, task_id: str) -> tuple[MAILSwarm, MAILTask] | None:
        """The caller's task when this replica runs it (holds its lease)."""
        swarm = self.state.swarms.find(caller)
        task = swarm.get_task_by_id(task_id) if swarm is not None else None
        if swarm is None or task is None or not self.leases.holds(self.key(caller), task_id):
            return None
        return swarm, task

    @staticmethod
    def stale(swarm: MAILSwarm, task: MAILTask) -> bool:
        """Whether this replica's copy ``task`` no longer tells how the task ends: it
        stopped here (the lease was lost) or another copy runs here now. Its streams then
        end with no final event of their own."""
        return swarm.get_task_by_id(task.task_id) is not task

    async def load(self, key: CallerKey, task_id: str) -> MAILTask | None:
        """The task as the store has it (a copy: nothing it does is written)."""
        return (await self._load(key, [task_id])).get(task_id)

    async def _load(self, key: CallerKey, task_ids: list[str]) -> TaskTable:
        assert self.state.store is not None  # noqa: S101  # cluster mode needs PostgreSQL
        table = TaskTable()
        await restore(
            self.state.store,
            key,
            tasks=table,
            histories={},
            system=self._system,
            next_seq=itertools.count().__next__,
            only=task_ids,
        )
        return table

    async def task(self, caller: Caller, task_id: str) -> MAILTask:
        """The task: this replica's when it runs it, else the store's; raises
        :class:`TaskNotFoundError`."""
        found = self.local(caller, task_id)
        if found is not None:
            return found[1]
        kept = await self._kept(caller, task_id)
        if kept is not None:
            return kept
        task = await self.load(self.key(caller), task_id)
        if task is None:
            raise TaskNotFoundError(task_id)
        return task

    async def _kept(self, caller: Caller, task_id: str) -> MAILTask | None:
        """A finished task this replica ran and still keeps, when the store's record shows
        nobody changed it since (one read of its record instead of all its rows)."""
        assert self.state.store is not None  # noqa: S101
        swarm = self.state.swarms.find(caller)
        task = swarm.get_task_by_id(task_id) if swarm is not None else None
        if swarm is None or task is None or task.is_running:
            return None
        await swarm.runtime.persisted(self.state.config.database.commit_timeout)
        row = await self.state.store.load_task(self.key(caller), task_id)
        current = row is not None and row.state == task.state.value
        return task if current and row is not None and row.updated_at == task.updated_at else None

    async def tasks(self, caller: Caller) -> list[MAILTask]:
        """Every task of the caller: those this replica runs, the store's copy of others."""
        assert self.state.store is not None  # noqa: S101
        key = self.key(caller)
        swarm = self.state.swarms.find(caller)
        if swarm is not None:
            await swarm.runtime.persisted(self.state.config.database.commit_timeout)
        rows = await self.state.store.load_tasks(key)
        table = await self._load(key, [r.task_id for r in rows])
        mine = {t.task_id: t for t in swarm.runtime.tasks} if swarm is not None else {}
        return [
            mine[r.task_id] if r.task_id in mine and self.leases.holds(key, r.task_id) else t
            for r in rows
            if (t := table.get(r.task_id)) is not None
        ]

    def follow(
        self, caller: Caller, task_id: str, after: int, *, started: bool = False
    ) -> AsyncIterator[MAILEvent]:
        """The events of a task another replica runs (or nobody): stored, then live
        (``started``: of the turn a handed-over request started after ``after``)."""
        return self.relay.follow(
            self.key(caller),
            task_id,
            after,
            self.load,
            ping=self.state.ping_interval,
            started=started,
        )

    async def events(self, caller: Caller, task_id: str, after: int) -> AsyncIterator[MAILEvent]:
        found = self.local(caller, task_id)
        if found is None:
            await self.task(caller, task_id)  # 404 before the stream starts
            return self.follow(caller, task_id, after)
        swarm, task = found
        return follow_local(
            swarm, task, after, self.state.ping_interval, lambda: self.stale(swarm, task)
        )

    async def _elsewhere(self, caller: Caller, task_id: str, start: int, turn: Turn) -> Answer:
        """The answer of a turn another replica runs: its events from ``start`` as a
        stream, or its closing event's answer."""
        events = self.follow(caller, task_id, start, started=True)
        if turn.stream:
            return await self._stream(events, task_id, lambda: False)
        final: dict[str, Any] = {}
        async for event in events:
            if event.seq is None and event.payload is not None and "response" in event.payload:
                final = event.payload
        task = await self.task(caller, task_id) if turn.show_events else None
        return {
            "response": final.get("response", ""),
            "events": [sse_object(e) for e in task.log.all()] if task is not None else None,
            "task_id": task_id,
            "status": final.get("status", "completed"),
        }

    async def _lost(
        self, caller: Caller, task_id: str, start: int, turn: Turn, error: TaskStateError
    ) -> Answer:
        """This replica's copy lost its lease while it ran: the answer is the new owner's."""
        return await self._elsewhere(caller, task_id, start, turn)

    async def _stream(
        self, events: AsyncIterator[MAILEvent], task_id: str, moved: Callable[[], bool]
    ) -> Stream:
        return await super()._stream(_until_moved(events, moved), task_id, moved)

    def _moved(self, swarm: MAILSwarm, task_id: str) -> Callable[[], bool]:
        task = swarm.get_task_by_id(task_id)
        if task is None:
            return lambda: False
        return lambda: self.stale(swarm, task)

    def _cut_short(self, task_id: str) -> TurnCutShortError:
        return TurnCutShortError(
            f"this replica is stopping; task '{task_id}' goes on on another replica: read "
            f"it with GET /task?task_id={task_id}, or follow it with GET "
            f"/tasks/{task_id}/events, from any replica"
        )

    async def _repeated(
        self, caller: Caller, swarm: MAILSwarm, turn: Turn
    ) -> tuple[MAILTask, bool] | None:
        found = self.local(caller, turn.task_id)
        if found is not None:
            return self._if_repeats(found[1], True, turn)
        return self._if_repeats(await self.load(self.key(caller), turn.task_id), False, turn)

    # --- acting --------------------------------------------------------------------------------

    async def acquire(self, caller: Caller, swarm: MAILSwarm, task_id: str) -> str | None:
        """Make this replica the one running an existing task: ``None`` once it is (the
        task loaded and current in ``swarm``), else the replica that holds it."""
        key = self.key(caller)
        taken = await self.leases.take(key, task_id)
        if isinstance(taken, str):
            return taken
        if taken.held and swarm.get_task_by_id(task_id) is not None:
            return None
        outcome = await take_over(
            swarm.runtime, task_id, taken.checkpoint, by=self.replica_id, was=taken.was or "?"
        )
        if outcome == "missing":
            await self.leases.release(key, task_id, taken.gen)
            raise TaskNotFoundError(task_id)
        return None

    async def _claim(
        self, caller: Caller, swarm: MAILSwarm, message: MAILMessage, turn: Turn
    ) -> Answer | None:
        """Before ``message`` is submitted: take the task's lease here (``None``: go on
        here), or hand the turn to the replica running the task and follow it there."""
        assert self.state.store is not None  # noqa: S101
        key = self.key(caller)
        task_id = turn.task_id
        resume_from = turn.resume_from
        if resume_from is None:
            exists = TaskStateError(
                f"task '{task_id}' already exists; to continue it, send resume_from='user_response'"
            )
            if await self.state.store.load_task(key, task_id) is not None:
                raise exists
            point = checkpoint(swarm.runtime, message, resume_from)
            if isinstance(await self.leases.take(key, task_id, point), str):
                raise exists
            return None
        owner = await self._take_turn(caller, swarm, message, resume_from)
        if owner is None:
            return None
        handed = {**turn.as_json(), "role": caller.role, "id": caller.id, "api_key": caller.api_key}
        answer = await self.relay.hand_over(owner, "message", handed)
        return await self._elsewhere(caller, task_id, int(answer["start"]), turn)

    async def _take_turn(
        self, caller: Caller, swarm: MAILSwarm, message: MAILMessage, resume_from: str | None
    ) -> str | None:
        """Make this replica run the turn ``message`` starts in an existing task: ``None``
        once its lease records where the turn starts, else the replica that holds it."""
        task_id = message["message"]["task_id"]
        owner = await self.acquire(caller, swarm, task_id)
        if owner is None:
            point = checkpoint(swarm.runtime, message, resume_from)
            await self.leases.take(self.key(caller), task_id, point)
        return owner

    async def cancel(self, caller: Caller, task_id: str) -> None:
        """Cancel the task here or on the replica running it."""
        found = self.local(caller, task_id)
        if found is not None:
            swarm, _ = found
            await swarm.runtime.told(await swarm.runtime.cancel_task(task_id))
            return
        owner = await self.leases.owner(self.key(caller), task_id)
        if owner is None or owner == self.replica_id:
            task = await self.task(caller, task_id)
            raise TaskStateError(f"task '{task_id}' is already {task.state}")
        await self.relay.hand_over(
            owner, "cancel", {"role": caller.role, "id": caller.id, "task_id": task_id}
        )

    async def interswarm(
        self, caller: Caller, message: MAILInterswarmMessage, direction: Direction
    ) -> dict[str, Any]:
        """Run by the replica running the task: a forward in the calling peer's runtime,
        a back message in the task's local contributors'."""
        keys = (
            [self.key(caller)]
            if direction == "forward"
            else local_contributors(self.state, message)
        )
        return await self._interswarm(caller, message, direction, keys)

    async def _interswarm(
        self,
        caller: Caller,
        message: MAILInterswarmMessage,
        direction: Direction,
        keys: list[CallerKey],
    ) -> dict[str, Any]:
        """``/interswarm/forward`` or ``back`` from peer ``caller``, for the task of the
        runtimes ``keys``: run here, or by the replica running the task."""
        assert self.state.store is not None  # noqa: S101
        task_id = message["payload"]["task_id"]
        here = forward_here if direction == "forward" else back_here
        for key in keys:
            if self.leases.holds(key, task_id):
                return await here(self.state, caller, message)
            owner = await self.leases.owner(key, task_id)
            if owner is not None and owner != self.replica_id:
                handed = {
                    "role": caller.role,
                    "id": caller.id,
                    "api_key": caller.api_key,
                    "direction": direction,
                    "message": message,
                    "keys": [[k.role, k.id] for k in keys],
                }
                return await self.relay.hand_over(owner, "interswarm", handed)
        for key in keys:  # nobody runs it: this replica takes it
            if await self.state.store.load_task(key, task_id) is not None:
                logger.info(
                    "replica %s takes task %s of %s:%s for a peer's %s message: no replica "
                    "holds its lease",
                    self.replica_id,
                    task_id,
                    key.role,
                    key.id,
                    direction,
                )
                contributor = caller_of(key)
                async with self.state.swarms.hold(contributor) as swarm:
                    if await self.acquire(contributor, swarm, task_id) is None:
                        return await here(self.state, caller, message)
                return await self._interswarm(caller, message, direction, keys)  # it moved
        if direction == "forward" and keys:  # a new task here
            await self.leases.take(keys[0], task_id)
        return await here(self.state, caller, message)

    async def handle(self, kind: str, request: dict[str, Any]) -> dict[str, Any]:
        """Run a request another replica handed over (see :meth:`Relay.serve_inbox`)."""
        caller = Caller(role=request["role"], id=request["id"], api_key=request.get("api_key", ""))
        if kind == "cancel":
            await self.cancel(caller, request["task_id"])
            return {}
        if kind == "interswarm":
            name = self.state.template.name
            keys = [CallerKey(swarm=name, role=r, id=i) for r, i in request["keys"]]
            return await self._interswarm(caller, request["message"], request["direction"], keys)
        if kind != "message":
            raise RelayedError(400, f"unknown request kind {kind!r}")
        task_id = request["task_id"]
        async with self.state.swarms.hold(caller) as swarm:
            message = swarm._user_message(
                request["body"],
                request["subject"],
                request["msg_type"],
                request["entrypoint"],
                task_id,
            )
            owner = await self._take_turn(caller, swarm, message, request["resume_from"])
            if owner is not None:  # it moved meanwhile: the asking replica tries again
                raise RelayedError(503, f"task '{task_id}' moved to replica {owner}; try again")
            task = swarm.get_task_by_id(task_id)
            start = task.log.last_seq if task is not None else 0
            asked = TurnRequest.from_json(request.get("request"))
            if asked is not None:  # what opened the turn goes with it (retries, 409s)
                swarm.runtime.expect(task_id, asked)
            await swarm.submit_message_nowait(message, request["resume_from"], **request["kwargs"])
            self.keeper.watch_timeout(swarm, task_id, float(request["timeout"]))
        return {"start": start}

    # --- keeping leases, fail-over (:class:`~mail.server._cluster_keeper.LeaseKeeper`) ----

    @cached_property
    def keeper(self) -> LeaseKeeper:
        """Made on first use (:meth:`run`, at start-up), once the cluster's pool is open."""
        keeper = LeaseKeeper(self.state, self.leases, self.relay)
        self.relay.on_final = keeper.finished  # a finished task's lease is freed
        return keeper

    async def stopped(self) -> None:
        await self.keeper.stopped()

    async def run(self, status: Callable[[MAILError], int]) -> None:
        """Publish, serve handed-over requests, renew and claim leases, until cancelled."""
        await self.keeper.run(self.handle, status)


async def _until_moved(
    events: AsyncIterator[MAILEvent], moved: Callable[[], bool]
) -> AsyncIterator[MAILEvent]:
    """``events``, ending quietly when the task moved to another replica (this one lost
    its lease): the client follows it there with ``Last-Event-ID``. A final event of this
    replica's copy is left out too when the copy moved meanwhile (its turn ended just
    before the replica learned it lost the lease; the new owner runs the turn again)."""
    try:
        async for event in events:
            if event.seq is None and event.event not in STREAM_ONLY_EVENTS and moved():
                return
            yield event
    except TaskStateError:
        return
