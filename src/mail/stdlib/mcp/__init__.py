"""MCP in swarms: actions on any MCP server (:mod:`mail.stdlib.mcp.actions`) and MCP
servers as tool sources of a swarm (``mcp_servers``, described by :class:`MCPServerSpec`,
their sessions held by :mod:`mail.stdlib.mcp.sessions`); :func:`require_sdk` checks that
the SDK is installed.

The ``mcp`` SDK is loaded when a session is opened, not by importing this package; without
it, that raises :class:`~mail.errors.ConfigurationError` naming
``pip install 'mail-swarms[mcp]'``. See docs/stdlib.md.
"""

from __future__ import annotations

from mail.stdlib.mcp._connect import require_sdk
from mail.stdlib.mcp.actions import (
    mcp_call_tool,
    mcp_get_prompt,
    mcp_list_prompts,
    mcp_list_resources,
    mcp_list_tools,
    mcp_ping,
    mcp_read_resource,
)
from mail.swarms_json import MCPServerSpec

__all__ = [
    "MCPServerSpec",
    "mcp_call_tool",
    "mcp_get_prompt",
    "mcp_list_prompts",
    "mcp_list_resources",
    "mcp_list_tools",
    "mcp_ping",
    "mcp_read_resource",
    "require_sdk",
]
