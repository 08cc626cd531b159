"""The swarm registry: which swarms this server can reach, how, and whether they answer.

One :class:`SwarmRegistry` per server, shared by every caller's runtime, so a swarm
registered over HTTP is routable at once for everyone. It holds:

* the **local swarm** (always present, never volatile, never health-checked);
* **persistent** peers, saved to a JSON file (format in ``mail.net._registry_file``) with
  tokens stored only as ``${SWARM_AUTH_TOKEN_<NAME>}`` references resolved from the
  environment when a token is needed; a raw token given at registration is also kept in
  memory (never saved), so the peer is routable before the variable is set;
* **volatile** peers, kept in memory only; they may hold a raw token.

Saving writes a temporary file, fsyncs it and renames it over the old one, in a worker
thread; a failed save raises :class:`~mail.errors.StorageError` and undoes the change that
needed it. Health checks run in one owned background task and back off exponentially for
peers that stay down. Every accessor hands out copies.

This class owns the entry table and the public methods; the work lives beside it in
``mail.net``: ``_tokens`` (token references), ``_registry_file`` (the file, off the loop),
``_health`` (the check loop), ``_discovery`` and ``_peer_http`` (requests to peers).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from mail._limits import name_problem
from mail.errors import ConfigurationError, RemoteSwarmUnavailableError, StorageError
from mail.net._discovery import discover
from mail.net._endpoint import SwarmEndpoint, utc_now
from mail.net._health import HEALTH_TASK_NAME, HealthMonitor
from mail.net._peer_http import PeerClient
from mail.net._registry_file import (
    LOCAL_KEYS,
    decode_endpoints,
    decode_local,
    encode_registry,
    load_entries,
    save_entries,
)
from mail.net._session import SessionSource
from mail.net._tokens import (
    DEFAULT_TOKEN_PREFIX,
    check_variables,
    entry_token,
    move_to_env_refs,
    restore_raw_tokens,
    token_to_send,
    warn_if_raw,
)
from mail.version import PROTOCOL_VERSION

if TYPE_CHECKING:
    import aiohttp

__all__ = ["HEALTH_TASK_NAME", "SwarmEndpoint", "SwarmRegistry"]

logger = logging.getLogger("mail.net.registry")


class SwarmRegistry:
    """Endpoints of the local swarm and its peers, with persistence and health checks.

    ``persistence_file`` is where persistent peers are saved (``None``: memory only).
    ``env`` is where ``${VAR}`` token references are looked up (default ``os.environ``,
    read at resolution time). ``session`` is an external ``aiohttp.ClientSession`` or a shared
    :class:`~mail.net.SessionSource` (else one is created on first use and closed by
    :meth:`aclose`). Every peer request times out after
    ``request_timeout`` seconds. Health checks run every ``health_interval`` seconds; a peer
    that failed ``n`` times in a row is next checked after ``min(interval * 2**n,
    max_backoff)`` seconds, measured on ``clock``.
    """

    def __init__(
        self,
        local_swarm_name: str,
        local_base_url: str,
        persistence_file: str | Path | None = None,
        *,
        local_swarm_description: str = "",
        local_swarm_keywords: Iterable[str] | None = None,
        local_swarm_public: bool = False,
        local_version: str | None = None,
        env: Mapping[str, str] | None = None,
        session: aiohttp.ClientSession | SessionSource | None = None,
        request_timeout: float = 10.0,
        health_interval: float = 30.0,
        max_backoff: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not local_swarm_name:
            raise ConfigurationError("the local swarm name is required")
        self.local_swarm_name = local_swarm_name
        self.local_base_url = local_base_url.rstrip("/")
        self.local_swarm_description = local_swarm_description
        self.local_swarm_keywords = list(local_swarm_keywords or [])
        self.local_swarm_public = local_swarm_public
        self.local_version = local_version or PROTOCOL_VERSION
        self.persistence_file = Path(persistence_file) if persistence_file is not None else None
        self._env = env
        self._endpoints: dict[str, SwarmEndpoint] = {}
        self._save_lock = asyncio.Lock()
        self._client = PeerClient(session, request_timeout)
        self._health = HealthMonitor(
            self._endpoints,
            local_swarm_name,
            self._client,
            interval=health_interval,
            max_backoff=max_backoff,
            clock=clock,
            on_down=self._peer_down,
        )
        self._down_listeners: list[Callable[[str, str], None]] = []
        self.register_local_swarm(self.local_base_url)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __contains__(self, swarm_name: object) -> bool:
        return swarm_name in self._endpoints

    def __len__(self) -> int:
        return len(self._endpoints)

    # --- local swarm -----------------------------------------------------------------------

    def register_local_swarm(
        self,
        base_url: str | None = None,
        *,
        description: str | None = None,
        keywords: Iterable[str] | None = None,
        public: bool | None = None,
    ) -> SwarmEndpoint:
        """(Re)build the local swarm's entry; arguments left ``None`` keep their value.

        Returns a copy of the local endpoint.
        """
        if base_url is not None:
            self.local_base_url = base_url.rstrip("/")
        if description is not None:
            self.local_swarm_description = description
        if keywords is not None:
            self.local_swarm_keywords = list(keywords)
        if public is not None:
            self.local_swarm_public = public
        self._endpoints[self.local_swarm_name] = SwarmEndpoint(
            swarm_name=self.local_swarm_name,
            base_url=self.local_base_url,
            version=self.local_version,
            last_seen=utc_now(),
            is_active=True,
            swarm_description=self.local_swarm_description,
            keywords=list(self.local_swarm_keywords),
            public=self.local_swarm_public,
            volatile=False,
        )
        return self._copy(self._endpoints[self.local_swarm_name])

    # --- reading ---------------------------------------------------------------------------

    def _copy(self, endpoint: SwarmEndpoint) -> SwarmEndpoint:
        result = endpoint.copy()
        if endpoint.swarm_name == self.local_swarm_name:
            result.last_seen = utc_now()  # we are up whenever we answer
        return result

    def _select(self, keep: Callable[[SwarmEndpoint], bool]) -> dict[str, SwarmEndpoint]:
        return {name: self._copy(e) for name, e in self._endpoints.items() if keep(e)}

    def get_swarm_endpoint(self, swarm_name: str) -> SwarmEndpoint | None:
        """A copy of the entry for ``swarm_name``, or ``None`` when unknown."""
        endpoint = self._endpoints.get(swarm_name)
        return self._copy(endpoint) if endpoint is not None else None

    def get_all_endpoints(self) -> dict[str, SwarmEndpoint]:
        """Copies of every entry, the local swarm included, by name."""
        return self._select(lambda e: True)

    def get_public_endpoints(self) -> dict[str, SwarmEndpoint]:
        """Copies of the entries marked public (what ``GET /swarms`` lists)."""
        return self._select(lambda e: e.public)

    def get_active_endpoints(self) -> dict[str, SwarmEndpoint]:
        """Copies of the entries whose last contact succeeded."""
        return self._select(lambda e: e.is_active)

    def get_persistent_endpoints(self) -> dict[str, SwarmEndpoint]:
        """Copies of the non-volatile entries (the local swarm included)."""
        return self._select(lambda e: not e.volatile)

    # --- tokens ----------------------------------------------------------------------------

    def _environ(self) -> Mapping[str, str]:
        return self._env if self._env is not None else os.environ

    def _peers(self) -> list[SwarmEndpoint]:
        return [e for name, e in self._endpoints.items() if name != self.local_swarm_name]

    def get_resolved_auth_token(self, swarm_name: str) -> str | None:
        """The token to send to ``swarm_name``: ``${VAR}`` is looked up, a raw token is itself.

        A persistent peer registered with a raw token uses that token (kept in memory)
        while its variable is unset or empty. ``None`` when the swarm is unknown, has no
        token, or its variable is unset or empty (logged as a warning).
        """
        endpoint = self._endpoints.get(swarm_name)
        return None if endpoint is None else token_to_send(endpoint, self._environ())

    def validate_environment_variables(self) -> dict[str, bool]:
        """Map each variable named by a peer's ``${VAR}`` reference to whether it is set.

        Unset or empty variables are logged as warnings.
        """
        return check_variables(self._peers(), self._environ())

    async def migrate_auth_tokens_to_env_refs(
        self, env_var_prefix: str = DEFAULT_TOKEN_PREFIX
    ) -> dict[str, str]:
        """Replace raw tokens of persistent peers by ``${<env_var_prefix>_<NAME>}`` references
        (v1.3.6's parameter name; awaited here, as every registry method that saves is).

        Returns ``{variable: token}`` for the operator to export (the tokens are not
        written anywhere; they stay usable in memory until the variables are set), then
        saves. Raises :class:`StorageError` (and restores the raw tokens) when the save
        fails.
        """
        moved = move_to_env_refs(self._peers(), self._environ(), env_var_prefix)
        if moved:
            await self._save_or_undo(lambda: restore_raw_tokens(moved))
        return {variable: token for _, variable, token in moved}

    # --- registration ----------------------------------------------------------------------

    async def register_swarm(
        self,
        swarm_name: str,
        base_url: str,
        auth_token: str | None = None,
        metadata: dict[str, Any] | None = None,
        volatile: bool = True,
    ) -> SwarmEndpoint:
        """Read the peer's ``GET {base_url}/`` and record it; returns a copy of the entry.

        A volatile entry keeps ``auth_token`` in memory. A persistent one stores
        ``${SWARM_AUTH_TOKEN_<NAME>}`` and is saved; the raw token is never written but is
        kept in memory and used until that variable is set (set it for the peer to stay
        reachable after a restart). The entry records whether the peer speaks protocol 1.1
        (its ``GET /`` has no ``protocol_version``). An existing entry of that name is
        replaced. Registering the local swarm's name changes nothing and returns the local
        entry.

        Raises :class:`ConfigurationError` for an empty name or one that does not match
        :data:`mail._limits.NAME_PATTERN`,
        :class:`RemoteSwarmUnavailableError` naming the URL when the peer is not an
        http(s) URL, unreachable or does not answer like a MAIL server, and
        :class:`StorageError` when saving fails (the previous entry is then restored).
        """
        if not swarm_name:
            raise ConfigurationError("a swarm name is required to register a swarm")
        problem = name_problem(swarm_name)
        if problem is not None:
            raise ConfigurationError(f"swarm name {problem}")
        if swarm_name == self.local_swarm_name:
            logger.warning("not registering %r: it is the local swarm's own name", swarm_name)
            return self._copy(self._endpoints[swarm_name])
        base = base_url.strip().rstrip("/")
        info = await self._client.read_root(base)
        if info.name is not None and info.name != swarm_name:
            logger.warning(
                "swarm registered as %r calls itself %r; messages to it must use %r",
                swarm_name,
                info.name,
                swarm_name,
            )
        ref, memory = entry_token(swarm_name, auth_token, volatile=volatile, env=self._environ())
        endpoint = info.entry(
            swarm_name,
            base,
            volatile=volatile,
            next_check=self._health.clock() + self._health.interval,
            metadata=copy.deepcopy(metadata),
            auth_token_ref=ref,
            memory_token=memory,
        )
        previous = self._endpoints.get(swarm_name)
        self._endpoints[swarm_name] = endpoint
        logger.info(
            "registered swarm %r at %s (%s)",
            swarm_name,
            base,
            "volatile" if volatile else "persistent",
        )
        await self._registered(swarm_name, previous)
        return self._copy(endpoint)

    async def unregister_swarm(self, swarm_name: str) -> bool:
        """Forget ``swarm_name``; False when unknown or local. Saves when it was persistent.

        Raises :class:`StorageError` when that save fails (the entry is then restored).
        """
        if swarm_name == self.local_swarm_name:
            logger.warning("the local swarm %r cannot be unregistered", swarm_name)
            return False
        endpoint = self._endpoints.pop(swarm_name, None)
        if endpoint is None:
            return False
        logger.info("unregistered swarm %r", swarm_name)
        await self._unregistered(swarm_name, endpoint)
        return True

    def cleanup_volatile_endpoints(self) -> list[str]:
        """Forget every volatile entry; returns their names (the file is unaffected)."""
        names = [n for n, e in self._endpoints.items() if e.volatile]
        for name in names:
            del self._endpoints[name]
        logger.info("removed %d volatile swarm(s)", len(names))
        return names

    async def _registered(self, swarm_name: str, previous: SwarmEndpoint | None) -> None:
        """Persist the entry just (re)registered; ``previous`` is what it replaced."""
        endpoint = self._endpoints[swarm_name]
        if not endpoint.volatile or (previous is not None and not previous.volatile):
            await self._save_or_undo(lambda: self._put_back(swarm_name, previous))

    async def _unregistered(self, swarm_name: str, endpoint: SwarmEndpoint) -> None:
        """Persist the removal of ``endpoint``."""
        if not endpoint.volatile:
            await self._save_or_undo(lambda: self._put_back(swarm_name, endpoint))

    def _put_back(self, swarm_name: str, previous: SwarmEndpoint | None) -> None:
        if previous is None:
            self._endpoints.pop(swarm_name, None)
        else:
            self._endpoints[swarm_name] = previous

    async def _save_or_undo(self, undo: Callable[[], None]) -> None:
        try:
            await self.save()
        except StorageError:
            undo()  # memory and disk agree again
            raise

    # --- persistence -----------------------------------------------------------------------

    def to_dict(self, *, include_volatile: bool = True) -> dict[str, Any]:
        """The registry in the file format; tokens appear only as ``${VAR}`` references."""
        kept = (e for e in self._endpoints.values() if include_volatile or not e.volatile)
        return encode_registry(self._local_fields(), map(self._copy, kept))

    def _local_fields(self) -> dict[str, Any]:
        values = (
            self.local_swarm_name,
            self.local_base_url,
            self.local_swarm_description,
            list(self.local_swarm_keywords),
            self.local_swarm_public,
        )
        return dict(zip(LOCAL_KEYS, values, strict=True))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **kwargs: Any) -> SwarmRegistry:
        """A registry with the identity and entries of ``data`` (the :meth:`to_dict` format).

        ``kwargs`` go to the constructor (``persistence_file``, ``env``, ``session``...).
        Raises :class:`ConfigurationError` when ``data`` is malformed.
        """
        registry = cls(**decode_local(data), **kwargs)
        registry._merge(decode_endpoints(data.get("endpoints", {}), "registry data"), "data")
        return registry

    def _merge(self, endpoints: list[SwarmEndpoint], source: str) -> int:
        loaded = 0
        for endpoint in endpoints:
            name = endpoint.swarm_name
            if name == self.local_swarm_name or name in self._endpoints:
                continue
            warn_if_raw(endpoint, source)
            self._endpoints[name] = endpoint
            loaded += 1
        return loaded

    async def load(self) -> int:
        """Add the entries saved in the persistence file; returns how many were added.

        A missing file (or no file configured) adds nothing. Entries already registered and
        the local swarm's are skipped; the file's ``local_*`` fields never override the
        configured identity (a difference is logged). Raises :class:`ConfigurationError`
        naming the file when it is not a valid registry file, :class:`StorageError` when
        it cannot be read.
        """
        path = self.persistence_file
        if path is None:
            return 0
        endpoints = await load_entries(path, self._local_fields())
        if endpoints is None:
            return 0
        loaded = self._merge(endpoints, str(path))
        logger.info("loaded %d swarm(s) from %s", loaded, path)
        self.validate_environment_variables()
        return loaded

    async def save(self) -> None:
        """Write the persistent entries to the persistence file, atomically, off the loop.

        Does nothing when no file is configured. Raises :class:`StorageError` (and logs)
        when the file cannot be written; the previous file is then left intact.
        """
        path = self.persistence_file
        if path is None:
            return
        async with self._save_lock:  # saves land in the order they were asked for
            await save_entries(path, self.to_dict(include_volatile=False))

    # Names of the original implementation.
    load_persistent_endpoints = load
    save_persistent_endpoints = save

    # --- health ----------------------------------------------------------------------------

    @property
    def health_interval(self) -> float:
        """Seconds between health-check rounds."""
        return self._health.interval

    @property
    def max_backoff(self) -> float:
        """Longest delay before re-checking a peer that keeps failing."""
        return self._health.max_backoff

    async def check_health(self, swarm_name: str) -> bool:
        """GET the peer's health URL now and update its entry; True when it answered 200.

        Success marks it active, sets ``last_seen`` and ``latency`` (the round trip in
        seconds) and resets the backoff; failure marks it inactive and doubles the delay
        before its next scheduled check. The local swarm is always healthy. Raises
        :class:`RemoteSwarmUnavailableError` when the swarm is unknown.
        """
        endpoint = self._endpoints.get(swarm_name)
        if endpoint is None:
            raise RemoteSwarmUnavailableError(f"unknown swarm {swarm_name!r}")
        if swarm_name == self.local_swarm_name:
            return True
        return await self._health.check(endpoint)

    async def run_health_checks(self, *, only_due: bool = True) -> dict[str, bool]:
        """Check every peer whose backoff has elapsed (every peer with ``only_due=False``).

        Checks run concurrently; returns ``{name: healthy}`` for the peers checked.
        """
        return await self._health.run(only_due=only_due)

    def on_peer_down(self, listener: Callable[[str, str], None]) -> None:
        """Call ``listener(name, problem)`` each time a peer fails a health check (it is
        then inactive)."""
        self._down_listeners.append(listener)

    def _peer_down(self, name: str, problem: str) -> None:
        for listener in self._down_listeners:
            listener(name, problem)

    def start_health_checks(self) -> asyncio.Task[None]:
        """Start the health loop, named ``mail-registry-health``; returns its task.

        One loop per registry: while it runs, the same task is returned. The loop checks
        due peers at once, then every ``health_interval`` seconds, until
        :meth:`stop_health_checks`. Must be called with a running event loop.
        """
        return self._health.start()

    @property
    def health_checks_running(self) -> bool:
        """True while the health loop runs."""
        return self._health.running

    async def stop_health_checks(self) -> None:
        """Cancel the health loop and wait for it to end (no-op when not running)."""
        await self._health.stop()

    # --- discovery -------------------------------------------------------------------------

    async def discover_swarms(
        self, discovery_urls: list[str], *, allow_url: Callable[[str], bool] | None = None
    ) -> list[str]:
        """Register (as volatile) the swarms listed by each URL's ``GET {url}/swarms``.

        Items are read by ``swarm_name`` (``name`` for old peers); the local swarm and
        swarms already known are skipped, and at most 64 are taken from one listing. A URL
        or a listed swarm that fails is logged and skipped. With ``allow_url``, a discovery
        URL or listed ``base_url`` for which it returns False is skipped too (logged).
        URLs are read, and the swarms of a listing registered, concurrently. Returns the
        names added.
        """
        return await discover(
            discovery_urls,
            list_swarms=self._client.list_swarms,
            is_known=lambda name: name == self.local_swarm_name or name in self._endpoints,
            register=lambda name, url, metadata: self.register_swarm(name, url, metadata=metadata),
            allow_url=allow_url,
        )

    async def aclose(self) -> None:
        """Stop the health loop and close the HTTP session if the registry created it."""
        await self.stop_health_checks()
        await self._client.aclose()
