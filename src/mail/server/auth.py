"""Who is calling: API keys checked in-process (embedded) or by an external auth service.

Two :class:`Authenticator` implementations turn the API key a caller presents into a
:class:`Caller` (role and id):

* :class:`EmbeddedAuth` (the default): keys for ``admin``, ``user`` and ``agent`` are generated
  on first start into a local credentials file (mode 0600) that ``mail client`` also reads, and
  compared in constant time.
* :class:`RemoteAuth` (when ``AUTH_ENDPOINT`` and ``TOKEN_INFO_ENDPOINT`` are configured): the
  original's exchange (``POST`` login with the key for a token, ``GET`` token info with the
  token) over one shared HTTP session with a timeout; successful lookups are cached briefly
  and concurrent lookups of one key share a single exchange, so a ``/message`` costs at most
  one exchange (the original makes about six).

:func:`build_authenticator` picks one from :class:`mail.config.AuthConfig`. At the bottom,
:func:`bearer_token` and :class:`AuthGate` are the FastAPI side: routes depend on
``gate.require("admin", "user")`` and friends. Everything here raises :mod:`mail.errors`
exceptions (never ``HTTPException``): :class:`~mail.errors.AuthenticationError` and
:class:`~mail.errors.PermissionDeniedError` (401), :class:`~mail.errors.AuthServiceError` (503).

API keys and tokens are never logged; where a log line must tell keys apart it shows the
first hex digits of the key's SHA-256.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import secrets
import tempfile
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

import aiohttp
from fastapi import Request

from mail.errors import (
    AuthenticationError,
    AuthServiceError,
    ConfigurationError,
    PermissionDeniedError,
)

if TYPE_CHECKING:
    from mail.config import AuthConfig

__all__ = [
    "Role",
    "ROLES",
    "Caller",
    "Authenticator",
    "EmbeddedAuth",
    "RemoteAuth",
    "build_authenticator",
    "bearer_token",
    "AuthGate",
    "CallerDependency",
    "UI_DEV_CALLER",
]

logger = logging.getLogger("mail.server.auth")

Role = Literal["admin", "user", "agent"]
#: Every role, in the order the credentials file and the banner list them.
ROLES: tuple[Role, ...] = get_args(Role)

_CREDENTIALS_VERSION = 1
_PRIVATE_FILE = 0o600
_PRIVATE_DIR = 0o700


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated caller.

    ``api_key`` is the key the caller presented (in remote mode, the ``api_key`` the auth
    service's token info returned, when it returned one); it is kept out of ``repr``.
    """

    role: Role
    id: str
    api_key: str = field(repr=False)


#: The fixed identity of unauthenticated ``/ui/*`` calls in debug mode from loopback.
UI_DEV_CALLER = Caller(role="user", id="ui-dev-user", api_key="dev-token")


class Authenticator(Protocol):
    """Turns an API key into a :class:`Caller`."""

    async def authenticate(self, api_key: str) -> Caller:
        """Return the caller owning ``api_key``.

        Raises :class:`~mail.errors.AuthenticationError` (``"invalid API key"``) for an unknown
        key and :class:`~mail.errors.AuthServiceError` when an auth service failed.
        """
        ...

    async def aclose(self) -> None:
        """Release what the authenticator holds (sessions, in-flight lookups)."""
        ...


def _digest(api_key: str) -> bytes:
    return hashlib.sha256(api_key.encode("utf-8", "surrogatepass")).digest()


def _fingerprint(api_key: str) -> str:
    """What logs may show of a key: 8 hex digits of its SHA-256."""
    return _digest(api_key).hex()[:8]


# --- embedded ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Key:
    role: Role
    id: str
    key: str = field(repr=False)
    digest: bytes = field(repr=False)


def _new_key(role: Role, id: str) -> _Key:
    key = f"mail-{role}-{secrets.token_urlsafe(32)}"
    return _Key(role=role, id=id, key=key, digest=_digest(key))


