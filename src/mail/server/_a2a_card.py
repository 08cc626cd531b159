"""The swarm's A2A agent card: its name and description, one skill per entrypoint agent,
streaming, the bearer scheme of our API keys, and the JSON-RPC and HTTP+JSON interfaces."""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_1_0, TransportProtocol

from mail.server._a2a_paths import JSONRPC_PATH, REST_PATH
from mail.version import __version__

if TYPE_CHECKING:
    from mail.api import MAILSwarmTemplate

__all__ = ["agent_card"]

#: the name of our bearer scheme in the card
_SCHEME = "bearer"
_MODES = ["text/plain"]


def agent_card(template: MAILSwarmTemplate, base_url: str) -> AgentCard:
    """The card of ``template``'s swarm served at ``base_url`` (no trailing slash)."""
    return AgentCard(
        name=template.name,
        description=template.description or f"The MAIL swarm {template.name}",
        version=template.version or __version__,
        supported_interfaces=[
            AgentInterface(
                url=base_url + JSONRPC_PATH,
                protocol_binding=TransportProtocol.JSONRPC,
                protocol_version=PROTOCOL_VERSION_1_0,
            ),
            AgentInterface(
                url=base_url + REST_PATH,
                protocol_binding=TransportProtocol.HTTP_JSON,
                protocol_version=PROTOCOL_VERSION_1_0,
            ),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes={
            _SCHEME: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    description="A MAIL API key of role user or admin: "
                    "`Authorization: Bearer <key>`",
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={_SCHEME: StringList()})],
        default_input_modes=_MODES,
        default_output_modes=_MODES,
        skills=[_skill(template, name) for name in _entrypoints(template)],
    )


def _entrypoints(template: MAILSwarmTemplate) -> list[str]:
    """The swarm's entrypoint first, then the other agents that accept tasks."""
    others = [a.name for a in template.agents if a.enable_entrypoint]
    return [template.entrypoint, *(n for n in others if n != template.entrypoint)]


def _skill(template: MAILSwarmTemplate, name: str) -> AgentSkill:
    default = name == template.entrypoint
    how = "the swarm's entrypoint" if default else "send `metadata.entrypoint` to ask it"
    return AgentSkill(
        id=name,
        name=name,
        description=f"Agent {name} of swarm {template.name} ({how}).",
        tags=list(template.keywords) or [template.name],
    )
