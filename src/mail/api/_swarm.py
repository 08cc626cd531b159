"""``MAILSwarmTemplate`` and ``MAILSwarm`` (public through :mod:`mail.api`): a swarm's
blueprint and a running swarm for one caller.

Each builds the other (:meth:`MAILSwarmTemplate.instantiate`, :meth:`MAILSwarm.get_subswarm`),
so they share this module, as the two agent classes share ``mail.api._agents``.

A template is checked in two steps. Loading it (``from_swarms_json*``) checks what the
definition says on its own: fields, types, references (``python::``, ``url::``, action
names), unique agent names, tool names. :meth:`MAILSwarmTemplate.instantiate` checks
that the agents reach each other: the entrypoint exists and accepts user messages,
communication targets exist (or are ``agent@swarm`` with interswarm on), some agent can
complete tasks. So a file written for the original that names agents it leaves out loads,
and fails only when run.
"""

from __future__ import annotations

import asyncio
import logging
import webbrowser
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mail._limits import loads
from mail.api._actions import MAILAction, load_swarm_actions
from mail.api._agents import MAILAgent, MAILAgentTemplate, refresh_contacts
from mail.api._checks import check_structure, check_whole
from mail.api._interswarm import OwnedFederation, SwarmInterswarm
from mail.api._mcp import TemplateMCP
from mail.api._messages import caller_message, user_message
from mail.api._topology import adjacency_matrix, rewired_targets
from mail.core.budget import Budget, budget_problem
from mail.core.message import MAILMessage
from mail.errors import (
    InvalidMessageError,
    SwarmDefinitionError,
    TaskStateError,
)
from mail.swarms_json import find_swarm, load_swarms_json_file, parse_mcp_servers, parse_swarm
from mail.swarms_json.references import DEFAULT_POLICY, ReferencePolicy

if TYPE_CHECKING:
    from types import TracebackType

    # The runtime and its modules load with the first MAILSwarm: a server that loads a
    # template answers /health without them.
    from sse_starlette import EventSourceResponse

    from mail.core.actions import ActionOverrideFunction
    from mail.core.events import MAILEvent
    from mail.core.runtime import MAILRuntime, RemoteRouter, ResumeFrom
    from mail.core.tasks import MAILTask
    from mail.db.store import TaskStore
    from mail.swarms_json import MCPServerSpec

__all__ = ["MAILSwarm", "MAILSwarmTemplate"]

logger = logging.getLogger("mail.api")


def swarm_budget(value: Budget | Mapping[str, Any] | None, swarm: str) -> Budget | None:
    """A swarm's budget from a :class:`Budget` or its JSON (``None``: none, or no limit
    set); :class:`SwarmDefinitionError` naming the field when it is malformed."""
    if value is None or isinstance(value, Budget):
        return value or None
    problem = budget_problem(value)
    if problem is not None:
        raise SwarmDefinitionError(problem, swarm=swarm, field="budget")
    return Budget.from_json(value) or None


