"""API keys kept in a local credentials file (the embedded default)."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import secrets
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mail.errors import (
    AuthenticationError,
    ConfigurationError,
)

if TYPE_CHECKING:
    pass

from mail.server._auth_types import ROLES, Caller, Role, key_digest, key_fingerprint

__all__ = ["EmbeddedAuth"]

logger = logging.getLogger("mail.server.auth")

_CREDENTIALS_VERSION = 1
_PRIVATE_FILE = 0o600
_PRIVATE_DIR = 0o700

# --- embedded ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Key:
    role: Role
    id: str
    key: str = field(repr=False)
    digest: bytes = field(repr=False)


def _new_key(role: Role, id: str) -> _Key:
    key = f"mail-{role}-{secrets.token_urlsafe(32)}"
    return _Key(role=role, id=id, key=key, digest=key_digest(key))


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

    async def create_key(self, role: Role, id: str) -> str:
        """:meth:`add_key` off the event loop (what ``POST /keys`` calls)."""
        return await asyncio.to_thread(self.add_key, role, id)

    def entries(self) -> list[tuple[Role, str, str]]:
        """Every key as ``(role, id, key)``, in file order (cluster mode copies them)."""
        return [(k.role, k.id, k.key) for k in self._keys]

    async def authenticate(self, api_key: str) -> Caller:
        """Return the caller owning ``api_key``, comparing against every key in constant time.

        Raises :class:`~mail.errors.AuthenticationError` (``"invalid API key"``).
        """
        digest = key_digest(api_key)
        match: _Key | None = None
        for key in self._keys:  # no early exit: the time taken must not depend on the key
            if hmac.compare_digest(key.digest, digest):
                match = key
        if match is None:
            logger.info("rejected an unknown API key (sha256 %s)", key_fingerprint(api_key))
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
        keys.append(_Key(role=role, id=id_, key=key, digest=key_digest(key)))
    if len({k.digest for k in keys}) != len(keys):
        raise ValueError("the same key is listed twice")
    return tuple(keys)
