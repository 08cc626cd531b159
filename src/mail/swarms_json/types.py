"""The shapes of a ``swarms.json`` file, after parsing (every optional field filled in)."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

__all__ = [
    "SwarmsJSONAction",
    "SwarmsJSONAgent",
    "SwarmsJSONFile",
    "SwarmsJSONSwarm",
    "ToolFormat",
]

ToolFormat = Literal["completions", "responses"]


class SwarmsJSONAction(TypedDict):
    name: str
    description: str
    parameters: dict[str, Any]
    function: str


class SwarmsJSONAgent(TypedDict):
    name: str
    factory: str
    comm_targets: list[str]
    agent_params: dict[str, Any]
    enable_entrypoint: bool
    enable_interswarm: bool
    can_complete_tasks: bool
    tool_format: ToolFormat
    actions: list[str]
    exclude_tools: list[str]
    #: names of the swarm's MCP servers whose tools the agent is offered
    mcp_servers: list[str]


class SwarmsJSONSwarm(TypedDict):
    name: str
    version: str
    entrypoint: str
    agents: list[SwarmsJSONAgent]
    actions: list[SwarmsJSONAction]
    description: str
    keywords: list[str]
    public: bool
    enable_interswarm: bool
    action_imports: list[str]
    breakpoint_tools: list[str]
    exclude_tools: list[str]
    enable_db_agent_histories: bool
    #: MCP servers whose tools agents are offered (objects as written, checked)
    mcp_servers: list[dict[str, Any]]
    #: remote A2A agents (their agent objects are in ``agents`` too)
    a2a_agents: list[dict[str, Any]]
    #: the limits of each task (:mod:`mail.core.budget`), or ``None``
    budget: dict[str, Any] | None


class SwarmsJSONFile(TypedDict):
    """A parsed ``swarms.json`` file, as v1.3.6's ``load_swarms_json_from_*`` return it.

    The file itself is a JSON array; ``swarms`` holds its swarm objects, checked and with
    their defaults filled in.
    """

    swarms: list[SwarmsJSONSwarm]
