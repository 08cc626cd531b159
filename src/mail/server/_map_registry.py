"""The agents registered on this process's ``/map`` WebSockets (:class:`AgentRegistry`)
and the served swarm's own, as the official SDK's ``Agent`` objects; the methods that
use them are :mod:`mail.server._map_agents`'s."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from mail.conversations.errors import ParticipantNotFoundError
from mail.conversations.models import now_ms

if TYPE_CHECKING:
    from mail.api import MAILSwarmTemplate

__all__ = ["AGENT_PREFIX", "AgentRegistry", "Notify", "Registered", "swarm_agents"]

logger = logging.getLogger("mail.server")

#: what pushes a JSON-RPC notification on the socket of the session that registered
Notify = Callable[[dict[str, Any]], Awaitable[None]]
#: the prefix of an agent's participant id
AGENT_PREFIX = "agent:"


class Registration(Protocol):
    """What :meth:`AgentRegistry.register` reads of ``map/agents/register``'s params."""

    name: str | None
    description: str | None
    role: str | None
    capabilities: dict[str, Any] | None
    metadata: dict[str, Any] | None


@dataclass(slots=True, kw_only=True)
class Registered:
    """A registered agent: its wire object (the SDK's ``Agent``), the session that
    registered it and how to reach that session's socket."""

    agent: dict[str, Any]
    session_id: str
    notify: Notify


@dataclass(slots=True)
class AgentRegistry:
    """The agents registered on this process's sockets, by id."""

    agents: dict[str, Registered] = field(default_factory=dict)

    def taken(self, template: MAILSwarmTemplate, agent_id: str) -> bool:
        """Whether ``agent_id`` is a registered agent's or an agent of the swarm's."""
        return agent_id in self.agents or agent_id in _swarm_names(template)

    def register(
        self,
        agent_id: str,
        owner: str,
        session_id: str,
        notify: Notify,
        params: Registration,
    ) -> dict[str, Any]:
        """Register an agent for ``owner`` (a principal, ``agent:<key id>``) with the id
        ``agent_id`` (:meth:`taken` is false for it)."""
        agent: dict[str, Any] = {
            "id": agent_id,
            "name": params.name or agent_id,
            "state": "idle",
            "ownerId": owner,
            "visibility": "public",
            "metadata": params.metadata or {},
            "lifecycle": {"registeredAt": now_ms()},
        }
        for name in ("description", "role", "capabilities"):
            value = getattr(params, name)
            if value is not None:
                agent[name] = value
        self.agents[agent_id] = Registered(agent=agent, session_id=session_id, notify=notify)
        logger.debug("MAP agent %s registered by %s", agent_id, owner)
        return agent

    def unregister(self, agent_id: str) -> dict[str, Any] | None:
        """Forget ``agent_id``; its last wire object (state ``stopped``), ``None`` if
        none."""
        gone = self.agents.pop(agent_id, None)
        if gone is None:
            return None
        return {**gone.agent, "state": "stopped"}

    def drop_session(self, session_id: str) -> list[str]:
        """Unregister the agents ``session_id`` registered (its socket closed)."""
        ids = [i for i, r in self.agents.items() if r.session_id == session_id]
        for agent_id in ids:
            del self.agents[agent_id]
        return ids

    def of_session(self, session_id: str) -> list[str]:
        """The ids of the agents ``session_id`` registered, oldest first."""
        return [i for i, r in self.agents.items() if r.session_id == session_id]

    def find(self, template: MAILSwarmTemplate, agent_id: str) -> dict[str, Any] | None:
        """The wire object of a registered or swarm agent (``agent:`` prefix allowed)."""
        agent_id = agent_id.removeprefix(AGENT_PREFIX)
        found = self.agents.get(agent_id)
        if found is not None:
            return found.agent
        return next((a for a in swarm_agents(template) if a["id"] == agent_id), None)

    def principal_of(self, template: MAILSwarmTemplate, participant_id: str) -> str:
        """Whom an invitation of ``participant_id`` gives access: a registered agent's
        owner, the swarm for its agents; any other id stands for itself. Raises
        :class:`~mail.conversations.errors.ParticipantNotFoundError` (10005) for an
        ``agent:`` id no agent has."""
        if not participant_id.startswith(AGENT_PREFIX):
            return participant_id
        agent_id = participant_id.removeprefix(AGENT_PREFIX)
        found = self.agents.get(agent_id)
        if found is not None:
            return str(found.agent["ownerId"])
        if agent_id in _swarm_names(template):
            return f"swarm:{template.name}"
        raise ParticipantNotFoundError(
            f"no agent {agent_id!r}: neither registered here (map/agents/list) nor an agent "
            f"of swarm {template.name!r}",
            participantId=participant_id,
        )


def _swarm_names(template: MAILSwarmTemplate) -> set[str]:
    return {agent.name for agent in template.agents}


def swarm_agents(template: MAILSwarmTemplate) -> list[dict[str, Any]]:
    """The agents of the served swarm as the SDK's ``Agent``s."""
    return [
        {
            "id": agent.name,
            "name": agent.name,
            "role": "swarm",
            "state": "active",
            "ownerId": f"swarm:{template.name}",
            "visibility": "public",
            "metadata": {
                "x-swarm": template.name,
                "x-entrypoint": agent.name == template.entrypoint,
            },
        }
        for agent in template.agents
    ]
