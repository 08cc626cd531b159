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
:class:`~mail.errors.PermissionDeniedError` (401), :class:`~mail.errors.AuthServiceError` (the
server answers 500 with its fixed detail, as CONTRACT 1.2 documents).

API keys and tokens are never logged; where a log line must tell keys apart it shows the
first hex digits of the key's SHA-256.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import Request

from mail.errors import (
    AuthenticationError,
    ConfigurationError,
    PermissionDeniedError,
)

if TYPE_CHECKING:
    from mail.config import AuthConfig

from mail.server._auth_embedded import EmbeddedAuth
from mail.server._auth_remote import RemoteAuth
from mail.server._auth_types import (
    ROLES,
    UI_DEV_CALLER,
    Authenticator,
    Caller,
    Role,
    wrong_role,
)

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
        (``"invalid role: this route needs admin or user"``) for another role and :class:`~mail.errors.AuthServiceError`.
        ``ValueError`` here when ``roles`` is empty or names an unknown role.
        """
        allowed = frozenset(roles)
        if not allowed or not allowed <= set(ROLES):
            raise ValueError(f"roles must be a non-empty subset of {ROLES}, got {roles}")

        refusal = wrong_role([r for r in ROLES if r in allowed])

        async def dependency(request: Request) -> Caller:
            caller = await self._caller(request)
            if caller.role not in allowed:
                raise PermissionDeniedError(refusal)
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
            if "authorization" not in request.headers and self.keyless(request):
                setattr(request.state, _STATE_ATTR, UI_DEV_CALLER)
                return UI_DEV_CALLER
            return await regular(request)

        return dependency

    def keyless(self, request: Request) -> bool:
        """Whether :meth:`require_ui` lets ``request``'s client in without a key (debug
        mode, a loopback client)."""
        return self.debug and _is_loopback(request)

    async def _caller(self, request: Request) -> Caller:
        known = getattr(request.state, _STATE_ATTR, None)
        if isinstance(known, Caller):
            return known
        api_key = bearer_token(request.headers.get("authorization"))
        caller = await self.authenticator.authenticate(api_key)
        setattr(request.state, _STATE_ATTR, caller)
        return caller
