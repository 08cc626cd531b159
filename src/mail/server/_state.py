"""What the server holds while it runs: the swarm template, one swarm per caller, health."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mail.api import MAILSwarm, MAILSwarmTemplate
from mail.conversations.events import EventBus
from mail.core.budget import Budget
from mail.core.tasks import MAILTask, TaskState
from mail.db.store import CallerKey
from mail.errors import StorageError
from mail.net import InterswarmRouter, SessionSource, SwarmRegistry
from mail.server._budgets import Prices, ceiling
from mail.server._map_registry import AgentRegistry

if TYPE_CHECKING:
    from mail.config import MAILConfig
    from mail.conversations import ConversationService, StatusFollower
    from mail.conversations.interception import Interceptor
    from mail.db import RetentionJob, TaskStore
    from mail.server._cluster import Cluster
    from mail.server._metrics import Metrics
    from mail.server._task_service import TaskService
    from mail.server.auth import Authenticator, AuthGate, Caller
    from mail.telemetry import ServerTracing, Tracing

__all__ = ["CallerSwarms", "ServerState"]

logger = logging.getLogger("mail.server")


_Key = tuple[str, str]


@dataclass(slots=True)
class _Entry:
    swarm: MAILSwarm
    last_used: float
    #: requests holding the swarm (:meth:`CallerSwarms.hold`): it is not evicted meanwhile
    users: int = 0


def _runtime_role(caller: Caller) -> str:
    """The role of the caller's runtime (and store key): a peer swarm's ``agent`` key
    runs as ``swarm``."""
    return "swarm" if caller.role == "agent" else caller.role


def _expired(task: MAILTask, horizon: float) -> bool:
    """A finished (not paused) task that ended before ``horizon``: retention drops it anyway."""
    return (
        task.completed
        and task.state is not TaskState.WAITING_BREAKPOINT
        and task.finished_at is not None
        and task.finished_at < horizon
    )


class CallerSwarms:
    """One running :class:`MAILSwarm` per caller (role and id), created on first use.

    A caller sees only its own swarm, so only its own tasks. :meth:`evict_idle` shuts down
    the swarms idle for a while whose tasks nothing loses: with a task store, those with no
    running task (the store reloads the rest when the caller comes back); without one,
    those holding no task but finished ones past ``finished_task_ttl``.
    """

    def __init__(self, state: ServerState) -> None:
        self._state = state
        self._entries: dict[_Key, _Entry] = {}
        self._creating = asyncio.Lock()
        # swarms being shut down by evict_idle: a new swarm of the same caller waits for them
        self._closing: dict[_Key, asyncio.Task[None]] = {}
        self._sweep_waiters: list[asyncio.Future[int]] = []

    def __len__(self) -> int:
        return len(self._entries)

    def count(self, role: str) -> int:
        return sum(1 for r, _ in self._entries if r == role)

    def find(self, caller: Caller) -> MAILSwarm | None:
        return self.lookup(caller.role, caller.id)

    def lookup(self, role: str, caller_id: str) -> MAILSwarm | None:
        """The running swarm of the caller ``(role, id)``, if it has one."""
        entry = self._entries.get((role, caller_id))
        if entry is None:
            return None
        entry.last_used = time.monotonic()
        return entry.swarm

    def holding(self, task_id: str) -> list[MAILSwarm]:
        """The callers' swarms that hold a task with this id."""
        return [e.swarm for e in self._entries.values() if task_id in e.swarm.runtime.tasks]

    async def resolve(self, caller: Caller) -> MAILSwarm | None:
        """The caller's swarm for reading: its running one, or, when the store holds tasks
        of the caller, one built (and its tasks reloaded) now; else ``None``."""
        found = self.find(caller)
        store = self._state.store
        if found is not None or store is None:
            return found
        await self._settled((caller.role, caller.id))  # an evicted swarm's last writes
        key = CallerKey(swarm=self._state.template.name, role=_runtime_role(caller), id=caller.id)
        if not await store.load_tasks(key):
            return None  # nothing stored: reading does not build a runtime
        return await self.get(caller)

    async def get(self, caller: Caller) -> MAILSwarm:
        """The caller's swarm, built, reloaded from the store and started on first use.

        A caller with role ``agent`` is a peer swarm: its runtime's role is ``swarm``, so
        the tasks it starts here are run by ``swarm:<id>@<local swarm>``. Raises
        :class:`SwarmDefinitionError` when the template cannot be instantiated and
        :class:`StorageError` when the caller's stored tasks cannot be read.
        """
        return (await self._entry(caller)).swarm

    @asynccontextmanager
    async def hold(self, caller: Caller) -> AsyncIterator[MAILSwarm]:
        """The caller's swarm (as :meth:`get`), never evicted while the block runs."""
        entry = await self._entry(caller)
        entry.users += 1
        try:
            yield entry.swarm
        finally:
            entry.users -= 1
            entry.last_used = time.monotonic()

    async def _entry(self, caller: Caller) -> _Entry:
        key = (caller.role, caller.id)
        entry = self._entries.get(key)
        if entry is not None:
            entry.last_used = time.monotonic()
            return entry
        # a swarm of this caller still shutting down writes its tasks first
        await self._settled(key)
        async with self._creating:
            entry = self._entries.get(key)
            if entry is not None:
                entry.last_used = time.monotonic()
                return entry
            entry = _Entry(await self._build(caller), time.monotonic())
            self._entries[key] = entry
        logger.info("started a swarm runtime for %s:%s", caller.role, caller.id)
        return entry

    async def _settled(self, key: _Key) -> None:
        closing = self._closing.get(key)
        if closing is not None:
            await asyncio.shield(closing)

    async def _build(self, caller: Caller) -> MAILSwarm:
        state = self._state
        settings = state.config.server.settings
        role = _runtime_role(caller)
        swarm = state.template.instantiate(
            {"user_token": caller.api_key},
            user_id=caller.id,
            user_role=role,
            base_url=state.base_url,
            print_llm_streams=settings.print_llm_streams,
            router=state.router,
            max_finished_tasks=settings.max_finished_tasks,
            finished_task_ttl=settings.finished_task_ttl,
            store=state.store,
        )
        swarm.runtime.budgets.ceiling = state.budget_ceiling()
        swarm.runtime.budgets.pricer = state.prices
        key = CallerKey(swarm=state.template.name, role=role, id=caller.id)
        if state.metrics is not None:
            state.metrics.attach(swarm.runtime, key)
        if state.tracing is not None:
            state.tracing.attach(swarm.runtime)
        try:
            if state.interceptor is not None:
                await state.interceptor.attach(swarm.runtime, key)
                if state.map_status is not None:
                    state.map_status.attach(swarm.runtime, key)
            loaded = await state.tasks.attach(swarm.runtime, key)
        except BaseException:
            await swarm.runtime.shutdown(timeout=0.0)
            raise
        if loaded:
            logger.info("reloaded %d stored tasks for %s:%s", loaded, caller.role, caller.id)
        swarm.runtime.commit_timeout = state.config.database.commit_timeout
        swarm.runtime.start(
            max_steps=state.template.task_message_limit or settings.task_message_limit
        )
        return swarm

    def storage_error(self) -> str | None:
        """The first failed store write reported by a caller's runtime, if any."""
        for entry in self._entries.values():
            error = entry.swarm.runtime.storage_error
            if error is not None:
                return error
        return None

    def owned_tasks(self) -> int:
        """How many unfinished tasks (running or paused at a breakpoint) this process runs."""
        unfinished = (TaskState.RUNNING, TaskState.WAITING_BREAKPOINT)
        return sum(
            1
            for entry in self._entries.values()
            for task in entry.swarm.runtime.tasks
            if task.state in unfinished
        )

    def unsaved_tasks(self) -> int:
        """How many tasks, over every caller's runtime, wait to be stored."""
        return sum(entry.swarm.runtime.unsaved_tasks for entry in self._entries.values())

    def queued_messages(self) -> int:
        """How many messages, over every caller's runtime, wait to be routed."""
        return sum(entry.swarm.runtime.queued_messages for entry in self._entries.values())

    async def evict_idle(self, idle_seconds: float) -> int:
        """Shut down the swarms unused for ``idle_seconds`` that can go (see the class);
        return how many. A request arriving meanwhile gets a new swarm, built once the old
        one has finished writing its tasks."""
        now = time.monotonic()
        # chosen and removed with no await in between: a request sees the swarm or not at all
        idle = [
            key
            for key, entry in self._entries.items()
            if self._evictable(entry, now - idle_seconds, now)
        ]
        closing = []
        for key in idle:
            entry = self._entries.pop(key)
            task = asyncio.get_running_loop().create_task(
                self._close(key, entry.swarm), name=f"mail-evict:{key[0]}:{key[1]}"
            )
            self._closing[key] = task
            closing.append(task)
        if closing:
            # shielded: a cancelled sweep (server shutdown) lets the swarms finish writing
            await asyncio.shield(asyncio.gather(*closing))
        waiters, self._sweep_waiters = self._sweep_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(len(idle))
        return len(idle)

    def next_sweep(self) -> asyncio.Future[int]:
        """A future of the next :meth:`evict_idle`: how many swarms it shut down."""
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._sweep_waiters.append(waiter)
        return waiter

    def _evictable(self, entry: _Entry, idle_since: float, now: float) -> bool:
        if entry.users or entry.last_used >= idle_since:
            return False
        runtime = entry.swarm.runtime
        if self._state.store is not None:
            # the store keeps every task (paused ones too) and reloads them on the next call
            return runtime.storage_error is None and not any(t.is_running for t in runtime.tasks)
        horizon = now - self._state.config.server.settings.finished_task_ttl
        return all(_expired(t, horizon) for t in runtime.tasks)

    async def _close(self, key: _Key, swarm: MAILSwarm) -> None:
        try:
            await swarm.shutdown(timeout=5.0)
            logger.info("shut down the idle swarm runtime of %s:%s", *key)
        except Exception:
            logger.exception("shutting down the idle swarm runtime of %s:%s failed", *key)
        finally:
            if self._closing.get(key) is asyncio.current_task():
                del self._closing[key]

    async def shutdown(self, timeout: float = 10.0) -> None:
        entries, self._entries = list(self._entries.values()), {}
        closing = list(self._closing.values())
        await asyncio.gather(
            *(e.swarm.shutdown(timeout=timeout) for e in entries), *closing, return_exceptions=True
        )