class EmbeddedAuth:
    """API keys kept in a local JSON credentials file, compared in constant time.

    The file is ``{"version": 1, "keys": [{"role", "id", "key"}, ...]}``. When it does not
    exist and ``create`` is true, one key per role is generated (ids ``"admin"``, ``"user"``,
    ``"agent"``; keys ``mail-<role>-<random>``) and written atomically with mode 0600, its
    directory created with mode 0700; :attr:`created` is then true and :meth:`banner` is the
    text to show the operator once. An existing file readable by group or others is
    restricted to 0600 with a logged warning.

    Raises :class:`~mail.errors.ConfigurationError` (naming the file) when the file is
    corrupt, unreadable or unwritable, or missing while ``create`` is false. A corrupt file
    is never regenerated: that would lock out every holder of the old keys.
    """

    def __init__(self, credentials_file: Path, *, create: bool = True) -> None:
        self._path = Path(credentials_file)
        self._created = False
        if self._path.exists():
            self._keys = self._load()
        elif create:
            keys = tuple(_new_key(role, role) for role in ROLES)
            self._created = self._create(keys)
            self._keys = keys if self._created else self._load()
        else:
            raise ConfigurationError(
                f"no credentials file at {self._path}; start `mail server` once to create it"
            )

    @classmethod
    def load_or_create(cls, path: Path) -> tuple[EmbeddedAuth, bool]:
        """Load the keys at ``path``, creating them first if needed; the bool is "created now".

        Raises :class:`~mail.errors.ConfigurationError` as the constructor does.
        """
        auth = cls(path)
        return auth, auth.created

    @property
    def credentials_file(self) -> Path:
        """Where the keys are kept."""
        return self._path

    @property
    def created(self) -> bool:
        """Whether this instance generated the credentials file."""
        return self._created

    def banner(self) -> str:
        """Multi-line text listing every key and the file keeping them (print it only once)."""
        names = [k.role if k.id == k.role else f"{k.role} ({k.id})" for k in self._keys]
        width = max(map(len, names), default=0)
        lines = ["MAIL API keys (keep them secret; each grants its role):"]
        lines += [f"  {name:<{width}}  {k.key}" for name, k in zip(names, self._keys, strict=True)]
        lines.append(
            f"Stored in {self._path.absolute()} (mode 0600); `mail client` reads them from there."
        )
        return "\n".join(lines)

    def key_for(self, role: Role) -> str:
        """The key for ``role`` (the one whose id is the role name, else the first).

        Raises :class:`~mail.errors.ConfigurationError` when the file holds no key for it.
        """
        keys = [k for k in self._keys if k.role == role]
        if not keys:
            raise ConfigurationError(f"{self._path} holds no API key for role '{role}'")
        return next((k for k in keys if k.id == role), keys[0]).key

    def add_key(self, role: Role, id: str) -> str:
        """Generate a key for ``role`` and ``id``, save the file and return the key.

        Blocking file I/O (for tests and admin tools). Raises
        :class:`~mail.errors.ConfigurationError` for an unknown role, an empty id, or when
        the file cannot be written.
        """
        if role not in ROLES:
            raise ConfigurationError(f"unknown role '{role}' (expected one of {', '.join(ROLES)})")
        if not id:
            raise ConfigurationError("an API key needs a non-empty id")
        key = _new_key(role, id)
        keys = (*self._keys, key)
        self._write(keys, exclusive=False)
        self._keys = keys
        return key.key

    async def authenticate(self, api_key: str) -> Caller:
        """Return the caller owning ``api_key``, comparing against every key in constant time.

        Raises :class:`~mail.errors.AuthenticationError` (``"invalid API key"``).
        """
        digest = _digest(api_key)
        match: _Key | None = None
        for key in self._keys:  # no early exit: the time taken must not depend on the key
            if hmac.compare_digest(key.digest, digest):
                match = key
        if match is None:
            logger.info("rejected an unknown API key (sha256 %s)", _fingerprint(api_key))
            raise AuthenticationError("invalid API key")
        return Caller(role=match.role, id=match.id, api_key=api_key)

    async def aclose(self) -> None:
        """Nothing to release."""

    # -- file handling --

    def _load(self) -> tuple[_Key, ...]:
        self._restrict_mode()
        try:
            raw = self._path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigurationError(f"cannot read credentials file {self._path}: {e}") from e
        try:
            return _parse_credentials(json.loads(raw))
        except (TypeError, ValueError) as e:  # json.JSONDecodeError is a ValueError
            raise ConfigurationError(
                f"credentials file {self._path} is corrupt ({e}); fix it, or delete it to "
                "generate new keys (the old keys then stop working)"
            ) from e

    def _restrict_mode(self) -> None:
        if os.name != "posix":
            return
        try:
            mode = self._path.stat().st_mode & 0o777
            if mode & 0o077:
                self._path.chmod(_PRIVATE_FILE)
                logger.warning(
                    "credentials file %s was accessible to group or others (mode %03o); "
                    "restricted it to 0600",
                    self._path,
                    mode,
                )
        except OSError as e:
            raise ConfigurationError(
                f"cannot check the permissions of credentials file {self._path}: {e}"
            ) from e

    def _create(self, keys: tuple[_Key, ...]) -> bool:
        """Write a new file; False when another process created one first."""
        parent = self._path.parent
        try:
            if not parent.exists():
                parent.mkdir(mode=_PRIVATE_DIR, parents=True, exist_ok=True)
                parent.chmod(_PRIVATE_DIR)
        except OSError as e:
            raise ConfigurationError(f"cannot create directory {parent}: {e}") from e
        created = self._write(keys, exclusive=True)
        if created:
            logger.info("generated API keys for %s in %s", ", ".join(ROLES), self._path)
        return created

    def _write(self, keys: tuple[_Key, ...], *, exclusive: bool) -> bool:
        """Atomically write ``keys``; with ``exclusive``, never replace an existing file."""
        document = {
            "version": _CREDENTIALS_VERSION,
            "keys": [{"role": k.role, "id": k.id, "key": k.key} for k in keys],
        }
        parent = self._path.parent
        try:
            fd, tmp_name = tempfile.mkstemp(dir=parent, prefix=".credentials-", suffix=".tmp")
            tmp = Path(tmp_name)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(document, f, indent=2)
                    f.write("\n")
                    f.flush()
                    os.fsync(f.fileno())
                tmp.chmod(_PRIVATE_FILE)
                return _publish(tmp, self._path, exclusive=exclusive)
            finally:
                tmp.unlink(missing_ok=True)
        except OSError as e:
            raise ConfigurationError(f"cannot write credentials file {self._path}: {e}") from e


