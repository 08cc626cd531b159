"""The whole configuration: :class:`MAILConfig`."""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import Any

from pydantic import BaseModel, Field, model_validator

from mail.config._backends import AuthConfig, DatabaseConfig
from mail.config._base import DEFAULT_DATA_DIR, ConfigModel
from mail.config.client import ClientConfig
from mail.config.server import ServerConfig
from mail.config.stdlib import StdlibConfig

# Files that live in the data directory unless configured elsewhere: (section path, key,
# name in the data directory).
_DATA_FILES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("auth",), "credentials_file", "credentials.json"),
    (("database",), "sqlite_path", "mail.db"),
    (("stdlib", "fs"), "root", "files"),
)


class MAILConfig(ConfigModel):
    """Everything mail.toml and the environment configure, validated.

    Built by :func:`mail.config.load_config`, which resolves every path to an absolute one
    (``server.data_dir``, ``server.swarm.source``, ``server.swarm.registry``,
    ``auth.credentials_file``, ``database.sqlite_path``, ``stdlib.fs.root``). ``source_path`` is the file that
    was read (``None`` for pure defaults) and ``warnings`` what was ignored in it.

    When constructed directly, ``auth.credentials_file``, ``database.sqlite_path`` and
    ``stdlib.fs.root`` default to files inside ``server.data_dir``; paths stay as given (relative ones are
    relative to the working directory). Bad values raise ``pydantic.ValidationError``.
    """

    server: ServerConfig = Field(default_factory=ServerConfig)
    client: ClientConfig = Field(default_factory=ClientConfig)
    auth: AuthConfig = Field(default_factory=AuthConfig)
    database: DatabaseConfig = Field(default_factory=DatabaseConfig)
    stdlib: StdlibConfig = Field(default_factory=StdlibConfig)
    source_path: Path | None = None
    warnings: tuple[str, ...] = Field(default=(), strict=False)

    @model_validator(mode="before")
    @classmethod
    def _files_in_data_dir(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        server = data.get("server")
        if isinstance(server, ServerConfig):
            data_dir: Any = server.data_dir
        elif isinstance(server, dict):
            data_dir = server.get("data_dir", DEFAULT_DATA_DIR)
        else:
            data_dir = DEFAULT_DATA_DIR
        if not isinstance(data_dir, str) or not data_dir:
            return data  # validation reports the bad data_dir
        data = dict(data)
        for (section, *inner), field, filename in _DATA_FILES:
            default = str(PurePath(data_dir) / filename)
            data[section] = _with_default(data.get(section), inner, field, default)
        return data


def _with_default(value: Any, path: list[str], field: str, default: str) -> Any:
    """``value`` (a table, a model or None) with ``field`` of its sub-table at ``path`` set
    to ``default`` unless given; anything else is left for validation to report."""
    if path:
        head, rest = path[0], path[1:]
        if value is None:
            return {head: _with_default(None, rest, field, default)}
        if isinstance(value, dict):
            return {**value, head: _with_default(value.get(head), rest, field, default)}
        if isinstance(value, BaseModel):
            inner = _with_default(getattr(value, head), rest, field, default)
            return value.model_copy(update={head: inner})
        return value
    if value is None:
        return {field: default}
    if isinstance(value, dict) and field not in value:
        return {**value, field: default}
    if isinstance(value, BaseModel) and field not in value.model_fields_set:
        return value.model_copy(update={field: default})
    return value
