"""A2A agents as members of a swarm: ``swarms.json``'s ``a2a_agents`` become agents whose
function, :class:`A2AAgentFunction`, asks the remote agent with ``a2a-sdk``'s client.

The SDK is loaded when an A2A agent is built, not by importing this package; without it,
that raises :class:`~mail.errors.ConfigurationError` naming
``pip install 'mail-swarms[a2a]'``. See docs/a2a.md.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from mail.errors import ConfigurationError
from mail.stdlib._settings import policy
from mail.stdlib.a2a._agent import A2AAgentFunction, Outcome

if TYPE_CHECKING:
    from mail.config import StdlibConfig
    from mail.net import AddressPolicy

__all__ = ["A2AAgentFunction", "Outcome", "a2a_agent", "outbound_policy", "require_sdk"]

_MISSING = "A2A agents need the a2a-sdk package: pip install 'mail-swarms[a2a]'"
_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def require_sdk() -> None:
    """Raise :class:`ConfigurationError` naming the extra when ``a2a-sdk`` is missing."""
    try:
        import a2a.client  # noqa: F401, PLC0415  # the optional SDK
    except ImportError as e:
        raise ConfigurationError(_MISSING) from e


def outbound_policy(settings: StdlibConfig) -> AddressPolicy:
    """The address guard A2A agents' calls go through: ``[stdlib.http]``'s."""
    return policy(settings.http)


def a2a_agent(
    *,
    name: str,
    url: str,
    token: str | None = None,
    streaming: bool = True,
    timeout: float = 300.0,
    **_params: Any,
) -> A2AAgentFunction:
    """The factory ``swarms.json``'s ``a2a_agents`` use: the agent function of the A2A
    agent ``name`` at ``url``. ``token`` is ``${ENV_NAME}``, read from the environment now
    (:class:`ConfigurationError` when unset), or ``None`` for no ``Authorization``."""
    require_sdk()
    return A2AAgentFunction(
        name, url, token=_resolved(name, token), streaming=streaming, timeout=timeout
    )


def _resolved(name: str, token: str | None) -> str | None:
    if token is None:
        return None
    match = _REFERENCE.match(token)
    if match is None:
        raise ConfigurationError(f"A2A agent {name}: auth.token must be a ${{ENV_NAME}} reference")
    value = os.environ.get(match[1])
    if not value:
        raise ConfigurationError(f"A2A agent {name}: auth.token names {match[1]}, which is not set")
    return value
