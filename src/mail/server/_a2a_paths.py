"""Where the A2A façade answers (no SDK needed to know it)."""

from __future__ import annotations

__all__ = ["CARD_PATH", "JSONRPC_PATH", "REST_PATH"]

#: where the SDK serves the agent card (its ``AGENT_CARD_WELL_KNOWN_PATH``)
CARD_PATH = "/.well-known/agent-card.json"
#: the JSON-RPC binding, and the prefix of the HTTP+JSON binding's routes
JSONRPC_PATH = "/a2a"
REST_PATH = "/a2a"
