"""``MAILSwarmTemplate`` and ``MAILSwarm`` (public through :mod:`mail.api`)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mail._api_actions import MAILAction
from mail._api_agents import MAILAgent, MAILAgentTemplate, describe_contacts, with_contacts
from mail.core.message import (
    MAILAddress,
    MAILMessage,
    create_address,
    create_agent_address,
    make_broadcast,
    make_request,
    new_task_id,
)
from mail.errors import InvalidMessageError, SwarmDefinitionError
from mail.swarms_json import check_swarm, find_swarm, load_swarms_json_file, parse_swarm
from mail.utils.parsing import DEFAULT_POLICY, ReferencePolicy, read_python_string

if TYPE_CHECKING:
    # The runtime and its modules load with the first MAILSwarm: a server that loads a
    # template answers /health without them.
    from mail.core._persist import TaskSink
    from mail.core.actions import ActionOverrideFunction
    from mail.core.events import MAILEvent
    from mail.core.runtime import RemoteRouter, ResumeFrom
    from mail.core.tasks import MAILTask

__all__ = ["MAILSwarm", "MAILSwarmTemplate"]

logger = logging.getLogger("mail.api")

_SENDER_TYPES = {"admin": "admin", "user": "user", "agent": "agent"}
_USER_MESSAGE_TYPES = ("request", "broadcast")


def _check(
    name: str,
    agents: Sequence[MAILAgent | MAILAgentTemplate],
    actions: Sequence[MAILAction],
    entrypoint: str,
    enable_interswarm: bool,
    breakpoint_tools: Sequence[str],
    exclude_tools: Sequence[str],
) -> None:
    check_swarm(
        name=name,
        agents=[a.shape() for a in agents],
        action_names=[a.name for a in actions] + [x.name for a in agents for x in a.actions],
        entrypoint=entrypoint,
        enable_interswarm=enable_interswarm,
        breakpoint_tools=breakpoint_tools,
        exclude_tools=exclude_tools,
    )


class MAILSwarmTemplate:
    """A swarm's blueprint: agent templates, actions and settings; ``instantiate`` runs it.

    Nothing is checked until :meth:`instantiate` (or a ``from_swarms_json*`` load), so a
    template may be edited through invalid states.
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
    ) -> None:
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
        """Check the template. Raises :class:`SwarmDefinitionError` naming what is wrong."""
        _check(
            self.name,
            self.agents,
            self.actions,
            self.entrypoint,
            self.enable_interswarm,
            self.breakpoint_tools,
            self.exclude_tools,
        )

    def instantiate(
        self,
        instance_params: Mapping[str, Any],
        user_id: str = "default_user",
        user_role: str = "user",
        base_url: str = "http://localhost:8000",
        registry_file: str | None = None,
        print_llm_streams: bool = True,
        *,
        router: RemoteRouter | None = None,
        swarm_registry: object | None = None,
        max_finished_tasks: int = 1000,
        finished_task_ttl: float = 3600.0,
        store: TaskSink | None = None,
    ) -> MAILSwarm:
        """Build every agent and return a runnable :class:`MAILSwarm` for one caller.

        ``instance_params`` reach every agent factory (e.g. ``user_token``). Raises
        :class:`SwarmDefinitionError` when the template is invalid or a factory fails.
        """
        self.validate()
        agents = [t.instantiate(instance_params, self.exclude_tools) for t in self.agents]
        templates = {t.name: t for t in self.agents}
        for agent in agents:
            system = getattr(agent.function, "system", None)
            if isinstance(system, str):
                contacts = describe_contacts(agent.name, templates)
                setattr(agent.function, "system", with_contacts(system, contacts))  # noqa: B010  # duck-typed agent functions
            if hasattr(agent.function, "print_llm_streams"):
                agent.function.print_llm_streams = print_llm_streams
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
            max_finished_tasks=max_finished_tasks,
            finished_task_ttl=finished_task_ttl,
            store=store,
        )

    # --- reshaping -----------------------------------------------------------------------

    def _build_adjacency_matrix(self) -> tuple[list[list[int]], list[str]]:
        names = self.agent_names
        return [[int(b in a.comm_targets) for b in names] for a in self.agents], names

    @property
    def adjacency_matrix(self) -> list[list[int]]:
        return self._build_adjacency_matrix()[0]

    def update_from_adjacency_matrix(self, adj: Sequence[Sequence[int]]) -> None:
        """Set every agent's local comm targets from a square 0/1 matrix (row = sender).

        Remote targets (``agent@swarm``) are kept. Raises :class:`SwarmDefinitionError`
        when the matrix is not n by n for the n agents.
        """
        names = self.agent_names
        if len(adj) != len(names) or any(len(row) != len(names) for row in adj):
            raise SwarmDefinitionError(
                f"adjacency matrix must be {len(names)}x{len(names)}", swarm=self.name
            )
        self.agents = [
            a.copy(
                comm_targets=[n for n, edge in zip(names, row, strict=True) if edge]
                + [t for t in a.comm_targets if t not in names]
            )
            for a, row in zip(self.agents, adj, strict=True)
        ]

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
        return MAILSwarmTemplate(
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
        )

    # --- loading -------------------------------------------------------------------------

    @classmethod
    def from_swarms_json(
        cls,
        data: dict[str, Any],
        task_message_limit: int | None = None,
        *,
        policy: ReferencePolicy = DEFAULT_POLICY,
    ) -> MAILSwarmTemplate:
        """Build and check a template from one ``swarms.json`` swarm object.

        ``action_imports`` must resolve to :class:`MAILAction` objects; an action name
        defined twice with different objects is an error. Raises
        :class:`SwarmDefinitionError` naming the swarm, agent and field.
        """
        spec = parse_swarm(data)
        swarm = spec["name"]
        actions = _load_actions(spec["actions"], spec["action_imports"], swarm, policy)
        by_name = {a.name: a for a in actions}
        agents = [
            MAILAgentTemplate.from_swarms_json(dict(a), by_name, swarm=swarm, policy=policy)
            for a in spec["agents"]
        ]
        template = cls(
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
        )
        template.validate()
        return template

    @classmethod
    def from_swarm_json(
        cls,
        text: str,
        task_message_limit: int | None = None,
        *,
        policy: ReferencePolicy = DEFAULT_POLICY,
    ) -> MAILSwarmTemplate:
        """Like :meth:`from_swarms_json`, from the JSON text of one swarm object."""
        try:
            data = json.loads(text)
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
        """Load the swarm ``swarm_name`` from a ``swarms.json`` file."""
        spec = find_swarm(load_swarms_json_file(json_filepath), swarm_name)
        return cls.from_swarms_json(dict(spec), task_message_limit, policy=policy)


