"""``MAILSwarm`` (public through :mod:`mail.api`): a running swarm for one caller."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mail.api._actions import MAILAction
from mail.api._agents import MAILAgent, MAILAgentTemplate, describe_contacts, with_contacts
from mail.api._interswarm import OwnedFederation
from mail.api._messages import caller_message, user_message
from mail.api._topology import adjacency_matrix, rewired_targets
from mail.core.message import MAILInterswarmMessage, MAILMessage, validate_interswarm_message
from mail.errors import ConfigurationError, SwarmDefinitionError, TaskStateError
from mail.swarms_json import check_swarm, check_swarm_structure

if TYPE_CHECKING:
    # The runtime and its modules load with the first MAILSwarm: a server that loads a
    # template answers /health without them.
    from mail.api._template import MAILSwarmTemplate
    from mail.core._persist import TaskSink
    from mail.core._remote import Direction
    from mail.core.actions import ActionOverrideFunction
    from mail.core.events import MAILEvent
    from mail.core.runtime import MAILRuntime, RemoteRouter, ResumeFrom
    from mail.core.tasks import MAILTask

__all__ = ["MAILSwarm", "check_structure", "check_whole", "refresh_contacts"]

logger = logging.getLogger("mail.api")


def _action_names(
    agents: Sequence[MAILAgent | MAILAgentTemplate], actions: Sequence[MAILAction]
) -> list[str]:
    return [a.name for a in actions] + [x.name for a in agents for x in a.actions]


def check_structure(
    name: str,
    agents: Sequence[MAILAgent | MAILAgentTemplate],
    actions: Sequence[MAILAction],
    breakpoint_tools: Sequence[str],
    exclude_tools: Sequence[str],
) -> None:
    """What a definition says on its own (checked at load); see ``check_swarm_structure``."""
    check_swarm_structure(
        name=name,
        agents=[a.shape() for a in agents],
        action_names=_action_names(agents, actions),
        breakpoint_tools=breakpoint_tools,
        exclude_tools=exclude_tools,
    )


def check_whole(
    name: str,
    agents: Sequence[MAILAgent | MAILAgentTemplate],
    actions: Sequence[MAILAction],
    entrypoint: str,
    enable_interswarm: bool,
    breakpoint_tools: Sequence[str],
    exclude_tools: Sequence[str],
) -> None:
    """Everything, wiring included (checked when a swarm is instantiated)."""
    check_swarm(
        name=name,
        agents=[a.shape() for a in agents],
        action_names=_action_names(agents, actions),
        entrypoint=entrypoint,
        enable_interswarm=enable_interswarm,
        breakpoint_tools=breakpoint_tools,
        exclude_tools=exclude_tools,
    )


def refresh_contacts(agents: Sequence[MAILAgent], peers: Mapping[str, Any]) -> None:
    """Rebuild the contacts block of each agent function's ``system`` prompt (if it has one)."""
    for agent in agents:
        system = getattr(agent.function, "system", None)
        if isinstance(system, str):
            contacts = describe_contacts(agent.name, peers)
            setattr(agent.function, "system", with_contacts(system, contacts))  # noqa: B010  # duck-typed agent functions