class MAILSwarm(SwarmInterswarm):
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
        store: TaskStore | None = None,
        budget: Budget | Mapping[str, Any] | None = None,
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
        #: the limits of every task of the swarm (a request may lower them)
        self.budget = swarm_budget(budget, name)
        self.runtime.budgets.ceiling = self.budget

    def _build_runtime(
        self,
        print_llm_streams: bool,
        *,
        router: RemoteRouter | None,
        max_finished_tasks: int,
        finished_task_ttl: float,
        store: TaskStore | None,
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
            # a run_continuous(mode=...) the caller has just created runs first, in its mode
            await asyncio.sleep(0)
            if not self.runtime.is_running and not self.runtime.stopping:
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
        task_id: str | None = None,
        timeout: float = 3600.0,
        resume_from: ResumeFrom | None = None,
        **kwargs: Any,
    ) -> EventSourceResponse:
        """Send the caller's message and return this turn's events as a server-sent events
        response (``sse_starlette.EventSourceResponse``), for a FastAPI route to return.

        Framed as the server frames ``POST /message`` streams: ``id:`` lines with the
        events' sequence numbers, compact JSON ``data:``, CRLF line ends, ``ping`` events
        after ``ping_interval`` seconds (keyword, default 15) of silence, and a final
        ``task_complete`` (or ``task_error``); if the server stops meanwhile, a final
        ``task_error`` that says so. Raises like :meth:`post_message` before anything is
        sent, so a bad request is an error of the route, not a broken stream. To read the
        events in Python, use :meth:`post_message_events`.
        """
        from mail._sse import event_response  # noqa: PLC0415  # loads starlette

        message = self._user_message(body, subject, msg_type, entrypoint, task_id)
        events = await self.submit_message_stream(message, timeout, resume_from, **kwargs)
        return event_response(events, task_id=message["message"]["task_id"])

    async def post_message_events(
        self,
        body: str,
        subject: str = "New Message",
        msg_type: str = "request",
        entrypoint: str | None = None,
        task_id: str | None = None,
        timeout: float = 3600.0,
        resume_from: ResumeFrom | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[MAILEvent]:
        """Send the caller's message and return an async iterator over this turn's events
        (:class:`~mail.core.events.MAILEvent`), ending with a final ``task_complete`` (or
        ``task_error``) event whose ``response`` is the answer. Raises like
        :meth:`post_message`.
        """
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

    async def manual_step(
        self,
        task_id: str,
        target: str,
        response_targets: list[str] | None = None,
        response_type: Literal["broadcast", "response", "request"] = "broadcast",
        payload: str | None = None,
        dynamic_ctx_ratio: float = 0.0,
        _llm: str | None = None,
        _system: str | None = None,
    ) -> MAILMessage | None:
        """Manual mode (``run_continuous(mode="manual")``): give agent ``target`` the
        messages buffered for it in running task ``task_id``, then ``payload``, as one
        ``::manual_step::`` message, and wait for its turn (tool choice ``auto``).

        Its plain-text answer becomes a ``response_type`` message to ``response_targets``
        (default ``["all"]``; a request or response goes to the first), which is sent and
        returned; ``None`` when the agent answered with tool calls only (processed as in
        any turn). See docs/runtime.md. Raises :class:`TaskNotFoundError`,
        :class:`TaskStateError` (task not running), and :class:`InvalidMessageError`
        (unknown agent or response type, or ``dynamic_ctx_ratio`` > 0: compressing the
        history with an extra LLM call is not supported; ``_llm`` and ``_system``, its
        model and prompt, are ignored).
        """
        if dynamic_ctx_ratio > 0:
            raise InvalidMessageError(
                "history compression (dynamic_ctx_ratio, _llm, _system) is not supported",
                field="dynamic_ctx_ratio",
            )
        await self._prepare()
        return await self.runtime.manual.step(
            task_id, target, response_targets, response_type, payload
        )

    async def shutdown(self, timeout: float = 30.0) -> None:
        """Let running agent turns finish (up to ``timeout`` s) and stop; then close the
        router and registry this swarm made (deliveries in flight get a few seconds)."""
        try:
            await self.runtime.shutdown(timeout)
        finally:
            if self._federation is not None:
                await self._federation.aclose()

    async def await_queue_empty(self) -> None:
        """Wait until nothing is queued and no agent turn (or other work of the runtime)
        runs. Waits forever if messages are queued and the runtime is not running (see
        :meth:`run_continuous`)."""
        await self.runtime.scheduler.wait_idle()

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


class MAILSwarmTemplate:
    """A swarm's blueprint: agent templates, actions and settings; ``instantiate`` runs it.

    Nothing is checked until :meth:`instantiate` (or, for the definition's own fields, a
    ``from_swarms_json*`` load), so a template may be edited through invalid states.

    ``mcp_servers`` (keyword): MCP servers whose tools the agents that name them (their
    ``mcp_servers``) are offered, as :class:`~mail.stdlib.mcp.MCPServerSpec` or objects as
    in ``swarms.json`` (checked here: :class:`SwarmDefinitionError`). Their sessions are
    opened once per template by ``await`` :meth:`start_mcp` (or ``async with template:``),
    shared by every swarm it instantiates, and closed by :meth:`close_mcp`.
    """

    def __init__(  # noqa: PLR0917  # positional signature of the seeds
        self,
        name: str,
        version: str,
        agents: Sequence[MAILAgentTemplate],
        actions: Sequence[MAILAction],
        entrypoint: str,
        enable_interswarm: bool = False,
        breakpoint_tools: Sequence[str] | None = None,
        exclude_tools: Sequence[str] | None = None,
        task_message_limit: int | None = None,
        description: str = "",
        keywords: Sequence[str] | None = None,
        public: bool = False,
        enable_db_agent_histories: bool = False,
        *,
        mcp_servers: Sequence[MCPServerSpec | Mapping[str, Any]] | None = None,
        budget: Budget | Mapping[str, Any] | None = None,
    ) -> None:
        self._mcp = TemplateMCP(name, mcp_servers)
        #: the limits of every task of the swarm (``budget`` in swarms.json)
        self.budget = swarm_budget(budget, name)
        self.name = name
        self.version = version
        self.agents = list(agents)
        self.actions = list(actions)
        self.entrypoint = entrypoint
        self.enable_interswarm = enable_interswarm
        self.breakpoint_tools = list(breakpoint_tools or ())
        self.exclude_tools = list(exclude_tools or ())
        self.task_message_limit = task_message_limit
        self.description = description
        self.keywords = list(keywords or ())
        self.public = public
        self.enable_db_agent_histories = enable_db_agent_histories

    def __repr__(self) -> str:
        return f"MAILSwarmTemplate(name={self.name!r}, agents={[a.name for a in self.agents]!r})"

    @property
    def agent_names(self) -> list[str]:
        return [a.name for a in self.agents]

    def validate(self) -> None:
        """Check the whole template, as :meth:`instantiate` does.

        Raises :class:`SwarmDefinitionError` naming the swarm, agent and field at fault.
        """
        check_whole(
            self.name,
            self.agents,
            self.actions,
            self.entrypoint,
            self.enable_interswarm,
            self.breakpoint_tools,
            self.exclude_tools,
        )
        self._mcp.check_agents(self.agents)

    # --- MCP servers ---------------------------------------------------------------------

    @property
    def mcp_servers(self) -> list[MCPServerSpec]:
        """The MCP servers this swarm declares."""
        return list(self._mcp.specs)

    @property
    def mcp_started(self) -> bool:
        """True once :meth:`start_mcp` has opened the servers' sessions (or none declared)."""
        return self._mcp.started or not self._mcp.specs

    async def start_mcp(self, env: Mapping[str, str] | None = None) -> None:
        """Open a session to each declared MCP server and list its tools, once (again
        after :meth:`close_mcp`); ``env`` is where ``${VAR}`` references (tokens,
        ``env`` values) are looked up (default ``os.environ``). Raises
        :class:`ConfigurationError` with one line naming the server and the reason when
        a required server cannot be started (the others are closed); optional ones are
        left out with a warning; also when the ``mcp`` package is missing."""
        await self._mcp.start(env)

    async def close_mcp(self) -> None:
        """Close the MCP sessions (stdio servers exit). Swarms built meanwhile get
        ``Error: MCP server 'x' is unavailable`` from their MCP tools until restarted."""
        await self._mcp.close()

    async def __aenter__(self) -> MAILSwarmTemplate:
        await self.start_mcp()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close_mcp()

    def instantiate(
        self,
        instance_params: Mapping[str, Any],
        user_id: str = "default_user",
        user_role: str = "user",
        base_url: str = "http://localhost:8000",
        registry_file: str | Path | None = None,
        print_llm_streams: bool = True,
        *,
        router: RemoteRouter | None = None,
        swarm_registry: object | None = None,
        env: Mapping[str, str] | None = None,
        max_finished_tasks: int = 1000,
        finished_task_ttl: float = 3600.0,
        store: TaskStore | None = None,
    ) -> MAILSwarm:
        """Check the template, build every agent and return a runnable :class:`MAILSwarm`.

        ``instance_params`` reach every agent factory (e.g. ``user_token``). With
        ``enable_interswarm`` and no ``router``, the swarm builds (and its ``shutdown``
        closes) an :class:`~mail.net.InterswarmRouter` over ``swarm_registry`` or over a
        new :class:`~mail.net.SwarmRegistry` of this swarm at ``base_url``, persisted in
        ``registry_file`` (read before the first message); ``env`` is where
        ``${SWARM_AUTH_TOKEN_<NAME>}`` references are looked up (default ``os.environ``).
        Raises :class:`SwarmDefinitionError` when the template is invalid (the entrypoint,
        a comm target, no agent that completes tasks...) or a factory fails, and
        :class:`ConfigurationError` when it declares MCP servers not started (see
        :meth:`start_mcp`).
        """
        self.validate()
        templates = self._mcp.agents_with_tools(self.agents)
        agents = [t.instantiate(instance_params, self.exclude_tools) for t in templates]
        refresh_contacts(agents, {t.name: t for t in templates})
        return MAILSwarm(
            self.name,
            self.version,
            agents,
            self.actions,
            self.entrypoint,
            user_id=user_id,
            user_role=user_role,
            swarm_registry=swarm_registry,
            enable_interswarm=self.enable_interswarm,
            breakpoint_tools=self.breakpoint_tools,
            exclude_tools=self.exclude_tools,
            task_message_limit=self.task_message_limit,
            description=self.description,
            keywords=self.keywords,
            enable_db_agent_histories=self.enable_db_agent_histories,
            print_llm_streams=print_llm_streams,
            router=router,
            base_url=base_url,
            registry_file=registry_file,
            env=env,
            max_finished_tasks=max_finished_tasks,
            finished_task_ttl=finished_task_ttl,
            store=store,
            budget=self.budget,
        )

    def start_server(  # v1.3.6's positional signature
        self,
        port: int = 8000,
        host: str = "0.0.0.0",  # noqa: S104  # v1.3.6's default
        launch_ui: bool = False,
        ui_port: int = 3000,
        ui_path: str | None = None,
        open_browser: bool = False,
        server_url: str | None = None,
    ) -> None:
        """Serve this template with ``mail server``'s HTTP API on ``host:port`` until
        interrupted (blocks), as v1.3.6 did.

        ``server_url`` is the URL advertised to peers (``base_url``); ``open_browser``
        opens the server's address. v1.3.6 also started its separate Node web UI
        (``launch_ui``, ``ui_port``, ``ui_path``): this server starts no second process, so
        those are accepted and ignored (logged). Raises what
        :func:`mail.server.run_server_with_template` raises.
        """
        # the one upward import of the Python API (tests/unit/test_guards.py LAUNCHER)
        from mail.server import run_server_with_template  # noqa: PLC0415

        if launch_ui or ui_path is not None or ui_port != 3000:  # noqa: PLR2004  # v1.3.6's default
            logger.warning("start_server: launch_ui, ui_port and ui_path are ignored")
        if open_browser:
            shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host  # noqa: S104
            webbrowser.open(server_url or f"http://{shown}:{port}")
        run_server_with_template(self, port, host, base_url=server_url)

    # --- reshaping -----------------------------------------------------------------------

    def _build_adjacency_matrix(self) -> tuple[list[list[int]], list[str]]:
        names = self.agent_names
        return adjacency_matrix(names, [a.comm_targets for a in self.agents]), names

    @property
    def adjacency_matrix(self) -> list[list[int]]:
        return self._build_adjacency_matrix()[0]

    def update_from_adjacency_matrix(self, adj: Sequence[Sequence[int]]) -> None:
        """Set every agent's local comm targets from a square 0/1 matrix (row = sender).

        Remote targets (``agent@swarm``) are kept. Raises :class:`SwarmDefinitionError`
        when the matrix is not n by n of 0 and 1 for the n agents.
        """
        targets = rewired_targets(
            self.name, self.agent_names, [a.comm_targets for a in self.agents], adj
        )
        self.agents = [a.copy(comm_targets=t) for a, t in zip(self.agents, targets, strict=True)]

    def get_subswarm(
        self, names: Sequence[str], name_suffix: str, entrypoint: str | None = None
    ) -> MAILSwarmTemplate:
        """A template with only the agents ``names`` (targets outside it are dropped).

        Raises :class:`SwarmDefinitionError` for an unknown name; the new template is
        validated when instantiated.
        """
        unknown = [n for n in names if n not in self.agent_names]
        if unknown:
            raise SwarmDefinitionError(
                f"unknown agents: {', '.join(unknown)}", swarm=self.name, field="agents"
            )
        keep = set(names)
        agents = [
            a.copy(comm_targets=[t for t in a.comm_targets if t in keep or "@" in t])
            for a in self.agents
            if a.name in keep
        ]
        used = {x.name for a in agents for x in a.actions}
        subswarm = MAILSwarmTemplate(
            f"{self.name}{name_suffix}",
            self.version,
            agents,
            [x for x in self.actions if x.name in used],
            entrypoint or (self.entrypoint if self.entrypoint in keep else agents[0].name),
            self.enable_interswarm,
            [
                t
                for t in self.breakpoint_tools
                if t not in {x.name for x in self.actions} or t in used
            ],
            self.exclude_tools,
            self.task_message_limit,
            self.description,
            self.keywords,
            self.public,
            self.enable_db_agent_histories,
            budget=self.budget,
        )
        subswarm._mcp = self._mcp.subset([s for a in agents for s in a.mcp_servers])
        return subswarm

    # --- loading -------------------------------------------------------------------------

    @classmethod
    def from_swarms_json(
        cls,
        swarm_data: dict[str, Any],
        task_message_limit: int | None = None,
        *,
        policy: ReferencePolicy = DEFAULT_POLICY,
    ) -> MAILSwarmTemplate:
        """Build a template from one ``swarms.json`` swarm object.

        Checks fields, types and references (``python::``/``url::`` strings, action
        names, tool names); ``action_imports`` must resolve to :class:`MAILAction`
        objects, and an action name defined twice with different objects is an error.
        Whether the agents reach each other is checked by :meth:`instantiate` (or
        :meth:`validate`). ``mcp_servers`` with a ``command`` are refused when ``policy``
        does not allow them (definitions received over HTTP). Raises
        :class:`SwarmDefinitionError` naming the swarm, agent and field.
        """
        spec = parse_swarm(swarm_data)
        swarm = spec["name"]
        actions = load_swarm_actions(spec["actions"], spec["action_imports"], swarm, policy)
        by_name = {a.name: a for a in actions}
        agents = [
            MAILAgentTemplate.from_swarms_json(dict(a), by_name, swarm=swarm, policy=policy)
            for a in spec["agents"]
        ]
        check_structure(swarm, agents, actions, spec["breakpoint_tools"], spec["exclude_tools"])
        return cls(
            swarm,
            spec["version"],
            agents,
            actions,
            spec["entrypoint"],
            spec["enable_interswarm"],
            spec["breakpoint_tools"],
            spec["exclude_tools"],
            task_message_limit,
            spec["description"],
            spec["keywords"],
            spec["public"],
            spec["enable_db_agent_histories"],
            mcp_servers=parse_mcp_servers(
                spec["mcp_servers"], swarm, allow_commands=policy.allow_mcp_commands
            ),
            budget=spec["budget"],
        )

    @classmethod
    def from_swarm_json(
        cls,
        json_dump: str,
        task_message_limit: int | None = None,
        *,
        policy: ReferencePolicy = DEFAULT_POLICY,
    ) -> MAILSwarmTemplate:
        """Like :meth:`from_swarms_json`, from the JSON text of one swarm object."""
        try:
            data = loads(json_dump)
        except ValueError as e:
            raise SwarmDefinitionError(f"swarm JSON is not valid: {e}") from e
        return cls.from_swarms_json(data, task_message_limit, policy=policy)

    @classmethod
    def from_swarm_json_file(
        cls,
        swarm_name: str,
        json_filepath: str | Path = "swarms.json",
        task_message_limit: int | None = None,
        *,
        policy: ReferencePolicy = DEFAULT_POLICY,
    ) -> MAILSwarmTemplate:
        """Load the swarm ``swarm_name`` from a ``swarms.json`` file (checked as
        :meth:`from_swarms_json` checks)."""
        spec = find_swarm(load_swarms_json_file(json_filepath), swarm_name)
        return cls.from_swarms_json(dict(spec), task_message_limit, policy=policy)
