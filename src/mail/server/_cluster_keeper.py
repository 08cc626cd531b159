"""Keeping a replica's leases (cluster mode): renewing them, claiming the expired ones
(fail-over, :mod:`mail.server._cluster_failover`), letting go of the tasks whose lease
another replica took, freeing the leases of finished tasks, and failing a turn run for
another replica's request once its timeout passed. :class:`LeaseKeeper` is run by
:class:`~mail.server._cluster_tasks.ClusterTasks`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from mail.core.events import EventName
from mail.core.tasks import MAILTask, TaskState
from mail.db.store import CallerKey
from mail.errors import MAILError, StorageError, TaskStateError
from mail.server._cluster import redis_errors
from mail.server._cluster_failover import take_over
from mail.server.auth import Caller

if TYPE_CHECKING:
    from mail.api import MAILSwarm
    from mail.server._cluster_leases import Claimed, Leases
    from mail.server._cluster_relay import Handler, Relay
    from mail.server._state import ServerState

__all__ = ["LeaseKeeper", "caller_of"]

logger = logging.getLogger("mail.server.cluster")


def caller_of(key: CallerKey, api_key: str = "") -> Caller:
    """The caller whose runtime is ``key`` (a peer swarm's runtime role is ``swarm``)."""
    role = "agent" if key.role == "swarm" else key.role
    return Caller(role=role, id=key.id, api_key=api_key)  # type: ignore[arg-type]


class LeaseKeeper:
    """This replica's leases, kept (see the module)."""

    def __init__(self, state: ServerState, leases: Leases, relay: Relay) -> None:
        self.state = state
        self.leases = leases
        self.relay = relay
        self.replica_id = leases.replica_id
        self._watchers: set[asyncio.Task[None]] = set()

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

    async def finished(self, key: CallerKey, task: MAILTask) -> None:
        """A task's turn ended in a final state, stored (and published, unless Redis
        failed): free its lease once nothing more of it is being written (see
        :meth:`_release`), in the background."""
        gen = self.leases.held.get((key, task.task_id))
        if gen is None:
            return
        job = asyncio.get_running_loop().create_task(
            self._release(key, task, gen), name=f"mail-release:{task.task_id}"
        )
        self._watchers.add(job)
        job.add_done_callback(self._watchers.discard)

    async def _release(self, key: CallerKey, task: MAILTask, gen: int) -> None:
        """Free the lease ``gen`` of finished ``task`` once what it still does is stored:
        a write under way when the lease goes would be refused as another replica's, and
        so would the events of its messages still being delivered (the notices telling
        peers it completed). A turn started since keeps its own lease (a new ``gen``).
        A lease the database does not let go of expires by itself (it is no longer
        renewed) and is claimed as any other."""
        swarm = self.state.swarms.find(caller_of(key))
        if swarm is not None:
            runtime = swarm.runtime
            while True:
                if runtime.router is not None:
                    await runtime.router.sent(task.task_id)
                await runtime.persisted(self.state.config.database.commit_timeout)
                if runtime.router is None or not runtime.router.sending(task.task_id):
                    break
        try:
            await self.leases.release(key, task.task_id, gen)
        except Exception as e:  # noqa: BLE001  # it expires by itself
            logger.warning("releasing the lease of task %s failed: %s", task.task_id, e)

    def lost(self, key: CallerKey, task_id: str) -> None:
        """A write of the task found its lease taken (the recorder's ``on_lost``): this
        replica stops running it, as when a renewal finds so."""
        self.leases.held.pop((key, task_id), None)
        job = asyncio.get_running_loop().create_task(
            self.let_go(key, task_id), name=f"mail-let-go:{task_id}"
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

    async def run(self, handle: Handler, status: Callable[[MAILError], int]) -> None:
        """Publish, serve handed-over requests (``handle``), renew and claim leases,
        until cancelled."""
        await self.leases.expire_own()  # an earlier process of this replica is gone
        async with asyncio.TaskGroup() as group:
            group.create_task(self.relay.publish_forever())
            group.create_task(self.relay.serve_inbox(handle, status))
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
            await self.let_go(key, task_id)

    async def claim(self) -> None:
        """Take over the tasks whose leases ran out (all at once: each waits on the store)."""
        claimed = await self.leases.claim_expired()
        await asyncio.gather(*(self._take_over(c) for c in claimed))

    async def let_go(self, key: CallerKey, task_id: str) -> None:
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
            await self.let_go(claimed.key, claimed.task_id)
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