def _load_actions(
    inline: Sequence[Mapping[str, Any]], imports: Sequence[str], swarm: str, policy: ReferencePolicy
) -> list[MAILAction]:
    actions: dict[str, MAILAction] = {}
    for item in inline:
        try:
            created = MAILAction(
                item["name"],
                item["description"],
                item["parameters"],
                item["function"],
                policy=policy,
            )
        except SwarmDefinitionError as e:
            raise e.located(swarm=swarm) from e
        _add_action(actions, created, swarm)
    for ref in imports:
        try:
            imported = read_python_string(ref, policy)
        except SwarmDefinitionError as e:
            raise SwarmDefinitionError(e.reason, swarm=swarm, field="action_imports") from e
        if not isinstance(imported, MAILAction):
            raise SwarmDefinitionError(
                f"{ref!r} is a {type(imported).__name__}, not a MAILAction",
                swarm=swarm,
                field="action_imports",
            )
        _add_action(actions, imported, swarm)
    return list(actions.values())


def _add_action(actions: dict[str, MAILAction], new: MAILAction, swarm: str) -> None:
    old = actions.get(new.name)
    if old is not None and old is not new and old.function is not new.function:
        raise SwarmDefinitionError(
            f"action '{new.name}' is defined twice", swarm=swarm, field="actions"
        )
    actions[new.name] = new


