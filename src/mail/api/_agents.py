"""``MAILAgentTemplate`` and ``MAILAgent`` (public through :mod:`mail.api`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from mail.api._actions import MAILAction
from mail.core.agents import AgentCore, AgentOutput
from mail.errors import SwarmDefinitionError
from mail.swarms_json import AgentShape, did_you_mean, parse_agent
from mail.swarms_json.references import (
    DEFAULT_POLICY,
    ReferencePolicy,
    read_python_string,
    resolve_prefixed_string_references,
)

__all__ = ["MAILAgent", "MAILAgentTemplate", "describe_contacts", "refresh_contacts"]

logger = logging.getLogger("mail.api")

ToolFormat = Literal["completions", "responses"]
_CONTACTS_HEADER = "Here are details about the agents you can communicate with:"
_NO_TOOLS = "- This agent does not have access to tools, the internet, real-time data, etc."


class MAILAgent:
    """An agent ready to run: its built function plus its routing flags.

    Requires at least one communication target unless the agent is both an entrypoint
    and able to complete tasks (it can then answer the user on its own). Raises
    :class:`SwarmDefinitionError` otherwise.
    """

    def __init__(  # noqa: PLR0917  # positional signature of the seeds
        self,
        name: str,
        factory: str | Callable[..., Any],
        actions: Sequence[MAILAction],
        function: Callable[..., Any],
        comm_targets: Sequence[str],
        agent_params: Mapping[str, Any],
        enable_entrypoint: bool = False,
        enable_interswarm: bool = False,
        can_complete_tasks: bool = False,
        tool_format: ToolFormat = "responses",
        exclude_tools: Sequence[str] | None = None,
    ) -> None:
        if not comm_targets and not (can_complete_tasks and enable_entrypoint):
            raise SwarmDefinitionError(
                "needs at least one comm target (or both enable_entrypoint and can_complete_tasks)",
                agent=name,
                field="comm_targets",
            )
        self.name = name
        self.factory = factory
        self.actions = list(actions)
        self.function = function
        self.comm_targets = list(comm_targets)
        self.agent_params = dict(agent_params)
        self.enable_entrypoint = enable_entrypoint
        self.enable_interswarm = enable_interswarm
        self.can_complete_tasks = can_complete_tasks
        self.tool_format: ToolFormat = tool_format
        self.exclude_tools = list(exclude_tools or ())

    def __repr__(self) -> str:
        return f"MAILAgent(name={self.name!r}, comm_targets={self.comm_targets!r})"

    async def __call__(
        self, messages: list[dict[str, Any]], tool_choice: str | dict[str, Any] = "required"
    ) -> AgentOutput:
        result: AgentOutput = await self.function(messages, tool_choice)
        return result

    def to_core(self) -> AgentCore:
        """The runtime's view of this agent."""
        return AgentCore(
            self.function,
            self.comm_targets,
            actions=[a.name for a in self.actions],
            enable_entrypoint=self.enable_entrypoint,
            enable_interswarm=self.enable_interswarm,
            can_complete_tasks=self.can_complete_tasks,
            tool_format=self.tool_format,
            exclude_tools=self.exclude_tools,
        )

    def shape(self) -> AgentShape:
        return AgentShape(
            self.name,
            self.comm_targets,
            [a.name for a in self.actions],
            self.enable_entrypoint,
            self.enable_interswarm,
            self.can_complete_tasks,
            self.exclude_tools,
        )

    def to_template(self) -> MAILAgentTemplate:
        """A template that builds this agent again (same factory, parameters and flags).

        Raises :class:`SwarmDefinitionError` when a ``python::``/``url::`` reference of
        its factory or parameters no longer resolves.
        """
        return MAILAgentTemplate(
            self.name,
            self.factory,
            self.comm_targets,
            self.actions,
            self.agent_params,
            self.enable_entrypoint,
            self.enable_interswarm,
            self.can_complete_tasks,
            self.tool_format,
            self.exclude_tools,
        )


