"""load_config: mail.toml, then the environment, then overrides, validated into MAILConfig."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from mail.config._layers import Key, Merged, describe, leaves
from mail.config._lookup import locate, read_toml
from mail.config._root import MAILConfig
from mail.config.server import ServerConfig, SwarmConfig
from mail.errors import ConfigurationError

logger = logging.getLogger("mail.config")

#: Environment variables applied over the file (an empty value counts as unset), by key set.
ENV_OVERRIDES: Mapping[str, str] = MappingProxyType(
    {
        "SWARM_NAME": "server.swarm.name",
        "SWARM_SOURCE": "server.swarm.source",
        "SWARM_REGISTRY_FILE": "server.swarm.registry",
        "BASE_URL": "server.base_url",
        "MAIL_DATA_DIR": "server.data_dir",
        "MAIL_PORT": "server.port",
        "AUTH_ENDPOINT": "auth.auth_endpoint",
        "TOKEN_INFO_ENDPOINT": "auth.token_info_endpoint",
        "DATABASE_URL": "database.url",
        "MAIL_RETENTION_DAYS": "database.retention_days",
        "MAIL_RETENTION_MAX_TASKS": "database.retention_max_tasks",
        "MAIL_PRUNE_INTERVAL": "database.prune_interval",
        "MAIL_COMMIT_TIMEOUT": "database.commit_timeout",
        "MAIL_SWARM_HEALTH_INTERVAL": "server.interswarm.health_interval",
        "MAIL_CORS_ORIGINS": "server.cors_origins",
        "MAIL_REDIS_URL": "server.cluster.redis_url",
        "MAIL_REPLICA_ID": "server.cluster.replica_id",
        "MAIL_LEASE_SECONDS": "server.cluster.lease_seconds",
        "MAIL_MAP_SUMMARY_API_KEY": "server.map.summary_api_key",
        "MAIL_METRICS": "server.metrics.enabled",
        "MAIL_METRICS_PORT": "server.metrics.port",
        "MAIL_TELEMETRY": "server.telemetry.enabled",
        "MAIL_TELEMETRY_ENDPOINT": "server.telemetry.endpoint",
        "MAIL_TELEMETRY_CAPTURE_CONTENT": "server.telemetry.capture_content",
    }
)
# Variables holding numbers: parsed before validation (a string that is not a number is
# passed on as it is, and validation names the variable).
_ENV_NUMBERS: Mapping[str, type[int] | type[float]] = MappingProxyType(
    {
        "MAIL_RETENTION_DAYS": float,
        "MAIL_RETENTION_MAX_TASKS": int,
        "MAIL_PRUNE_INTERVAL": float,
        "MAIL_COMMIT_TIMEOUT": float,
        "MAIL_SWARM_HEALTH_INTERVAL": float,
        "MAIL_PORT": int,
        "MAIL_LEASE_SECONDS": float,
        "MAIL_METRICS_PORT": int,
    }
)

# Resolved to absolute paths at load time; data_dir first, the others may derive from it.
_PATH_KEYS: tuple[Key, ...] = (
    ("server", "data_dir"),
    ("server", "swarm", "source"),
    ("server", "swarm", "registry"),
    ("auth", "credentials_file"),
    ("database", "sqlite_path"),
    ("stdlib", "fs", "root"),
)
# Paths whose default is resolved too; the others default to files in data_dir.
_DEFAULTED_PATHS = frozenset(_PATH_KEYS[:2])
_REGISTRY: Key = ("server", "swarm", "registry")
_OVERRIDES = "overrides"


def load_config(
    path: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    search: bool = True,
) -> MAILConfig:
    """Read mail.toml, apply the environment, then ``overrides``; return the validated config.

    The file is ``path`` if given, else ``$MAIL_CONFIG_PATH``, else (when ``search``) the
    first ``mail.toml`` in the working directory or a directory above the installed
    package; with none, the defaults are used. ``env`` (default ``os.environ``) is read only
    here; see :data:`ENV_OVERRIDES`. ``overrides`` is a nested dict such as
    ``{"server": {"port": 9000}}`` applied last; ``None`` values in it mean "not given".
    Relative paths from the file resolve against the file's directory, those from the
    environment or ``overrides`` against the working directory. Unknown keys in the file
    are logged (logger ``mail.config``) and listed in ``MAILConfig.warnings``.

    Raises:
        ConfigurationError: ``path`` or ``$MAIL_CONFIG_PATH`` names a missing file; the file
            is unreadable or not valid TOML; a value has the wrong type or range (the
            message names the file or variable and the key, e.g. ``server.port``); an
            ``overrides`` key is unknown.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    source = locate(path, environ, search=search)
    merged = Merged(file_origin=None if source is None else str(source))
    if source is not None:
        label = str(source)

        def unknown_in_file(dotted: str) -> None:
            merged.warnings.append(f"{label}: unknown key '{dotted}' (ignored)")

        for key, value in leaves(read_toml(source), label, unknown_in_file):
            merged.set(key, value, label)
    _apply_env(merged, environ)
    if overrides:
        for key, value in leaves(overrides, _OVERRIDES, _reject_unknown_override):
            merged.set(key, value, _OVERRIDES)
    _resolve_paths(merged, None if source is None else source.parent)
    _warn_half_remote_auth(merged)
    for warning in merged.warnings:
        logger.warning("%s", warning)
    data = {**merged.nested(), "source_path": source, "warnings": tuple(merged.warnings)}
    try:
        return MAILConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigurationError(describe(e, merged)) from e


