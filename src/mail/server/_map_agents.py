"""MAP's agents: ``map/agents/register``, ``map/agents/unregister``, ``map/agents/list``
and ``map/agents/get``, over the :class:`AgentRegistry` of the server.

An agent is registered on a ``/map`` WebSocket by a session authenticated with an API key
of role ``agent`` (other roles: 1003). It belongs to that key (``ownerId``: ``agent:<key
id>``) and to that socket: it is unregistered when the socket closes, as the official
SDK's reference server does, or by ``map/agents/unregister`` (its owner or an admin). A
session acts in MAP Mail as its first registered agent (participant ``agent:<agent id>``)
and receives the messages ``map/send`` addresses to its agents as ``map/message``
notifications. The agents of the served swarm's template are listed too, as ``role:
"swarm"`` with ``metadata["x-swarm"]``; they cannot be registered over or unregistered.

The registry is the process's: in cluster mode each replica lists and delivers to the
agents connected to it, and the swarm's agents.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from mail.conversations import Params, check_params
from mail.server._map_registry import AGENT_PREFIX, AgentRegistry, Notify, swarm_agents
from mail.server._map_rpc import AGENT_EXISTS, AGENT_NOT_FOUND, AUTH_PERMISSION_DENIED, RpcError

if TYPE_CHECKING:
    from mail.api import MAILSwarmTemplate

__all__ = ["AGENT_METHODS", "agents_call"]

AGENT_METHODS = (
    "map/agents/register",
    "map/agents/unregister",
    "map/agents/list",
    "map/agents/get",
)
_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"

AgentId = Annotated[str, Field(pattern=_ID)]


class AgentsRegister(Params):
    """``map/agents/register`` (the SDK's ``AgentsRegisterRequestParams``; fields it has
    and this server does not use, such as ``parent``, ``scopes`` or ``visibility``, are
    ignored)."""

    agentId: AgentId | None = None
    name: Annotated[str, Field(max_length=200)] | None = None
    description: Annotated[str, Field(max_length=2000)] | None = None
    role: Annotated[str, Field(max_length=200)] | None = None
    capabilities: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


class AgentsListFilter(Params):
    states: list[str] | None = None
    roles: list[str] | None = None
    ownerId: str | None = None


class AgentsList(Params):
    filter: AgentsListFilter | None = None
    limit: Annotated[int, Field(ge=1)] | None = None


class AgentsGet(Params):
    agentId: Annotated[str, Field(min_length=1)]


class AgentsUnregister(AgentsGet):
    reason: str | None = None


async def agents_call(
    registry: AgentRegistry,
    template: MAILSwarmTemplate,
    who: tuple[str, str, bool],
    method: str,
    params: Any,
    notify: Notify | None,
) -> dict[str, Any]:
    """Answer a ``map/agents/*`` ``method`` for ``who``: ``(principal, session id,
    admin)``; ``notify`` reaches the session's socket (``None`` over HTTP: no
    registration)."""
    principal, _, admin = who
    if method == "map/agents/register":
        checked = check_params(AgentsRegister, params if params is not None else {})
        return {"agent": _register(registry, template, checked, who, notify)}
    if method == "map/agents/list":
        listed = check_params(AgentsList, params if params is not None else {})
        return {"agents": _listed(registry, template, listed)}
    model = AgentsGet if method == "map/agents/get" else AgentsUnregister
    agent_id = check_params(model, params).agentId
    found = registry.find(template, agent_id)
    if found is None:
        raise RpcError(
            AGENT_NOT_FOUND,
            f"no agent {agent_id!r} (map/agents/list lists them)",
            {"name": "AGENT_NOT_FOUND", "agentId": agent_id},
        )
    if method == "map/agents/get":
        return {"agent": found}
    if found["id"] not in registry.agents:
        raise RpcError(
            AUTH_PERMISSION_DENIED, f"{found['id']!r} is an agent of the swarm: not unregistered"
        )
    if found["ownerId"] != principal and not admin:
        raise RpcError(
            AUTH_PERMISSION_DENIED,
            f"agent {found['id']!r} is {found['ownerId']}'s: only it (or an admin) unregisters it",
        )
    return {"agent": registry.unregister(found["id"])}


def _register(
    registry: AgentRegistry,
    template: MAILSwarmTemplate,
    checked: AgentsRegister,
    who: tuple[str, str, bool],
    notify: Notify | None,
) -> dict[str, Any]:
    principal, session_id, _ = who
    if not principal.startswith(AGENT_PREFIX) or notify is None:
        raise RpcError(
            AUTH_PERMISSION_DENIED,
            f"map/agents/register needs a /map WebSocket authenticated with an API key "
            f"of role 'agent' (this session is {principal})",
        )
    agent_id = checked.agentId or f"agent-{secrets.token_hex(8)}"
    if registry.taken(template, agent_id):
        raise RpcError(
            AGENT_EXISTS,
            f"agent {agent_id!r} already exists: register with another agentId, or none "
            "to get a fresh one",
            {"name": "AGENT_EXISTS", "agentId": agent_id},
        )
    return registry.register(agent_id, principal, session_id, notify, checked)


def _listed(
    registry: AgentRegistry, template: MAILSwarmTemplate, params: AgentsList
) -> list[dict[str, Any]]:
    agents = [*swarm_agents(template), *(r.agent for r in registry.agents.values())]
    wanted = params.filter
    if wanted is not None:
        agents = [
            a
            for a in agents
            if (wanted.states is None or a["state"] in wanted.states)
            and (wanted.roles is None or a.get("role") in wanted.roles)
            and (wanted.ownerId is None or a["ownerId"] == wanted.ownerId)
        ]
    return agents[: params.limit] if params.limit is not None else agents