class MAILAgentTemplate:
    """How to build an agent: a factory, its parameters, its actions and its flags.

    ``factory`` is a callable (or ``python::module:attr`` naming one) called with the
    agent's wiring and parameters; it returns the agent function (classes are simply
    instantiated). ``python::`` and ``url::`` strings inside ``agent_params`` are resolved
    once, here. ``mcp_servers`` (keyword) names MCP servers of the swarm whose tools the
    agent is offered as actions ``<server>__<tool>`` (see :class:`MAILSwarmTemplate`).
    Raises :class:`SwarmDefinitionError` when a reference does not resolve.
    """

    def __init__(  # noqa: PLR0917  # positional signature of the seeds
        self,
        name: str,
        factory: str | Callable[..., Any],
        comm_targets: Sequence[str],
        actions: Sequence[MAILAction],
        agent_params: Mapping[str, Any],
        enable_entrypoint: bool = False,
        enable_interswarm: bool = False,
        can_complete_tasks: bool = False,
        tool_format: ToolFormat = "responses",
        exclude_tools: Sequence[str] | None = None,
        *,
        policy: ReferencePolicy = DEFAULT_POLICY,
        mcp_servers: Sequence[str] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise SwarmDefinitionError("agent name must be a non-empty string", field="name")
        #: names of the swarm's MCP servers whose tools this agent is offered
        self.mcp_servers = list(mcp_servers or ())
        self.name = name
        self.factory = factory
        self.comm_targets = list(comm_targets)
        self.actions = list(actions)
        self.agent_params = dict(agent_params)
        self.enable_entrypoint = enable_entrypoint
        self.enable_interswarm = enable_interswarm
        self.can_complete_tasks = can_complete_tasks
        self.tool_format: ToolFormat = tool_format
        self.exclude_tools = list(exclude_tools or ())
        try:
            self._factory: Callable[..., Any] = (
                read_python_string(factory, policy) if isinstance(factory, str) else factory
            )
        except SwarmDefinitionError as e:
            raise SwarmDefinitionError(str(e), agent=name, field="factory") from e
        try:
            self._params: dict[str, Any] = resolve_prefixed_string_references(
                self.agent_params, policy
            )
        except SwarmDefinitionError as e:
            raise SwarmDefinitionError(str(e), agent=name, field="agent_params") from e
        if not callable(self._factory):
            raise SwarmDefinitionError(
                f"factory {factory!r} is not callable", agent=name, field="factory"
            )

    def __repr__(self) -> str:
        return f"MAILAgentTemplate(name={self.name!r}, comm_targets={self.comm_targets!r})"

    @property
    def system_prompt(self) -> str | None:
        """The system prompt given to the factory (``agent_params["system"]``, resolved),
        or ``None`` when the agent has none as text."""
        prompt = self._params.get("system")
        return prompt if isinstance(prompt, str) else None

    def instantiate(
        self,
        instance_params: Mapping[str, Any],
        additional_exclude_tools: Sequence[str] | None = None,
    ) -> MAILAgent:
        """Build the agent function with ``instance_params`` (e.g. ``user_token``).

        Raises :class:`SwarmDefinitionError` when the factory rejects its parameters.
        """
        exclude = sorted({*self.exclude_tools, *(additional_exclude_tools or ())})
        params: dict[str, Any] = {
            "name": self.name,
            "comm_targets": list(self.comm_targets),
            "tools": [a.to_tool_dict(self.tool_format) for a in self.actions],
            "enable_entrypoint": self.enable_entrypoint,
            "enable_interswarm": self.enable_interswarm,
            "tool_format": self.tool_format,
            "can_complete_tasks": self.can_complete_tasks,
            "exclude_tools": exclude,
            **self._params,
            **instance_params,
        }
        try:
            function = self._factory(**params)
        except TypeError as e:
            raise SwarmDefinitionError(
                f"factory rejected its parameters: {e}", agent=self.name, field="agent_params"
            ) from e
        if not callable(function):
            raise SwarmDefinitionError(
                "factory did not return a callable agent function", agent=self.name, field="factory"
            )
        return MAILAgent(
            self.name,
            self.factory,
            self.actions,
            function,
            self.comm_targets,
            self.agent_params,
            self.enable_entrypoint,
            self.enable_interswarm,
            self.can_complete_tasks,
            self.tool_format,
            exclude,
        )

    def shape(self) -> AgentShape:
        return AgentShape(
            self.name,
            self.comm_targets,
            [a.name for a in self.actions],
            self.enable_entrypoint,
            self.enable_interswarm,
            self.can_complete_tasks,
            self.exclude_tools,
        )

    def copy(self, **changes: Any) -> MAILAgentTemplate:
        values: dict[str, Any] = {
            "name": self.name,
            "factory": self.factory if isinstance(self.factory, str) else self._factory,
            "comm_targets": self.comm_targets,
            "actions": self.actions,
            "agent_params": self.agent_params,
            "enable_entrypoint": self.enable_entrypoint,
            "enable_interswarm": self.enable_interswarm,
            "can_complete_tasks": self.can_complete_tasks,
            "tool_format": self.tool_format,
            "exclude_tools": self.exclude_tools,
            "mcp_servers": self.mcp_servers,
        }
        values.update(changes)
        return MAILAgentTemplate(**values)

    # --- construction --------------------------------------------------------------------

    @classmethod
    def from_swarms_json(
        cls,
        agent_data: dict[str, Any],
        actions_by_name: Mapping[str, MAILAction] | None = None,
        *,
        swarm: str | None = None,
        policy: ReferencePolicy = DEFAULT_POLICY,
    ) -> MAILAgentTemplate:
        """Build a template from a ``swarms.json`` agent object.

        Raises :class:`SwarmDefinitionError` for a bad field or an unknown action name.
        """
        spec = parse_agent(agent_data, swarm)
        known = dict(actions_by_name or {})
        actions: list[MAILAction] = []
        for name in spec["actions"]:
            if name not in known:
                raise SwarmDefinitionError(
                    f"action '{name}' is not defined by the swarm.{did_you_mean(name, known)}",
                    swarm=swarm,
                    agent=spec["name"],
                    field="actions",
                )
            actions.append(known[name])
        try:
            return cls(
                spec["name"],
                spec["factory"],
                spec["comm_targets"],
                actions,
                spec["agent_params"],
                spec["enable_entrypoint"],
                spec["enable_interswarm"],
                spec["can_complete_tasks"],
                spec["tool_format"],
                spec["exclude_tools"],
                policy=policy,
                mcp_servers=spec["mcp_servers"],
            )
        except SwarmDefinitionError as e:
            raise e.located(swarm=swarm) from e

    @classmethod
    def from_swarm_json(
        cls, json_dump: str, actions_by_name: Mapping[str, MAILAction] | None = None
    ) -> MAILAgentTemplate:
        """Build a template from the JSON text of a ``swarms.json`` agent object."""
        try:
            data = json.loads(json_dump)
        except ValueError as e:
            raise SwarmDefinitionError(f"agent JSON is not valid: {e}") from e
        return cls.from_swarms_json(data, actions_by_name)

    @classmethod
    def from_example(cls, name: str, comm_targets: Sequence[str]) -> MAILAgentTemplate:
        """A template for one of the bundled example agents.

        ``name`` is one of ``supervisor``, ``weather``, ``math``, ``consultant``,
        ``analyst``. Raises :class:`SwarmDefinitionError` for any other name.
        """
        from mail.examples import example_agent_template_args  # noqa: PLC0415  # examples load on demand

        return cls(**example_agent_template_args(name, list(comm_targets)))


def describe_contacts(agent: str, templates: Mapping[str, Any]) -> str:
    """The block of an agent's system prompt that lists whom it can message."""
    lines = [_CONTACTS_HEADER]
    source = templates[agent]
    for target in source.comm_targets:
        other = templates.get(target)
        lines.append(f"\nName: {target}\nCapabilities:")
        if other is None:
            lines.append("- An agent of another swarm.")
            continue
        for tool_action in other.actions:
            lines.append(f"- {tool_action.name}: {tool_action.description}")
        params = getattr(other, "agent_params", {}) or {}
        builtin = [
            t
            for t in ("web_search", "code_interpreter")
            if params.get(f"enable_{t}") or t in str(params.get("tools", ""))
        ]
        lines.extend(f"- This agent can use {t.replace('_', ' ')}." for t in builtin)
        if not other.actions and not builtin:
            lines.append(_NO_TOOLS)
    return "\n".join(lines)


def with_contacts(system: str, contacts: str) -> str:
    """Replace (or add) the contacts block at the end of a system prompt."""
    head = system.split(_CONTACTS_HEADER, 1)[0].rstrip()
    return f"{head}\n\n{contacts}" if head else contacts


def refresh_contacts(agents: Sequence[MAILAgent], peers: Mapping[str, Any]) -> None:
    """Rebuild the contacts block of each agent function's ``system`` prompt (if it has one)."""
    for agent in agents:
        system = getattr(agent.function, "system", None)
        if isinstance(system, str):
            contacts = describe_contacts(agent.name, peers)
            setattr(agent.function, "system", with_contacts(system, contacts))  # noqa: B010  # duck-typed agent functions
