"""``mail doctor``'s check of the configured swarm's MCP servers (``mcp_servers``).

Each declared server is started as ``mail server`` would start it (a session opened, its
tools listed) and closed again; the report names each server and how many tools it
offers, or why it could not be started (a warning for ``optional`` servers).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from mail.config import MAILConfig
    from mail.swarms_json import MCPServerSpec

__all__ = ["Finding", "check_mcp_servers"]

#: one check's ``(name, status, message, fix)``, made a ``Check`` by the doctor
Finding = tuple[str, Literal["ok", "warn", "fail"], str, str]


def check_mcp_servers(config: MAILConfig, env: Mapping[str, str]) -> list[Finding]:
    """One check per MCP server of the configured swarm (none when it declares none or
    does not load: the swarm check reports that); ``env`` resolves ``${VAR}`` references."""
    from mail.api import MAILSwarmTemplate  # noqa: PLC0415
    from mail.errors import ConfigurationError, MAILError  # noqa: PLC0415

    swarm = config.server.swarm
    try:
        servers = MAILSwarmTemplate.from_swarm_json_file(swarm.name, swarm.source).mcp_servers
    except (MAILError, OSError, ValueError, ImportError):
        return []
    if not servers:
        return []
    from mail.stdlib.mcp import require_sdk  # noqa: PLC0415

    try:
        require_sdk()
    except ConfigurationError as e:
        return [("mcp servers", "fail", str(e), "pip install 'mail-swarms[mcp]'")]
    return asyncio.run(_probe_all(servers, env))


async def _probe_all(servers: list[MCPServerSpec], env: Mapping[str, str]) -> list[Finding]:
    return list(await asyncio.gather(*(_probe(s, env) for s in servers)))


async def _probe(spec: MCPServerSpec, env: Mapping[str, str]) -> Finding:
    from mail.errors import ConfigurationError  # noqa: PLC0415
    from mail.stdlib.mcp.sessions import MCPConnection  # noqa: PLC0415

    name = f"mcp server {spec.name}"
    connection = MCPConnection(spec, env)
    try:
        await connection.start()
    except ConfigurationError as e:
        status: Literal["ok", "warn", "fail"] = "warn" if spec.optional else "fail"
        fix = "start the server (or correct its definition in mcp_servers)"
        if spec.optional:
            fix += "; it is optional: the swarm starts without its tools"
        return (name, status, str(e), fix)
    offered = [t.name for t in connection.tools if spec.offers(t.name)]
    await connection.close()
    summary = f"{spec.transport}: {len(offered)} tool(s) offered: {', '.join(offered)}"
    return (name, "ok", summary, "")
