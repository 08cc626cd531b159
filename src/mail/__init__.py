"""mail: the Multi-Agent Interface Layer (MAIL) protocol, runtime, server and client.

``import mail`` is cheap: it loads no LLM, database or HTTP client library.
"""

from __future__ import annotations

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
from mail.core.tools import AgentToolCall
from mail.version import PROTOCOL_VERSION, __version__

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
]