class MAILSwarm:
    """A running swarm for one caller: agents, actions and a :class:`MAILRuntime`.

    Messages are processed by the runtime's loop, started on first use (or by
    :meth:`run_continuous`). With ``enable_interswarm`` and no ``router``, the swarm
    builds an :class:`~mail.net.InterswarmRouter` (over ``swarm_registry``, or over a
    new :class:`~mail.net.SwarmRegistry` at ``base_url`` persisted in ``registry_file``,
    looking tokens up in ``env``) and closes it in :meth:`shutdown`. Raises
    :class:`SwarmDefinitionError` when the parts do not fit together and
    :class:`ConfigurationError` when ``swarm_registry`` is not a ``SwarmRegistry``.
    """

    def __init__(  # noqa: PLR0917  # positional signature of the seeds
        self,
        name: str,
        version: str,
        agents: Sequence[MAILAgent],
        actions: Sequence[MAILAction],
        entrypoint: str,
        user_id: str = "default",
        user_role: str = "user",
        swarm_registry: object | None = None,
        enable_interswarm: bool = False,
        breakpoint_tools: Sequence[str] | None = None,
        exclude_tools: Sequence[str] | None = None,
        task_message_limit: int | None = None,
        description: str = "",
        keywords: Sequence[str] | None = None,
        enable_db_agent_histories: bool = False,
        print_llm_streams: bool = True,
        *,
        router: RemoteRouter | None = None,
        base_url: str = "http://localhost:8000",
        registry_file: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        max_finished_tasks: int = 1000,
        finished_task_ttl: float = 3600.0,
        store: TaskSink | None = None,
    ) -> None:
        check_whole(
            name,
            agents,
            actions,
            entrypoint,
            enable_interswarm,
            breakpoint_tools or (),
            exclude_tools or (),
        )
        self.name = name
        self.version = version
        self.agents = list(agents)
        self.actions = list(actions)
        self.entrypoint = entrypoint
        self.user_id = user_id
        self.user_role = user_role
        self.enable_interswarm = enable_interswarm
        self.breakpoint_tools = list(breakpoint_tools or ())
        self.exclude_tools = list(exclude_tools or ())
        self.task_message_limit = task_message_limit
        self.description = description
        self.keywords = list(keywords or ())
        self.enable_db_agent_histories = enable_db_agent_histories
        for agent in self.agents:
            if hasattr(agent.function, "print_llm_streams"):
                agent.function.print_llm_streams = print_llm_streams
        self._federation: OwnedFederation | None = None
        if enable_interswarm and router is None:
            self._federation = OwnedFederation.build(
                swarm=name,
                base_url=base_url,
                registry_file=registry_file,
                registry=swarm_registry,
                description=description,
                keywords=self.keywords,
                env=env,
            )
            router, swarm_registry = self._federation.router, self._federation.registry
        self.swarm_registry = swarm_registry
        self._router = router
        self.runtime = self._build_runtime(
            print_llm_streams,
            router=router,
            max_finished_tasks=max_finished_tasks,
            finished_task_ttl=finished_task_ttl,
            store=store,
        )

    def _build_runtime(
        self,
        print_llm_streams: bool,
        *,
        router: RemoteRouter | None,
        max_finished_tasks: int,
        finished_task_ttl: float,
        store: TaskSink | None,
    ) -> MAILRuntime:
        from mail.core.runtime import MAILRuntime  # noqa: PLC0415  # see the imports above

        all_actions = {a.name: a for a in self.actions} | {
            x.name: x for a in self.agents for x in a.actions
        }
        return MAILRuntime(
            {a.name: a.to_core() for a in self.agents},
            {n: a.to_core() for n, a in all_actions.items()},
            user_id=self.user_id,
            user_role=self.user_role,
            swarm_name=self.name,
            entrypoint=self.entrypoint,
            swarm_registry=self.swarm_registry,
            enable_interswarm=self.enable_interswarm,
            breakpoint_tools=self.breakpoint_tools,
            exclude_tools=self.exclude_tools,
            enable_db_agent_histories=self.enable_db_agent_histories,
            print_llm_streams=print_llm_streams,
            router=router,
            max_finished_tasks=max_finished_tasks,
            finished_task_ttl=finished_task_ttl,
            store=store,
        )

    def __repr__(self) -> str:
        return f"MAILSwarm(name={self.name!r}, user={self.user_role}:{self.user_id})"

    # --- topology ------------------------------------------------------------------------

    @property
    def agent_names(self) -> list[str]:
        return [a.name for a in self.agents]

    @property
    def supervisors(self) -> list[MAILAgent]:
        return [a for a in self.agents if a.can_complete_tasks]

    @property
    def adjacency_matrix(self) -> list[list[int]]:
        return adjacency_matrix(self.agent_names, [a.comm_targets for a in self.agents])

    def update_from_adjacency_matrix(self, adj: Sequence[Sequence[int]]) -> None:
        """Rewire the running agents' local comm targets from a square 0/1 matrix.

        Row = sender, column = target, in :attr:`agent_names` order; remote targets
        (``agent@swarm``) are kept. The runtime's routing checks, the agents' offered
        tools and the contacts block of their prompts follow. Nothing changes when it
        raises: :class:`TaskStateError` while a task is running (its agents would see
        the topology change mid-conversation), :class:`SwarmDefinitionError` for a matrix
        that is not n by n of 0 and 1, or that leaves an agent without targets (only an
        entrypoint that completes tasks may have none).
        """
        running = [t.task_id for t in self.runtime.tasks if t.is_running]
        if running:
            raise TaskStateError(
                f"cannot rewire swarm {self.name} while tasks run: {', '.join(running)}"
            )
        targets = rewired_targets(
            self.name, self.agent_names, [a.comm_targets for a in self.agents], adj
        )
        for agent, new in zip(self.agents, targets, strict=True):
            if not new and not (agent.can_complete_tasks and agent.enable_entrypoint):
                raise SwarmDefinitionError(
                    "would have no comm targets (only an entrypoint that completes tasks may)",
                    swarm=self.name,
                    agent=agent.name,
                    field="comm_targets",
                )
        for agent, new in zip(self.agents, targets, strict=True):
            agent.comm_targets = list(new)
            self.runtime.agents[agent.name].comm_targets = list(new)
            if hasattr(agent.function, "comm_targets"):
                agent.function.comm_targets = list(new)
        refresh_contacts(self.agents, {a.name: a for a in self.agents})

    def get_subswarm(
        self, names: Sequence[str], name_suffix: str, entrypoint: str | None = None
    ) -> MAILSwarmTemplate:
        """A template of this swarm restricted to the agents ``names``.

        Targets outside ``names`` are dropped (remote ones kept), as are actions no kept
        agent uses; the template is checked when instantiated. This swarm is unchanged.
        Raises :class:`SwarmDefinitionError` for a name that is not an agent here.
        """
        from mail.api._template import MAILSwarmTemplate  # noqa: PLC0415  # it imports this module

        whole = MAILSwarmTemplate(
            self.name,
            self.version,
            [a.to_template() for a in self.agents],
            self.actions,
            self.entrypoint,
            self.enable_interswarm,
            self.breakpoint_tools,
            self.exclude_tools,
            self.task_message_limit,
            self.description,
            self.keywords,
            enable_db_agent_histories=self.enable_db_agent_histories,
        )
        return whole.get_subswarm(names, name_suffix, entrypoint)

    # --- messages ------------------------------------------------------------------------

    def build_message(
        self,
        subject: str,
        body: str,
        targets: Sequence[str],
        sender_type: str = "user",
        type: Literal["request", "broadcast"] = "request",  # the seeds' parameter name
        task_id: str | None = None,
    ) -> MAILMessage:
        """A message from this swarm's caller to ``targets`` (entrypoint agents).

        Raises :class:`InvalidMessageError` for a sender type other than admin, user or
        agent, or a message type other than ``request`` / ``broadcast``.
        """
        return caller_message(
            self.name, self.user_id, subject, body, targets, sender_type, type, task_id
        )

    def _user_message(
        self, body: str, subject: str, msg_type: str, entrypoint: str | None, task_id: str | None
    ) -> MAILMessage:
        return user_message(
            self.name,
            self.agents,
            self.entrypoint,
            self.user_id,
            self.user_role,
            body,
            subject,
            msg_type,
            entrypoint,
            task_id,
        )

    async def _prepare(self, *, start: bool = True) -> None:
        if self._federation is not None:
            await self._federation.ready()
        if start and not self.runtime.is_running and not self.runtime.stopping:
            self.runtime.start(self.task_message_limit)

    async def post_message(
        self,
        body: str,
        subject: str = "New Message",
        msg_type: str = "request",
        entrypoint: str | None = None,
        show_events: bool = False,
        timeout: float = 3600.0,
        task_id: str | None = None,
        resume_from: ResumeFrom | None = None,
        **kwargs: Any,
    ) -> tuple[MAILMessage, list[MAILEvent] | None]:
        """Send the caller's message and wait for the answer: ``(final message, events)``.

        ``events`` (all the task's stored events) only with ``show_events``. Raises
        :class:`InvalidMessageError`, :class:`TaskNotFoundError` or :class:`TaskStateError`
        when the request cannot apply.
        """
        message = self._user_message(body, subject, msg_type, entrypoint, task_id)
        return await self.submit_message(message, timeout, show_events, resume_from, **kwargs)

    async def post_message_stream(
        self,
        body: str,
        subject: str = "New Message",
        msg_type: str = "request",
        entrypoint: str | None = None,
        timeout: float = 3600.0,
        task_id: str | None = None,
        resume_from: ResumeFrom | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[MAILEvent]:
        """Send the caller's message and return an iterator over this turn's events."""
        message = self._user_message(body, subject, msg_type, entrypoint, task_id)
        return await self.submit_message_stream(message, timeout, resume_from, **kwargs)

    async def post_message_and_run(
        self,
        body: str,
        subject: str = "New Message",
        msg_type: str = "request",
        entrypoint: str | None = None,
        show_events: bool = False,
        task_id: str | None = None,
        resume_from: ResumeFrom | None = None,
        max_steps: int | None = None,
        **kwargs: Any,
    ) -> tuple[MAILMessage, list[MAILEvent] | None]:
        """Send the message and run the loop just until its task's turn ends."""
        message = self._user_message(body, subject, msg_type, entrypoint, task_id)
        await self._prepare(start=False)
        task = await self.runtime.submit(message, resume_from, **kwargs)
        final = await self.runtime.run_task(
            task.task_id, max_steps=max_steps or self.task_message_limit
        )
        return final, (self.runtime.get_events(task.task_id) if show_events else None)

    async def submit_message(
        self,
        message: MAILMessage,
        timeout: float = 3600.0,
        show_events: bool = False,
        resume_from: ResumeFrom | None = None,
        **kwargs: Any,
    ) -> tuple[MAILMessage, list[MAILEvent] | None]:
        """Submit a complete message and wait for its task's answer."""
        await self._prepare()
        final = await self.runtime.submit_and_wait(message, timeout, resume_from, **kwargs)
        events = self.runtime.get_events(message["message"]["task_id"]) if show_events else None
        return final, events

    async def submit_message_nowait(
        self, message: MAILMessage, resume_from: ResumeFrom | None = None, **kwargs: Any
    ) -> MAILTask:
        """Submit a complete message without waiting; returns its task."""
        await self._prepare()
        return await self.runtime.submit(message, resume_from, **kwargs)

    async def submit_message_stream(
        self,
        message: MAILMessage,
        timeout: float = 3600.0,
        resume_from: ResumeFrom | None = None,
        *,
        ping_interval: float = 15.0,
        **kwargs: Any,
    ) -> AsyncIterator[MAILEvent]:
        """Submit a complete message and return an iterator over this turn's events."""
        await self._prepare()
        return await self.runtime.submit_and_stream(
            message, timeout, resume_from, ping_interval=ping_interval, **kwargs
        )

    # --- running -------------------------------------------------------------------------

    async def run_continuous(
        self,
        max_steps: int | None = None,
        action_override: ActionOverrideFunction | None = None,
        mode: Literal["continuous", "manual"] = "continuous",
    ) -> None:
        """Run the message loop until :meth:`shutdown`."""
        await self._prepare(start=False)
        await self.runtime.run_continuous(
            max_steps if max_steps is not None else self.task_message_limit, action_override, mode
        )

    async def shutdown(self, timeout: float = 30.0) -> None:
        """Let running agent turns finish (up to ``timeout`` s) and stop; then close the
        router and registry this swarm made (deliveries in flight get a few seconds)."""
        try:
            await self.runtime.shutdown(timeout)
        finally:
            if self._federation is not None:
                await self._federation.aclose()

    # --- interswarm ----------------------------------------------------------------------

    def _require_interswarm(self) -> None:
        if not self.enable_interswarm:
            raise ConfigurationError(f"interswarm is not enabled in swarm {self.name}")

    async def start_interswarm(self) -> None:
        """Route ``agent@swarm`` messages again (after :meth:`stop_interswarm`), read the
        registry file and run health checks of the registry this swarm made.

        Raises :class:`ConfigurationError` when interswarm is not enabled or no router
        was given, and what reading the registry file raises.
        """
        self._require_interswarm()
        if self._router is None:
            raise ConfigurationError(f"swarm {self.name} has no interswarm router")
        if self._federation is not None:
            await self._federation.ready()
            self._federation.start_health_checks()
        self.runtime.router = self._router

    async def stop_interswarm(self) -> None:
        """Stop routing ``agent@swarm`` messages (agents are told they were not delivered)
        and stop the health checks of the registry this swarm made."""
        self.runtime.router = None
        if self._federation is not None:
            await self._federation.stop_health_checks()

    def is_interswarm_running(self) -> bool:
        """True while ``agent@swarm`` messages are routed to other swarms."""
        return self.enable_interswarm and self.runtime.router is not None

    async def receive_interswarm_message(
        self, message: MAILInterswarmMessage, direction: Direction = "forward"
    ) -> MAILTask:
        """Queue a message from another swarm (what ``POST /interswarm/{direction}``
        does); returns its task. Raises :class:`InvalidMessageError` (malformed, or not
        for this swarm), :class:`TaskNotFoundError` and :class:`TaskStateError` (see
        :meth:`MAILRuntime.receive_interswarm`)."""
        checked = validate_interswarm_message(message)
        await self._prepare()
        return self.runtime.receive_interswarm(checked, direction)

    # --- state ---------------------------------------------------------------------------

    def get_pending_requests(self) -> dict[str, Any]:
        return self.runtime.pending_requests

    def get_response_message(self, task_id: str) -> MAILMessage | None:
        return self.runtime.get_response_message(task_id)

    def get_events(self, task_id: str) -> list[MAILEvent]:
        return self.runtime.get_events(task_id)

    def get_all_tasks(self) -> dict[str, MAILTask]:
        return {t.task_id: t for t in self.runtime.tasks}

    def get_task_by_id(self, task_id: str) -> MAILTask | None:
        return self.runtime.get_task(task_id)

    async def load_tasks_from_db(self) -> int:
        """Load this caller's stored tasks, with their agent histories, from the store
        given at construction (none: 0); returns how many were added. Raises
        :class:`StorageError` when the store cannot be read."""
        loaded: int = await self.runtime.restore()
        return loaded

    # The original loaded histories separately; ours come with their tasks.
    load_agent_histories_from_db = load_tasks_from_db
