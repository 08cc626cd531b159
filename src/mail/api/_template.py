"""``MAILSwarmTemplate`` (public through :mod:`mail.api`): a swarm's blueprint.

A template is checked in two steps. Loading it (``from_swarms_json*``) checks what the
definition says on its own: fields, types, references (``python::``, ``url::``, action
names), unique agent names, tool names. :meth:`MAILSwarmTemplate.instantiate` checks
that the agents reach each other: the entrypoint exists and accepts user messages,
communication targets exist (or are ``agent@swarm`` with interswarm on), some agent can
complete tasks. So a file written for the original that names agents it leaves out loads,
and fails only when run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mail.api._actions import MAILAction
from mail.api._agents import MAILAgentTemplate
from mail.api._swarm import MAILSwarm, check_structure, check_whole, refresh_contacts
from mail.api._topology import adjacency_matrix, rewired_targets
from mail.errors import SwarmDefinitionError
from mail.swarms_json import find_swarm, load_swarms_json_file, parse_swarm
from mail.utils.parsing import DEFAULT_POLICY, ReferencePolicy, read_python_string

if TYPE_CHECKING:
    from mail.core._persist import TaskSink
    from mail.core.runtime import RemoteRouter

__all__ = ["MAILSwarmTemplate"]

logger = logging.getLogger("mail.api")


class MAILSwarmTemplate:
    """A swarm's blueprint: agent templates, actions and settings; ``instantiate`` runs it.

    Nothing is checked until :meth:`instantiate` (or, for the definition's own fields, a
    ``from_swarms_json*`` load), so a template may be edited through invalid states.
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
        store: TaskSink | None = None,
    ) -> MAILSwarm:
        """Check the template, build every agent and return a runnable :class:`MAILSwarm`.

        ``instance_params`` reach every agent factory (e.g. ``user_token``). With
        ``enable_interswarm`` and no ``router``, the swarm builds (and its ``shutdown``
        closes) an :class:`~mail.net.InterswarmRouter` over ``swarm_registry`` or over a
        new :class:`~mail.net.SwarmRegistry` of this swarm at ``base_url``, persisted in
        ``registry_file`` (read before the first message); ``env`` is where
        ``${SWARM_AUTH_TOKEN_<NAME>}`` references are looked up (default ``os.environ``).
        Raises :class:`SwarmDefinitionError` when the template is invalid (the entrypoint,
        a comm target, no agent that completes tasks...) or a factory fails.
        """
        self.validate()
        agents = [t.instantiate(instance_params, self.exclude_tools) for t in self.agents]
        refresh_contacts(agents, {t.name: t for t in self.agents})
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
        )

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
        """Build a template from one ``swarms.json`` swarm object.

        Checks fields, types and references (``python::``/``url::`` strings, action
        names, tool names); ``action_imports`` must resolve to :class:`MAILAction`
        objects, and an action name defined twice with different objects is an error.
        Whether the agents reach each other is checked by :meth:`instantiate` (or
        :meth:`validate`). Raises :class:`SwarmDefinitionError` naming the swarm, agent
        and field.
        """
        spec = parse_swarm(data)
        swarm = spec["name"]
        actions = _load_actions(spec["actions"], spec["action_imports"], swarm, policy)
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
        )

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
        """Load the swarm ``swarm_name`` from a ``swarms.json`` file (checked as
        :meth:`from_swarms_json` checks)."""
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
