"""The MCP servers of a swarm template (``mcp_servers``) and their sessions.

A template that declares servers opens them with :meth:`TemplateMCP.start` (async: one
session per server, shared by every swarm the template instantiates) and closes them with
:meth:`TemplateMCP.close`. The ``mcp`` SDK is imported only then, through
:mod:`mail.stdlib.mcp.sessions`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mail.api._actions import MAILAction
from mail.errors import ConfigurationError
from mail.swarms_json import MCPServerSpec, check_agent_mcp_servers, parse_mcp_servers

if TYPE_CHECKING:
    from mail.api._agents import MAILAgentTemplate
    from mail.stdlib.mcp.sessions import MCPToolbox

__all__ = ["TemplateMCP"]


class TemplateMCP:
    """A template's MCP servers: their definitions and, once started, their sessions.

    Raises :class:`SwarmDefinitionError` (from :func:`parse_mcp_servers`) when a server
    definition is invalid.
    """

    def __init__(self, swarm: str, servers: Sequence[MCPServerSpec | Mapping[str, Any]] | None):
        self.swarm = swarm
        self.specs = parse_mcp_servers(list(servers or ()), swarm)
        self.toolbox: MCPToolbox | None = None
        self._owned = True  # a subset shares its parent's sessions and does not close them
        self._actions: dict[str, list[MAILAction]] = {}

    @property
    def started(self) -> bool:
        return self.toolbox is not None

    def check_agents(self, agents: Sequence[MAILAgentTemplate]) -> None:
        """Each agent's ``mcp_servers`` names servers of the swarm."""
        for agent in agents:
            check_agent_mcp_servers(self.swarm, agent.name, agent.mcp_servers, self.specs)

    async def start(self, env: Mapping[str, str] | None = None) -> None:
        """Open every server's session and list its tools (no-op when started or when
        there are no servers). Raises :class:`ConfigurationError`: one line naming the
        server that failed and why, or the missing ``mcp`` package."""
        if self.toolbox is not None or not self.specs:
            return
        from mail.stdlib.mcp.sessions import MCPToolbox  # noqa: PLC0415  # stdlib sits above the api

        toolbox = MCPToolbox(self.specs, os.environ if env is None else env)
        await toolbox.start()
        self.toolbox = toolbox
        self._actions = {
            server: [MAILAction(t.name, t.description, t.parameters, t.call) for t in tools]
            for server, tools in toolbox.actions.items()
        }

    async def close(self) -> None:
        """Close the sessions (stdio servers exit); the servers may be started again."""
        toolbox, self.toolbox = self.toolbox, None
        self._actions = {}
        if toolbox is not None and self._owned:
            await toolbox.close()

    def agents_with_tools(self, agents: Sequence[MAILAgentTemplate]) -> list[MAILAgentTemplate]:
        """The agent templates, those that name servers with the servers' tools as extra
        actions. Raises :class:`ConfigurationError` when servers are declared but not
        started."""
        if not self.specs:
            return list(agents)
        if self.toolbox is None:
            names = ", ".join(s.name for s in self.specs)
            raise ConfigurationError(
                f"swarm '{self.swarm}' declares MCP servers ({names}): call "
                "'await template.start_mcp()' (or use 'async with template:') before "
                "instantiate()"
            )
        out = []
        for agent in agents:
            extra = [a for name in agent.mcp_servers for a in self._actions.get(name, [])]
            out.append(agent.copy(actions=[*agent.actions, *extra]) if extra else agent)
        return out

    def subset(self, names: Sequence[str]) -> TemplateMCP:
        """The servers ``names`` (a subswarm's), sharing the started sessions."""
        kept = TemplateMCP(self.swarm, [s for s in self.specs if s.name in set(names)])
        kept.toolbox = self.toolbox if kept.specs else None
        kept._actions = {n: a for n, a in self._actions.items() if n in set(names)}
        kept._owned = False
        return kept