def _publish(tmp: Path, path: Path, *, exclusive: bool) -> bool:
    if exclusive:
        # A hard link fails if ``path`` exists, so two servers starting at once on a fresh
        # directory agree on one set of keys; fall back to replace where links are unsupported.
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:
            pass
        else:
            return True
    tmp.replace(path)
    return True


def _parse_credentials(data: Any) -> tuple[_Key, ...]:
    """Validate a parsed credentials file; raises TypeError or ValueError saying what is wrong."""
    if not isinstance(data, dict) or data.get("version") != _CREDENTIALS_VERSION:
        raise ValueError(f'expected a JSON object with "version": {_CREDENTIALS_VERSION}')
    entries = data.get("keys")
    if not isinstance(entries, list):
        raise TypeError('"keys" must be a list')
    keys: list[_Key] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise TypeError(f"keys[{index}] must be an object")
        role, id_, key = entry.get("role"), entry.get("id"), entry.get("key")
        if role not in ROLES:
            raise ValueError(f"keys[{index}].role must be one of {', '.join(ROLES)}")
        if not isinstance(id_, str) or not id_:
            raise ValueError(f"keys[{index}].id must be a non-empty string")
        if not isinstance(key, str) or not key:
            raise ValueError(f"keys[{index}].key must be a non-empty string")
        keys.append(_Key(role=role, id=id_, key=key, digest=_digest(key)))
    if len({k.digest for k in keys}) != len(keys):
        raise ValueError("the same key is listed twice")
    return tuple(keys)


# --- remote --------------------------------------------------------------------------------

_LOGIN_FAILED = "failed to authenticate user or agent with API key"
_INFO_FAILED = "failed to get token info"


