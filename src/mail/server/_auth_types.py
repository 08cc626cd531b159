"""Callers, roles and the authenticator interface."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, get_args, runtime_checkable

if TYPE_CHECKING:
    pass

__all__ = [
    "ROLES",
    "UI_DEV_CALLER",
    "Authenticator",
    "Caller",
    "KeyIssuer",
    "Role",
    "key_digest",
    "key_fingerprint",
    "wrong_role",
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


@runtime_checkable
class KeyIssuer(Protocol):
    """An authenticator that can create API keys (embedded and cluster modes, not remote)."""

    async def create_key(self, role: Role, id: str) -> str:
        """Generate, store and return a new key for ``role`` and ``id``.

        Raises :class:`~mail.errors.ConfigurationError` for an unknown role or an empty id
        and :class:`~mail.errors.StorageError` when the key cannot be stored.
        """
        ...


def key_digest(api_key: str) -> bytes:
    return hashlib.sha256(api_key.encode("utf-8", "surrogatepass")).digest()


def key_fingerprint(api_key: str) -> str:
    """What logs may show of a key: 8 hex digits of its SHA-256."""
    return key_digest(api_key).hex()[:8]


def wrong_role(roles: Sequence[str]) -> str:
    """The detail of a 401 for a caller of another role: ``invalid role`` (the v1.3.6
    text, which clients may match as a prefix) and the roles the route admits."""
    names = " or ".join([", ".join(roles[:-1]), roles[-1]] if len(roles) > 1 else roles)
    return f"invalid role: this route needs {names}"
