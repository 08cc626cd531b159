"""Cluster mode: any replica answers any request about a task (docs/scaling.md).

A task runs on one replica, the holder of its lease (:mod:`mail.server._cluster_leases`);
a replica's runtimes keep only the tasks it holds as current. For the routes:

* **starting a turn** (:meth:`ClusterTasks.start_turn`): a new task takes its lease here;
  a follow-up or breakpoint answer takes the lease when it is free or expired (loading
  the task from the store, :func:`~mail.server._cluster_failover.take_over`) and runs here, or, when
  another replica holds it, is handed to that replica (:meth:`Relay.hand_over`) and
  followed from here;
* **reading** (:meth:`ClusterTasks.view`, :meth:`ClusterTasks.follow`): the local task
  when this replica runs it, else the store's copy, then the live events of its stream;
* **cancelling** (:meth:`ClusterTasks.cancel`): here or on the owner.

:meth:`ClusterTasks.run` keeps the leases renewed, claims expired ones (fail-over),
publishes committed events and serves the requests handed to this replica.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from mail.core._recorder import restore
from mail.core._system_messages import SystemMessages
from mail.core.events import STREAM_ONLY_EVENTS, EventName, MAILEvent
from mail.core.tasks import MAILTask, TaskState, TaskTable, TurnRequest
from mail.db.store import CallerKey
from mail.errors import MAILError, StorageError, TaskNotFoundError, TaskStateError
from mail.server._cluster import Cluster, redis_errors
from mail.server._cluster_failover import checkpoint, take_over
from mail.server._cluster_leases import Claimed, Leases
from mail.server._cluster_relay import Relay
from mail.server._follow import follow_local
from mail.server._interswarm_here import back_here, forward_here, local_contributors
from mail.server._sse import sse_object
from mail.server._task_service import Answer, RelayedError, Stream, Turn, TurnCutShortError
from mail.server._tasks import Tasks
from mail.server.auth import Caller

if TYPE_CHECKING:
    from mail.api import MAILSwarm
    from mail.core._remote import Direction
    from mail.core.message import MAILInterswarmMessage, MAILMessage
    from mail.core.runtime import MAILRuntime
    from mail.server._state import ServerState

__all__ = ["ClusterTasks"]

logger = logging.getLogger("mail.server.cluster")


def caller_of(key: CallerKey, api_key: str = "") -> Caller:
    """The caller whose runtime is ``key`` (a peer swarm's runtime role is ``swarm``)."""
    role = "agent" if key.role == "swarm" else key.role
    return Caller(role=role, id=key.id, api_key=api_key)  # type: ignore[arg-type]


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
        self.relay.on_final = self._finished
        self._system = SystemMessages(state.template.name)
        self._watchers: set[asyncio.Task[None]] = set()

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
            recorder.on_lost = lambda task_id: self._lost_lease(key, task_id)
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

    def watch_timeout(self, swarm: MAILSwarm, task_id: str, timeout: float) -> None:
        """Fail the turn of a task run for another replica's request after ``timeout``."""
        task = swarm.get_task_by_id(task_id)
        if task is None:
            return

        async def watch() -> None:
            try:
                async with asyncio.timeout(timeout):
                    await task.wait_turn()
            except TimeoutError:
                task.log.emit(EventName.TASK_ERROR, f"timeout for task '{task_id}'")
                system = swarm.runtime.system
                swarm.runtime.scheduler.finish(task, TaskState.FAILED, system.task_timeout(task_id))

        job = asyncio.get_running_loop().create_task(watch(), name=f"mail-timeout:{task_id}")
        self._watchers.add(job)
        job.add_done_callback(self._watchers.discard)

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
            self.watch_timeout(swarm, task_id, float(request["timeout"]))
        return {"start": start}

    # --- keeping leases, fail-over ----------------------------------------------------------

    async def _finished(self, key: CallerKey, task: MAILTask) -> None:
        """A task's turn ended in a final state, stored (and published, unless Redis
        failed): free its lease. A lease the database does not let go of now expires
        by itself (it is no longer renewed) and is claimed as any other."""
        gen = self.leases.held.get((key, task.task_id))
        if gen is None:
            return
        try:
            await self.leases.release(key, task.task_id, gen)
        except Exception as e:  # noqa: BLE001  # it expires by itself
            logger.warning("releasing the lease of task %s failed: %s", task.task_id, e)

    def _lost_lease(self, key: CallerKey, task_id: str) -> None:
        """A write of the task found its lease taken (the recorder's ``on_lost``): this
        replica stops running it, as when a renewal finds so."""
        self.leases.held.pop((key, task_id), None)
        job = asyncio.get_running_loop().create_task(
            self._let_go(key, task_id), name=f"mail-let-go:{task_id}"
        )
        self._watchers.add(job)
        job.add_done_callback(self._watchers.discard)

    async def stopped(self) -> None:
        """The runtimes are shut down, their tasks stored: the leases this replica held
        expire now, so that the others take its running tasks over at once."""
        await self.relay.drain()
        try:
            await self.leases.expire_own()
        except Exception as e:  # noqa: BLE001  # they run out by themselves anyway
            logger.warning("replica %s: could not give its leases up: %s", self.replica_id, e)
        else:
            logger.info("replica %s gave its task leases up", self.replica_id)

    async def run(self, status: Callable[[MAILError], int]) -> None:
        """Publish, serve handed-over requests, renew and claim leases, until cancelled."""
        await self.leases.expire_own()  # an earlier process of this replica is gone
        async with asyncio.TaskGroup() as group:
            group.create_task(self.relay.publish_forever())
            group.create_task(self.relay.serve_inbox(self.handle, status))
            # apart: renewing never waits for take-overs (which load tasks from the store)
            group.create_task(self._every(self.renew, "renewing leases"))
            group.create_task(self._every(self.claim, "taking tasks over"))

    async def _every(self, job: Callable[[], Awaitable[None]], what: str) -> None:
        """Run ``job`` every third of the lease until cancelled; failures are logged."""
        while True:
            try:
                await job()
            except Exception as e:
                if isinstance(e, (StorageError, *redis_errors())):
                    logger.warning("replica %s: %s failed: %s", self.replica_id, what, e)
                else:
                    logger.exception("replica %s: %s failed", self.replica_id, what)
            await asyncio.sleep(self.leases.lease_seconds / 3)

    async def renew(self) -> None:
        """Renew this replica's leases; let go of the tasks whose lease it lost."""
        for key, task_id in await self.leases.renew():
            logger.error(
                "replica %s lost the lease of task %s (%s:%s) to another replica: it stops "
                "running it here",
                self.replica_id,
                task_id,
                key.role,
                key.id,
            )
            await self._let_go(key, task_id)

    async def claim(self) -> None:
        """Take over the tasks whose leases ran out (all at once: each waits on the store)."""
        claimed = await self.leases.claim_expired()
        await asyncio.gather(*(self._take_over(c) for c in claimed))

    async def _let_go(self, key: CallerKey, task_id: str) -> None:
        """Stop running a task another replica took over: its agent turns are cancelled,
        nothing more of it is written, and whoever waits on its turn here is told."""
        swarm = self.state.swarms.find(caller_of(key))
        task = swarm.runtime.tasks.remove(task_id) if swarm is not None else None
        if swarm is None or task is None:
            return
        runtime = swarm.runtime
        await runtime.scheduler.spawner.cancel_group(f"agent:{task_id}")
        runtime.forget(task)
        if runtime.recorder is not None:
            runtime.recorder.drop(task_id)
        # this copy is over (in memory only): its followers here stop, with no final event
        # of their own (the clients follow it where it runs now, with Last-Event-ID)
        task.state = TaskState.INTERRUPTED
        moved = TaskStateError(f"task '{task_id}' moved to another replica; follow it there")
        for future in (task.turn, *task.waiters):
            if future is not None and not future.done():
                future.set_exception(moved)
                future.exception()  # retrieved: whoever waits gets it, nobody else logs it
        task.log.abandon()

    async def _take_over(self, claimed: Claimed) -> None:
        caller = caller_of(claimed.key)
        try:
            swarm = await self.state.swarms.get(caller)
            # a copy this replica still runs lost its lease (its renewal has not told it
            # yet): it stops as any replica's would, and the store's copy carries on
            await self._let_go(claimed.key, claimed.task_id)
            outcome = await take_over(
                swarm.runtime,
                claimed.task_id,
                claimed.checkpoint,
                by=self.replica_id,
                was=claimed.was,
            )
        except Exception:
            logger.exception("taking over task %s failed", claimed.task_id)
            return
        logger.warning(
            "replica %s took over task %s of %s:%s from replica %s: %s",
            self.replica_id,
            claimed.task_id,
            claimed.key.role,
            claimed.key.id,
            claimed.was,
            outcome,
        )
        task = swarm.get_task_by_id(claimed.task_id)
        if outcome == "rerun":
            timeout = self.state.config.server.settings.task_timeout
            self.watch_timeout(swarm, claimed.task_id, timeout)
        elif outcome != "interrupted" and (  # an interrupted one is freed once stored
            task is None or (task.completed and task.state is not TaskState.WAITING_BREAKPOINT)
        ):
            if task is not None:  # its followers may wait for an end never published
                await self.relay.publish_end(claimed.key, task)
            await self.leases.release(claimed.key, claimed.task_id, claimed.gen)


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