class RemoteAuth:
    """The original's two-step exchange against an external auth service, made cheap.

    ``POST auth_endpoint`` with ``Authorization: Bearer <api key>`` must answer 200
    ``{"token": ...}``; ``GET token_info_endpoint`` with ``Bearer <token>`` must answer 200
    ``{"role": "admin"|"user"|"agent", "id": ..., "api_key": ...}``. Each call is bounded by
    ``timeout`` seconds over one shared ``aiohttp.ClientSession`` (``session`` if given, else
    created lazily and closed by :meth:`aclose`). Successful lookups are cached for
    ``cache_seconds`` (by the key's SHA-256, at most ``max_cache_entries``, oldest evicted
    first; 0 disables the cache); failures are never cached. Concurrent lookups of one
    uncached key share a single exchange. ``clock`` is the monotonic time source (tests
    inject a fake one).
    """

    def __init__(
        self,
        auth_endpoint: str,
        token_info_endpoint: str,
        *,
        timeout: float = 10.0,
        cache_seconds: float = 30.0,
        session: aiohttp.ClientSession | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_cache_entries: int = 10_000,
    ) -> None:
        self._auth_endpoint = auth_endpoint
        self._token_info_endpoint = token_info_endpoint
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._cache_seconds = cache_seconds
        self._session = session
        self._own_session = session is None
        self._clock = clock
        self._max_cache_entries = max(1, max_cache_entries)
        self._cache: OrderedDict[bytes, tuple[float, Caller]] = OrderedDict()
        self._inflight: dict[bytes, asyncio.Task[Caller]] = {}
        self._closed = False

    async def authenticate(self, api_key: str) -> Caller:
        """Return the caller the auth service says owns ``api_key`` (cached briefly).

        Raises :class:`~mail.errors.AuthenticationError` (``"invalid API key"`` when login
        answers 401, ``"invalid token"`` when token info does) and
        :class:`~mail.errors.AuthServiceError` for any other status, a network error, a
        timeout, a malformed answer, or after :meth:`aclose`.
        """
        if self._closed:
            raise AuthServiceError("the authenticator is closed")
        if not api_key:
            raise AuthenticationError("invalid API key")
        digest = _digest(api_key)
        hit = self._cache.get(digest)
        if hit is not None:
            expires, caller = hit
            if self._clock() < expires:
                return caller
            del self._cache[digest]
        task = self._inflight.get(digest)
        if task is None:
            task = asyncio.create_task(
                self._exchange(api_key, digest), name=f"auth-exchange:{_fingerprint(api_key)}"
            )
            self._inflight[digest] = task
            task.add_done_callback(partial(self._exchange_done, digest))
        # Shielded: a caller that goes away must not cancel the lookup others are awaiting.
        return await asyncio.shield(task)

    async def aclose(self) -> None:
        """Cancel in-flight lookups and close the session if this instance created it."""
        self._closed = True
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._cache.clear()
        if self._own_session and self._session is not None:
            await self._session.close()
        self._session = None

    def _exchange_done(self, digest: bytes, task: asyncio.Task[Caller]) -> None:
        if self._inflight.get(digest) is task:
            del self._inflight[digest]
        if not task.cancelled():
            task.exception()  # retrieved here so an unawaited failure is not reported as lost

    async def _exchange(self, api_key: str, digest: bytes) -> Caller:
        login = await self._call(
            self._auth_endpoint, "POST", api_key, "invalid API key", _LOGIN_FAILED
        )
        token = login.get("token")
        if not isinstance(token, str) or not token:
            logger.warning("auth service login answer has no token (%s)", self._auth_endpoint)
            raise AuthServiceError(_LOGIN_FAILED)
        info = await self._call(
            self._token_info_endpoint, "GET", token, "invalid token", _INFO_FAILED
        )
        caller = self._caller_from(info, api_key)
        if self._cache_seconds > 0:
            self._cache[digest] = (self._clock() + self._cache_seconds, caller)
            self._cache.move_to_end(digest)
            while len(self._cache) > self._max_cache_entries:
                self._cache.popitem(last=False)
        return caller

    async def _call(
        self, url: str, method: str, bearer: str, invalid: str, failure: str
    ) -> dict[str, Any]:
        """One request to the auth service; the JSON object it answered with 200."""
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        try:
            async with self._session.request(
                method, url, headers={"Authorization": f"Bearer {bearer}"}, timeout=self._timeout
            ) as response:
                status = response.status
                body = await response.read() if status == HTTPStatus.OK else b""
        except (aiohttp.ClientError, TimeoutError) as e:
            logger.warning("auth service %s %s failed: %s %s", method, url, type(e).__name__, e)
            raise AuthServiceError(failure) from e
        if status == HTTPStatus.UNAUTHORIZED:
            logger.info("auth service %s %s rejected sha256 %s", method, url, _fingerprint(bearer))
            raise AuthenticationError(invalid)
        if status != HTTPStatus.OK:
            logger.warning("auth service %s %s answered HTTP %d", method, url, status)
            raise AuthServiceError(failure)
        try:
            data = json.loads(body)
        except ValueError as e:
            logger.warning("auth service %s %s answered with invalid JSON", method, url)
            raise AuthServiceError(failure) from e
        if not isinstance(data, dict):
            logger.warning("auth service %s %s answered with a non-object", method, url)
            raise AuthServiceError(failure)
        return data

    def _caller_from(self, info: dict[str, Any], api_key: str) -> Caller:
        role, id_, key = info.get("role"), info.get("id"), info.get("api_key")
        if role not in ROLES or not isinstance(id_, str) or not id_:
            logger.warning(
                "auth service token info (%s) lacks a valid role or id", self._token_info_endpoint
            )
            raise AuthServiceError(_INFO_FAILED)
        return Caller(role=role, id=id_, api_key=key if isinstance(key, str) and key else api_key)


