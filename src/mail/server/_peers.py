"""Remote swarms registered with this server (until the federation registry replaces it)."""

from __future__ import annotations

from datetime import UTC, datetime
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import aiohttp

from mail.errors import RemoteSwarmUnavailableError

if TYPE_CHECKING:
    from mail.api import MAILSwarmTemplate

__all__ = ["PeerStore"]

_TIMEOUT = aiohttp.ClientTimeout(total=10.0)


class PeerStore:
    """Registered remote swarms, checked against their ``GET /`` when registered."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Any]] = {}
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=_TIMEOUT)
        return self._session

    async def register(
        self,
        name: str,
        base_url: str,
        *,
        auth_token: str | None,
        volatile: bool,
        metadata: dict[str, Any] | None,
        local_name: str,
    ) -> None:
        """Read the peer's ``GET /`` and record it.

        Raises :class:`RemoteSwarmUnavailableError` when the peer does not answer like a
        MAIL server. Registering the local swarm's own name is accepted and ignored.
        """
        if name == local_name:
            return
        if not base_url.startswith(("http://", "https://")):
            raise RemoteSwarmUnavailableError(f"base_url must be an http(s) URL, got {base_url!r}")
        try:
            async with self._http().get(f"{base_url}/") as response:
                info = (
                    await response.json(content_type=None)
                    if response.status == HTTPStatus.OK
                    else None
                )
        except (aiohttp.ClientError, TimeoutError, ValueError) as e:
            raise RemoteSwarmUnavailableError(
                f"failed to get remote swarm info from {base_url}: {e}"
            ) from e
        if not isinstance(info, dict):
            raise RemoteSwarmUnavailableError(f"failed to get remote swarm info from {base_url}")
        swarm_info = info.get("swarm")
        swarm: dict[str, Any] = swarm_info if isinstance(swarm_info, dict) else {}
        self._entries[name] = {
            "swarm_name": name,
            "base_url": base_url,
            "version": info.get("protocol_version") or info.get("version"),
            "last_seen": datetime.now(UTC).isoformat(),
            "is_active": True,
            "latency": None,
            "swarm_description": swarm.get("description", ""),
            "keywords": swarm.get("keywords", []),
            "metadata": metadata,
            "public": bool(swarm.get("public", False)),
            "volatile": volatile,
            "auth_token": auth_token,
        }

    def public_entries(self, template: MAILSwarmTemplate, base_url: str) -> list[dict[str, Any]]:
        entries = [
            {k: v for k, v in e.items() if k not in ("public", "volatile", "auth_token")}
            for e in self._entries.values()
            if e["public"]
        ]
        if template.public:
            local = {
                "swarm_name": template.name,
                "base_url": base_url,
                "version": template.version,
                "last_seen": datetime.now(UTC).isoformat(),
                "is_active": True,
                "latency": None,
                "swarm_description": template.description,
                "keywords": template.keywords,
                "metadata": None,
            }
            entries.insert(0, local)
        return entries

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
