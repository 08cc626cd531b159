"""mail: the Multi-Agent Interface Layer (MAIL) protocol, runtime, server and client.

``import mail`` is cheap: it loads no LLM, database or HTTP client library.
"""

from __future__ import annotations

from mail.core.message import (
    MAILAddress,
    MAILBroadcast,
    MAILInterrupt,
    MAILInterswarmMessage,
    MAILMessage,
    MAILRequest,
    MAILResponse,
)
from mail.version import PROTOCOL_VERSION, __version__

__all__ = [
    "__version__",
    "PROTOCOL_VERSION",
    "MAILAddress",
    "MAILBroadcast",
    "MAILInterrupt",
    "MAILInterswarmMessage",
    "MAILMessage",
    "MAILRequest",
    "MAILResponse",
]
