"""``mail doctor``'s check of the configured swarm's A2A agents (``a2a_agents``): each
agent card is read as the swarm would read it (through ``[stdlib.http]``'s address
guard), and the report names the agent, its version, skills and whether it streams, or
why its card could not be read."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from mail.cli._doctor_mcp import Finding

if TYPE_CHECKING:
    from mail.config import MAILConfig

__all__ = ["check_a2a_agents"]

_WITHIN = 10.0


def check_a2a_agents(config: MAILConfig, entries: list[Any]) -> list[Finding]:
    """One check per A2A agent of the configured swarm (``entries``: its raw
    ``a2a_agents``; none: no check)."""
    agents = [e for e in entries if isinstance(e, dict) and isinstance(e.get("url"), str)]
    if not agents:
        return []
    from mail.errors import ConfigurationError  # noqa: PLC0415
    from mail.stdlib.a2a import require_sdk  # noqa: PLC0415

    try:
        require_sdk()
    except ConfigurationError as e:
        return [("a2a agents", "fail", str(e), "pip install 'mail-swarms[a2a]'")]
    return asyncio.run(_probe_all(config, agents))


async def _probe_all(config: MAILConfig, agents: list[dict[str, Any]]) -> list[Finding]:
    return list(await asyncio.gather(*(_probe(config, a) for a in agents)))


async def _probe(config: MAILConfig, agent: dict[str, Any]) -> Finding:
    import httpx  # noqa: PLC0415
    from a2a.client import A2ACardResolver  # noqa: PLC0415
    from a2a.utils.errors import A2AError  # noqa: PLC0415

    from mail.errors import MAILError  # noqa: PLC0415
    from mail.net import guarded_async_client  # noqa: PLC0415
    from mail.stdlib.a2a import outbound_policy  # noqa: PLC0415

    name = f"a2a agent {agent.get('name')}"
    base, path = _card_url(agent["url"])
    try:
        guard = outbound_policy(config.stdlib)
        async with guarded_async_client(guard, timeout=_WITHIN) as http:
            resolver = A2ACardResolver(http, base, path) if path else A2ACardResolver(http, base)
            card = await asyncio.wait_for(resolver.get_agent_card(), _WITHIN)
    except (A2AError, MAILError, OSError, httpx.HTTPError, TimeoutError) as e:
        fix = "start the agent, or correct its url in a2a_agents (or [stdlib.http]'s rules)"
        return (name, "fail", f"cannot read its card at {agent['url']}: {e}", fix)
    streams = "streams" if card.capabilities.streaming else "does not stream"
    summary = f"{card.name} {card.version}: {len(card.skills)} skill(s), {streams}"
    return (name, "ok", summary, "")


def _card_url(url: str) -> tuple[str, str | None]:
    if url.endswith(".json"):
        scheme, _, rest = url.partition("://")
        host, _, path = rest.partition("/")
        return f"{scheme}://{host}", "/" + path
    return url.rstrip("/"), None
