"""mail: the Multi-Agent Interface Layer (MAIL) protocol, runtime, server and client.

``import mail`` is cheap: it loads no LLM, database or HTTP client library, and not even
pydantic. The public names below are loaded from their modules on first access (PEP 562),
so ``from mail import MAILSwarmTemplate`` works as usual while ``mail --help`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mail.version import PROTOCOL_VERSION, __version__

if TYPE_CHECKING:
    from mail.api import (
        MAILAction,
        MAILAgent,
        MAILAgentTemplate,
        MAILSwarm,
        MAILSwarmTemplate,
        action,
    )
    from mail.core.message import (
        MAILAddress,
        MAILBroadcast,
        MAILInterrupt,
        MAILInterswarmMessage,
        MAILMessage,
        MAILRequest,
        MAILResponse,
    )
    from mail.core.runtime import MAILRuntime
    from mail.core.tools import AgentToolCall

__all__ = [
    "__version__",
    "PROTOCOL_VERSION",
    "AgentToolCall",
    "MAILAction",
    "MAILAgent",
    "MAILAgentTemplate",
    "MAILSwarm",
    "MAILSwarmTemplate",
    "action",
    "MAILAddress",
    "MAILBroadcast",
    "MAILInterrupt",
    "MAILInterswarmMessage",
    "MAILMessage",
    "MAILRequest",
    "MAILResponse",
    "MAILRuntime",
]

# Public name -> module that defines it; loaded on first attribute access.
_LAZY: dict[str, str] = {
    "AgentToolCall": "mail.core.tools",
    "MAILAction": "mail.api",
    "MAILAgent": "mail.api",
    "MAILAgentTemplate": "mail.api",
    "MAILSwarm": "mail.api",
    "MAILSwarmTemplate": "mail.api",
    "action": "mail.api",
    "MAILAddress": "mail.core.message",
    "MAILBroadcast": "mail.core.message",
    "MAILInterrupt": "mail.core.message",
    "MAILInterswarmMessage": "mail.core.message",
    "MAILMessage": "mail.core.message",
    "MAILRequest": "mail.core.message",
    "MAILResponse": "mail.core.message",
    "MAILRuntime": "mail.core.runtime",
}


# Hidden from type checkers, which see the TYPE_CHECKING imports above instead; a visible
# module ``__getattr__`` would make every misspelt ``mail.X`` type-check.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        """Load a public name from its defining module on first access (PEP 562)."""
        module_name = _LAZY.get(name)
        if module_name is None:
            raise AttributeError(f"module 'mail' has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name), name)
        globals()[name] = value  # later lookups skip __getattr__
        return value


def __dir__() -> list[str]:
    """Module attributes, including the public names not loaded yet."""
    return sorted({*globals(), *__all__})
