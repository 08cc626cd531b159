"""The registry's JSON file: its format (the whole object and each record) and atomic I/O.

The blocking functions (:func:`read_registry`, :func:`write_registry`) are meant to run in a
worker thread: :func:`load_entries` and :func:`save_entries` run them so, and turn I/O
failures into :class:`~mail.errors.StorageError`. Format (CONTRACT 8.5)::

    {"local_swarm_name", "local_base_url", "local_swarm_description",
     "local_swarm_keywords", "local_swarm_public",
     "endpoints": {name: {"swarm_name", "base_url", "version", "health_check_url",
                          "auth_token_ref", "last_seen", "latency", "swarm_description",
                          "keywords", "public", "is_active", "metadata", "volatile",
                          "legacy"}}}

``legacy`` (ours, not the contract's) records that the peer's ``GET /`` reported no
``protocol_version`` (or one below 1.2); for entries without it, a ``version`` below 1.2
means legacy. A token is never written: persistent entries hold a ``${VAR}`` reference.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mail.errors import ConfigurationError, StorageError
from mail.net._endpoint import SwarmEndpoint, is_legacy_version
from mail.net._peer_http import describe
from mail.net._tokens import stored_ref

__all__ = [
    "FILE_MODE",
    "LOCAL_KEYS",
    "decode_endpoint",
    "decode_endpoints",
    "decode_local",
    "encode_endpoint",
    "encode_registry",
    "load_entries",
    "read_registry",
    "save_entries",
    "write_atomic",
    "write_registry",
]

logger = logging.getLogger("mail.net.registry")

#: The registry file names which environment variables hold peers' tokens: owner only.
FILE_MODE = 0o600
#: The top-level fields describing the swarm that wrote the file.
LOCAL_KEYS = (
    "local_swarm_name",
    "local_base_url",
    "local_swarm_description",
    "local_swarm_keywords",
    "local_swarm_public",
)


def encode_endpoint(endpoint: SwarmEndpoint, stored_ref: str | None) -> dict[str, Any]:
    """The file record of ``endpoint``, with ``stored_ref`` as its ``auth_token_ref``."""
    return {
        "swarm_name": endpoint.swarm_name,
        "base_url": endpoint.base_url,
        "version": endpoint.version,
        "health_check_url": endpoint.health_check_url,
        "auth_token_ref": stored_ref,
        "last_seen": endpoint.last_seen.isoformat() if endpoint.last_seen else None,
        "latency": endpoint.latency,
        "swarm_description": endpoint.swarm_description,
        "keywords": list(endpoint.keywords),
        "public": endpoint.public,
        "is_active": endpoint.is_active,
        "metadata": endpoint.metadata,
        "volatile": endpoint.volatile,
        "legacy": endpoint.legacy,
    }


def encode_registry(local: Mapping[str, Any], endpoints: Iterable[SwarmEndpoint]) -> dict[str, Any]:
    """The file's object: the :data:`LOCAL_KEYS` fields of ``local``, and ``endpoints`` by name
    with their tokens as :func:`~mail.net._tokens.stored_ref` (the local swarm's as none)."""
    name = local["local_swarm_name"]
    return {
        **{key: local[key] for key in LOCAL_KEYS},
        "endpoints": {
            e.swarm_name: encode_endpoint(e, None if e.swarm_name == name else stored_ref(e))
            for e in endpoints
        },
    }


def decode_local(data: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`LOCAL_KEYS` fields of registry ``data``, by key.

    A description, keyword list or public flag that is missing (or not of its type) gets
    its default. Raises :class:`ConfigurationError` unless the name and base URL are strings.
    """
    name, base_url = data.get("local_swarm_name"), data.get("local_base_url")
    if not isinstance(name, str) or not isinstance(base_url, str):
        raise ConfigurationError("local_swarm_name and local_base_url must be strings")
    keywords = data.get("local_swarm_keywords") or []
    return {
        "local_swarm_name": name,
        "local_base_url": base_url,
        "local_swarm_description": str(data.get("local_swarm_description") or ""),
        "local_swarm_keywords": [str(k) for k in keywords] if isinstance(keywords, list) else [],
        "local_swarm_public": data.get("local_swarm_public") is True,
    }


class _Reader:
    """Typed access to one record; every mistake names the source and the entry."""

    def __init__(self, data: dict[str, Any], where: str) -> None:
        self.data = data
        self.where = where

    def fail(self, key: str, expected: str) -> ConfigurationError:
        return ConfigurationError(
            f"{self.where}: '{key}' must be {expected}, got {self.data.get(key)!r}"
        )

    def opt_str(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None or isinstance(value, str):
            return value
        raise self.fail(key, "a string or null")

    def boolean(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if isinstance(value, bool):
            return value
        raise self.fail(key, "true or false")

    def latency(self) -> float | None:
        value = self.data.get("latency")
        if value is None:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise self.fail("latency", "a number or null")

    def keywords(self) -> list[str]:
        value = self.data.get("keywords") or []
        if isinstance(value, list) and all(isinstance(k, str) for k in value):
            return list(value)
        raise self.fail("keywords", "a list of strings")

    def metadata(self) -> dict[str, Any] | None:
        value = self.data.get("metadata")
        if value is None or isinstance(value, dict):
            return value
        raise self.fail("metadata", "an object or null")

    def last_seen(self) -> datetime | None:
        value = self.opt_str("last_seen")
        if value is None:
            return None
        try:
            seen = datetime.fromisoformat(value)
        except ValueError:
            raise self.fail("last_seen", "an ISO-8601 timestamp") from None
        return seen if seen.tzinfo else seen.replace(tzinfo=UTC)


def decode_endpoint(name: str, data: object, source: str) -> SwarmEndpoint:
    """Build the endpoint stored under ``name``.

    ``auth_token_ref`` is taken as is (a reference, or a raw token in old files); the
    legacy key ``auth_token`` is read when it is absent. Entries without ``volatile`` are
    persistent; entries without ``legacy`` are legacy when their ``version`` is below 1.2.
    Raises :class:`ConfigurationError` naming ``source`` and the entry when a
    field is missing or has the wrong type.
    """
    where = f"{source}: endpoint '{name}'"
    if not isinstance(data, dict):
        raise ConfigurationError(f"{where} must be an object")
    reader = _Reader(data, where)
    swarm_name = reader.opt_str("swarm_name") or name
    if swarm_name != name:
        raise ConfigurationError(f"{where} has swarm_name {swarm_name!r}")
    base_url = reader.opt_str("base_url")
    if not base_url:
        raise reader.fail("base_url", "a non-empty string")
    token = reader.opt_str("auth_token_ref") if "auth_token_ref" in data else None
    if token is None and "auth_token" in data:
        token = reader.opt_str("auth_token")
    version = reader.opt_str("version")
    return SwarmEndpoint(
        swarm_name=name,
        base_url=base_url,
        version=version,
        health_check_url=reader.opt_str("health_check_url") or "",
        auth_token_ref=token or None,
        last_seen=reader.last_seen(),
        is_active=reader.boolean("is_active", True),
        latency=reader.latency(),
        swarm_description=reader.opt_str("swarm_description") or "",
        keywords=reader.keywords(),
        metadata=reader.metadata(),
        public=reader.boolean("public", False),
        volatile=reader.boolean("volatile", False),
        legacy=reader.boolean("legacy", is_legacy_version(version)),
    )


def decode_endpoints(data: object, source: str) -> list[SwarmEndpoint]:
    """The endpoints of an ``endpoints`` object; raises :class:`ConfigurationError`."""
    if not isinstance(data, dict):
        raise ConfigurationError(f"{source}: 'endpoints' must be an object")
    return [decode_endpoint(str(name), entry, source) for name, entry in data.items()]


def read_registry(path: Path) -> tuple[dict[str, Any], list[SwarmEndpoint]] | None:
    """The ``local_*`` fields and endpoints saved in ``path``; ``None`` when it is missing.

    Blocking. Raises ``OSError`` when the file cannot be read and
    :class:`ConfigurationError` naming it when it is not a registry file.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as e:  # UnicodeDecodeError included
        raise ConfigurationError(f"swarm registry file {path} is not valid JSON: {e}") from e
    if not isinstance(data, dict):
        raise ConfigurationError(f"swarm registry file {path} must hold a JSON object")
    local = {key: data[key] for key in LOCAL_KEYS if key in data}
    return local, decode_endpoints(data.get("endpoints", {}), f"swarm registry file {path}")


async def load_entries(path: Path, configured: Mapping[str, Any]) -> list[SwarmEndpoint] | None:
    """The endpoints saved in ``path``, read in a worker thread; ``None`` when it is missing.

    ``local_*`` fields of the file that differ from ``configured`` (the reader's own) are
    logged: the configuration wins. Raises :class:`StorageError` when the file cannot be
    read, :class:`ConfigurationError` naming it when it is not a registry file.
    """
    try:
        found = await asyncio.to_thread(read_registry, path)
    except OSError as e:
        raise StorageError(f"could not read the swarm registry file {path}: {e}") from e
    if found is None:
        logger.info("no swarm registry file at %s yet", path)
        return None
    local, endpoints = found
    differ = [key for key, value in local.items() if value != configured[key]]
    if differ:
        logger.warning(
            "swarm registry file %s differs from the configured local swarm in %s; "
            "the configuration wins",
            path,
            ", ".join(differ),
        )
    return endpoints


async def save_entries(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` atomically, in a worker thread.

    Raises :class:`StorageError` (and logs) when the file cannot be written; the previous
    file is then left intact.
    """
    try:
        await asyncio.to_thread(write_registry, path, data)
    except (OSError, TypeError, ValueError) as e:
        # The StorageError raised below carries the traceback; log where it happened.
        logger.error("could not save the swarm registry to %s: %s", path, describe(e))  # noqa: TRY400
        raise StorageError(f"could not save the swarm registry to {path}: {e}") from e
    logger.debug("saved the swarm registry to %s", path)


def write_registry(path: Path, data: dict[str, Any]) -> None:
    """Serialize ``data`` and :func:`write_atomic` it. Blocking; raises ``OSError``,
    ``TypeError`` or ``ValueError`` (data that is not JSON)."""
    write_atomic(path, json.dumps(data, indent=2))


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so readers see the old or the new file, never a part.

    Writes a temporary file in the same directory (mode 0600), fsyncs it and renames it
    over ``path``; the temporary file is removed when anything fails. Blocking; raises
    ``OSError``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        tmp.chmod(FILE_MODE)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable. The new file is already in place, and some
    # platforms (Windows) cannot open a directory, so failing here loses nothing.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