def default_config_path(
    *, env: Mapping[str, str] | None = None, search: bool = True
) -> Path | None:
    """The file :func:`load_config` would read with no ``path`` (``None``: pure defaults).

    Raises:
        ConfigurationError: ``$MAIL_CONFIG_PATH`` names a missing file.
    """
    return locate(None, os.environ if env is None else env, search=search)


def _reject_unknown_override(dotted: str) -> None:
    raise ConfigurationError(f"{_OVERRIDES}: unknown key '{dotted}'")


def _apply_env(merged: Merged, env: Mapping[str, str]) -> None:
    for var, dotted in ENV_OVERRIDES.items():
        value = env.get(var)
        if value:
            merged.set(
                tuple(dotted.split(".")), _env_value(var, value), f"environment variable {var}"
            )
    if env.get("AUTH_ENDPOINT") and env.get("TOKEN_INFO_ENDPOINT"):
        merged.set(
            ("auth", "mode"), "remote", "environment variables AUTH_ENDPOINT, TOKEN_INFO_ENDPOINT"
        )


# Variables holding lists: comma-separated, blanks dropped.
_ENV_LISTS = frozenset({"MAIL_CORS_ORIGINS"})
# Variables holding true or false (another value is passed on, and validation names it).
_ENV_BOOLS = frozenset({"MAIL_METRICS", "MAIL_TELEMETRY", "MAIL_TELEMETRY_CAPTURE_CONTENT"})
_TRUE, _FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off"})


def _env_value(var: str, value: str) -> Any:
    if var in _ENV_LISTS:
        return [item.strip() for item in value.split(",") if item.strip()]
    if var in _ENV_BOOLS:
        word = value.strip().lower()
        return True if word in _TRUE else False if word in _FALSE else value
    number = _ENV_NUMBERS.get(var)
    if number is None:
        return value
    try:
        return number(value.strip())
    except ValueError:
        return value


def _default(key: Key) -> Any:
    model = ServerConfig if key == ("server", "data_dir") else SwarmConfig
    return model.model_fields[key[-1]].default


def _resolve_paths(merged: Merged, file_dir: Path | None) -> None:
    cwd = Path.cwd()
    for key in _PATH_KEYS:
        if key in merged.values:
            value = merged.values[key]
            from_file = file_dir is not None and merged.origins[key] == merged.file_origin
            base = file_dir if from_file and file_dir is not None else cwd
        elif key in _DEFAULTED_PATHS:
            value, base = _default(key), file_dir or cwd
        elif key == _REGISTRY:
            value, base = _default_registry(merged, file_dir or cwd), cwd
        else:
            continue  # derived from data_dir by MAILConfig
        if isinstance(value, str) and value:
            merged.values[key] = str((base / Path(value).expanduser()).resolve())


def _default_registry(merged: Merged, base: Path) -> str:
    """``<data_dir>/registries/<swarm>.json``: each data directory has its own registry, so
    two servers of one swarm with different data directories do not share it.

    A deployment of the previous release keeps its file: when only ``registries/<swarm>.json``
    next to the config file (else in the working directory) exists, that one is used, with
    a warning saying that every server of this config shares it.
    """
    name = merged.values.get(("server", "swarm", "name"), SwarmConfig.model_fields["name"].default)
    new = Path(merged.values[("server", "data_dir")]) / "registries" / f"{name}.json"
    old = (base / "registries" / f"{name}.json").resolve()
    if old.is_file() and not new.exists():
        merged.warnings.append(
            f"registry file {old} is in the old default place, shared by every server of "
            f"swarm {name!r} started with this config; using it (move it to {new}, the "
            "default, or set server.swarm.registry to keep sharing it)"
        )
        return str(old)
    return str(new)


def _warn_half_remote_auth(merged: Merged) -> None:
    ends = [k for k in ("auth_endpoint", "token_info_endpoint") if merged.values.get(("auth", k))]
    if len(ends) == 1 and merged.values.get(("auth", "mode")) != "remote":
        origin = merged.origin_of(("auth", ends[0]))
        merged.warnings.append(
            f"{origin}: only 'auth.{ends[0]}' is set; remote auth needs both auth_endpoint and "
            "token_info_endpoint (AUTH_ENDPOINT, TOKEN_INFO_ENDPOINT); using embedded auth"
        )