class MAILSwarm:
    """A running swarm for one caller: agents, actions and a :class:`MAILRuntime`.

    Messages are processed by the runtime's loop, started on first use (or by
    :meth:`run_continuous`). Raises :class:`SwarmDefinitionError` when the parts do not
    fit together.
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
        max_finished_tasks: int = 1000,
        finished_task_ttl: float = 3600.0,
        store: TaskSink | None = None,
    ) -> None:
        _check(
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
        self.swarm_registry = swarm_registry
        self.enable_interswarm = enable_interswarm
        self.task_message_limit = task_message_limit
        self.description = description
        self.keywords = list(keywords or ())
        all_actions = {a.name: a for a in self.actions} | {
            x.name: x for a in self.agents for x in a.actions
        }
        from mail.core.runtime import MAILRuntime  # noqa: PLC0415  # see the imports above

        self.runtime = MAILRuntime(
            {a.name: a.to_core() for a in self.agents},
            {n: a.to_core() for n, a in all_actions.items()},
            user_id=user_id,
            user_role=user_role,
            swarm_name=name,
            entrypoint=entrypoint,
            swarm_registry=swarm_registry,
            enable_interswarm=enable_interswarm,
            breakpoint_tools=breakpoint_tools,
            exclude_tools=exclude_tools,
            enable_db_agent_histories=enable_db_agent_histories,
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
        names = self.agent_names
        return [[int(b in a.comm_targets) for b in names] for a in self.agents]

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
        address_type = _SENDER_TYPES.get(sender_type)
        if address_type is None:
            raise InvalidMessageError(
                f"sender type {sender_type!r} cannot send user messages", field="sender_type"
            )
        sender: MAILAddress = create_address(self.user_id, address_type)  # type: ignore[arg-type]
        task = task_id or new_task_id()
        if type == "request":
            if len(targets) != 1:
                raise InvalidMessageError("a request needs exactly one target", field="targets")
            return make_request(
                task_id=task,
                sender=sender,
                recipient=create_agent_address(targets[0]),
                subject=subject,
                body=body,
                sender_swarm=self.name,
                recipient_swarm=self.name,
            )
        if type == "broadcast":
            return make_broadcast(
                task_id=task,
                sender=sender,
                recipients=[create_agent_address(t) for t in targets],
                subject=subject,
                body=body,
            )
        raise InvalidMessageError(
            f"message type {type!r} cannot be sent by a user; use one of {', '.join(_USER_MESSAGE_TYPES)}",
            field="msg_type",
        )

    def _user_message(
        self, body: str, subject: str, msg_type: str, entrypoint: str | None, task_id: str | None
    ) -> MAILMessage:
        target = (entrypoint or "").strip() or self.entrypoint
        agent = next((a for a in self.agents if a.name == target), None)
        if agent is None or not agent.enable_entrypoint:
            entrypoints = [a.name for a in self.agents if a.enable_entrypoint]
            raise InvalidMessageError(
                f"'{target}' is not an entrypoint of swarm {self.name}; use one of {', '.join(entrypoints)}",
                field="entrypoint",
            )
        if msg_type not in _USER_MESSAGE_TYPES:
            raise InvalidMessageError(
                f"message type {msg_type!r} cannot be sent by a user; use one of {', '.join(_USER_MESSAGE_TYPES)}",
                field="msg_type",
            )
        sender_type = self.user_role if self.user_role in _SENDER_TYPES else "user"
        kind: Literal["request", "broadcast"] = "request" if msg_type == "request" else "broadcast"
        return self.build_message(
            subject or "New Message", body, [target], sender_type, kind, task_id
        )

    def _ensure_running(self) -> None:
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
        self._ensure_running()
        final = await self.runtime.submit_and_wait(message, timeout, resume_from, **kwargs)
        events = self.runtime.get_events(message["message"]["task_id"]) if show_events else None
        return final, events

    async def submit_message_nowait(
        self, message: MAILMessage, resume_from: ResumeFrom | None = None, **kwargs: Any
    ) -> MAILTask:
        """Submit a complete message without waiting; returns its task."""
        self._ensure_running()
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
        self._ensure_running()
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
        await self.runtime.run_continuous(
            max_steps if max_steps is not None else self.task_message_limit, action_override, mode
        )

    async def shutdown(self, timeout: float = 30.0) -> None:
        """Let running agent turns finish (up to ``timeout`` s) and stop."""
        await self.runtime.shutdown(timeout)

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