def build_authenticator(auth_config: AuthConfig) -> tuple[Authenticator, str | None]:
    """The authenticator ``auth_config`` asks for, and the banner to print if keys were created.

    Remote mode returns a :class:`RemoteAuth` (no banner); embedded mode loads or creates
    the credentials file. Raises :class:`~mail.errors.ConfigurationError`.
    """
    if auth_config.mode == "remote":
        if not (auth_config.auth_endpoint and auth_config.token_info_endpoint):
            raise ConfigurationError("remote auth needs auth_endpoint and token_info_endpoint")
        remote = RemoteAuth(
            auth_config.auth_endpoint,
            auth_config.token_info_endpoint,
            timeout=auth_config.timeout,
            cache_seconds=auth_config.cache_seconds,
        )
        return remote, None
    embedded, created = EmbeddedAuth.load_or_create(Path(auth_config.credentials_file))
    return embedded, embedded.banner() if created else None


# --- FastAPI -------------------------------------------------------------------------------

_BEARER = "Bearer "
_STATE_ATTR = "mail_caller"
#: What :meth:`AuthGate.require` returns: a FastAPI dependency resolving to the caller.
CallerDependency = Callable[[Request], Awaitable[Caller]]


def bearer_token(authorization: str | None) -> str:
    """The API key in an ``Authorization: Bearer <key>`` header value.

    Raises :class:`~mail.errors.AuthenticationError`: ``"no API key provided"`` when the header
    is missing, ``"invalid API key format"`` when it is not ``Bearer`` plus a non-empty key.
    """
    if authorization is None:
        raise AuthenticationError("no API key provided")
    if not authorization.startswith(_BEARER):
        raise AuthenticationError("invalid API key format")
    token = authorization[len(_BEARER) :].strip()
    if not token:
        raise AuthenticationError("invalid API key format")
    return token


def _is_loopback(request: Request) -> bool:
    if request.client is None:
        return False
    try:
        address = ipaddress.ip_address(request.client.host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


class AuthGate:
    """What routes depend on: authenticates each request once and checks its role.

    ``debug`` enables the development identity of :meth:`require_ui`.
    """

    def __init__(self, authenticator: Authenticator, *, debug: bool = False) -> None:
        self.authenticator = authenticator
        self.debug = debug

    def require(self, *roles: Role) -> CallerDependency:
        """A FastAPI dependency ``async (request) -> Caller`` admitting only ``roles``.

        The caller is authenticated once per request (kept on ``request.state``, so several
        dependencies share it). The dependency raises
        :class:`~mail.errors.AuthenticationError` (see :func:`bearer_token` and
        :meth:`Authenticator.authenticate`), :class:`~mail.errors.PermissionDeniedError`
        (``"invalid role"``) for another role and :class:`~mail.errors.AuthServiceError`.
        ``ValueError`` here when ``roles`` is empty or names an unknown role.
        """
        allowed = frozenset(roles)
        if not allowed or not allowed <= set(ROLES):
            raise ValueError(f"roles must be a non-empty subset of {ROLES}, got {roles}")

        async def dependency(request: Request) -> Caller:
            caller = await self._caller(request)
            if caller.role not in allowed:
                raise PermissionDeniedError("invalid role")
            return caller

        return dependency

    def require_ui(self) -> CallerDependency:
        """Like ``require("admin", "user")``, with a development shortcut for ``/ui/*``.

        Only when :attr:`debug` is on, the client is on loopback and no ``Authorization``
        header is sent, the dependency returns :data:`UI_DEV_CALLER` without authenticating.
        (Behind a reverse proxy on the same host every client looks like loopback, so debug
        mode must not be exposed that way.) Raises as :meth:`require` does otherwise.
        """
        regular = self.require("admin", "user")

        async def dependency(request: Request) -> Caller:
            if self.debug and "authorization" not in request.headers and _is_loopback(request):
                setattr(request.state, _STATE_ATTR, UI_DEV_CALLER)
                return UI_DEV_CALLER
            return await regular(request)

        return dependency

    async def _caller(self, request: Request) -> Caller:
        known = getattr(request.state, _STATE_ATTR, None)
        if isinstance(known, Caller):
            return known
        api_key = bearer_token(request.headers.get("authorization"))
        caller = await self.authenticator.authenticate(api_key)
        setattr(request.state, _STATE_ATTR, caller)
        return caller