@dataclass(slots=True, kw_only=True)
class ServerState:
    """Everything the routes reach through ``request.app.state.mail``."""

    config: MAILConfig
    template: MAILSwarmTemplate
    authenticator: Authenticator
    gate: AuthGate
    base_url: str
    started: float = field(default_factory=time.monotonic)
    health: str = "healthy"
    health_updated: datetime = field(default_factory=lambda: datetime.now(UTC))
    registry: SwarmRegistry
    router: InterswarmRouter
    session: SessionSource | None = None
    swarms: CallerSwarms = field(init=False)
    background: set[asyncio.Task[Any]] = field(default_factory=set)
    dependencies: dict[tuple[str, ...], Any] = field(default_factory=dict)
    #: where tasks are kept (``None`` with ``persist = false``); owned by the lifespan
    store: TaskStore | None = None
    #: this replica's cluster (``[server.cluster] redis_url``); ``None``: a single server
    cluster: Cluster | None = None
    #: what routes do with tasks: one server's, or the replicas' (set with the state,
    #: :func:`~mail.server._cluster_setup.task_service`)
    tasks: TaskService = field(init=False)
    #: MAP Mail's ``mail/*`` methods (``None`` until the lifespan opens the store)
    conversations: ConversationService | None = None
    #: records the turns of tasks bound to conversations (with :attr:`conversations`)
    interceptor: Interceptor | None = None
    #: makes conversations follow the state of their bound tasks (with :attr:`interceptor`)
    map_status: StatusFollower | None = None
    #: the ``mail.*`` events of ``map/subscribe`` subscriptions
    map_events: EventBus = field(default_factory=EventBus)
    #: the agents registered on this process's ``/map`` WebSockets
    map_agents: AgentRegistry = field(default_factory=AgentRegistry)
    #: ``GET /metrics``'s counters (``[server.metrics] enabled``), ``None``: off
    metrics: Metrics | None = None
    #: the traces' provider and exporter (``[server.telemetry]``, ``OTEL_*``), ``None``: off
    telemetry: ServerTracing | None = None
    #: the spans of every caller's tasks (with :attr:`telemetry`)
    tracing: Tracing | None = None
    #: the background prune job (``[database] prune_interval``), ``None``: no job
    retention: RetentionJob | None = None
    #: seconds of silence after which an event stream sends a ``ping`` (CONTRACT 2: 15)
    ping_interval: float = 15.0
    #: seconds a ``/map`` WebSocket has to authenticate before it is closed (1008)
    map_auth_deadline: float = 10.0
    #: requests a ``/map`` WebSocket may have pending at once (beyond: JSON-RPC 4001)
    map_max_pending: int = 32
    #: set when the server was told to stop: requests waiting for a task answer at once
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    #: the loop the app runs on (set by the lifespan), for signal handlers
    loop: asyncio.AbstractEventLoop | None = None
    #: templates replaced by ``POST /swarms/load``: their callers' swarms may still use
    #: their MCP sessions, closed with the server
    replaced: list[MAILSwarmTemplate] = field(default_factory=list)
    #: what model calls cost, for budgets' ``cost_usd`` (``[server.budget]``'s prices)
    prices: Prices = field(init=False)

    def __post_init__(self) -> None:
        self.swarms = CallerSwarms(self)
        budget = self.config.server.budget
        self.prices = Prices(budget.price_table(), litellm=budget.litellm_prices)

    def budget_ceiling(self) -> Budget | None:
        """The limits of the tasks of the swarm served now (see :func:`ceiling`)."""
        return ceiling(self.config.server.budget, self.template.budget)

    @property
    def uptime(self) -> float:
        return time.monotonic() - self.started

    async def storage_status(self) -> str | None:
        """``None`` without a store, else ``"ok"`` or what fails: a write under way for
        longer than ``commit_timeout``, a runtime's last failed write, a prune that
        failed since the last write that worked, or the store's own report (within
        :data:`~mail.db.store.HEALTH_TIMEOUT` seconds)."""
        store = self.store
        if store is None:
            return None
        retention = self.retention
        pruning = None
        # a failed prune shows until a write works again
        if retention is not None and retention.failed_at > store.written_at:
            pruning = retention.last_error
        return (
            self._stalled(store) or self.swarms.storage_error() or pruning or await store.health()
        )

    def _stalled(self, store: TaskStore) -> str | None:
        bound = self.config.database.commit_timeout
        waited = store.writing_for()
        if waited <= bound:
            return None
        return f"{store.name}: a write has been under way for {waited:.0f} s"

    def wait_bound(self) -> float:
        """How long a read waits for the tasks it shows to be stored: ``commit_timeout``,
        nothing while the store fails (the answer then says they are not stored)."""
        store = self.store
        if store is None or store.outage is not None or self._stalled(store):
            return 0.0
        return self.config.database.commit_timeout

    def check_store(self) -> None:
        """Refuse new work (a 503 with ``Retry-After``) while the store fails: its last
        write failed as a whole (a full disk, a database that does not answer) or one
        has been under way for longer than ``commit_timeout``. It is taken again once a
        write succeeds (the runtimes retry theirs every second)."""
        store = self.store
        if store is None:
            return
        failing = store.outage or self._stalled(store)
        if failing is not None:
            raise StorageError(
                f"the task store is failing ({failing}): no new task is taken until it works again",
                retry_after=self.config.database.commit_timeout,
            )

    def set_health(self, status: str) -> None:
        self.health = status
        self.health_updated = datetime.now(UTC)

    def begin_shutdown(self) -> None:
        """The server is stopping: requests waiting for a task answer now (503 or a final
        ``task_error`` event); the lifespan's shutdown then stores the tasks."""
        if not self.closing.is_set():
            logger.info("shutting down: answering the requests that wait for a task")
            self.closing.set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    async def close(self, *, save_registry: bool = True) -> None:
        tasks = list(self.background)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.map_events.close()
        await self.swarms.shutdown()
        await self.tasks.stopped()
        if self.interceptor is not None:
            await self.interceptor.close()
        if self.map_status is not None:
            await self.map_status.close()
        if self.metrics is not None:
            await self.metrics.close()
        if self.tracing is not None:
            self.tracing.close()  # the turns still running: their spans end here
        if self.telemetry is not None:
            await asyncio.to_thread(self.telemetry.shutdown)  # the spans still to export
        await self._close_resources(save_registry)

    async def _close_resources(self, save_registry: bool) -> None:
        """The MCP sessions, the store, then the registry (saved unless not
        ``save_registry``) and the connections; a failure is logged, the rest closes."""
        for template in (self.template, *self.replaced):
            try:
                await template.close_mcp()
            except Exception:
                logger.exception("closing the MCP servers of swarm %s failed", template.name)
        try:
            if self.store is not None:
                await self.store.close()
        except Exception:
            logger.exception("closing the task store failed")
        try:
            if save_registry:
                await self.registry.save()
        except StorageError as e:  # (a full disk, say): one line, and the stop goes on
            logger.error("the swarm registry could not be saved: %s", e)  # noqa: TRY400
        finally:
            await self.router.aclose()
            await self.registry.aclose()
            await self.authenticator.aclose()
            if self.session is not None:
                await self.session.aclose()
            if self.cluster is not None:
                await self.cluster.close()


async def every(seconds: float, job: Callable[[], Coroutine[Any, Any, Any]], name: str) -> None:
    """Run ``job`` every ``seconds`` until cancelled; a failing run is logged, not fatal."""
    while True:
        await asyncio.sleep(seconds)
        try:
            await job()
        except Exception:
            logger.exception("periodic job %s failed", name)
