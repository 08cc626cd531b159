"""Configuration: ``mail.toml`` and the environment, read once into validated models.

:func:`load_config` is the one reader; everything else receives the :class:`MAILConfig` it
returns (or one of its parts) as a parameter. Nothing is read at import time.

Public names:

* :func:`load_config`, :func:`default_config_path`, :data:`ENV_OVERRIDES`,
  :data:`CONFIG_FILE_NAME`, :data:`CONFIG_PATH_ENV`
* :class:`MAILConfig` and its parts :class:`ServerConfig` (with :class:`SwarmConfig`,
  :class:`SettingsConfig`), :class:`ClientConfig`, :class:`AuthConfig`,
  :class:`DatabaseConfig`; the literal types :data:`AuthMode`, :data:`DatabaseBackend`

See ``docs/configuration.md`` for every key, its default and its environment variable.
"""

from __future__ import annotations

from mail.config._backends import AuthConfig, AuthMode, DatabaseBackend, DatabaseConfig
from mail.config._loader import ENV_OVERRIDES, default_config_path, load_config
from mail.config._lookup import CONFIG_FILE_NAME, CONFIG_PATH_ENV
from mail.config._root import MAILConfig
from mail.config.client import ClientConfig
from mail.config.server import ServerConfig, SettingsConfig, SwarmConfig

__all__ = [
    "load_config",
    "default_config_path",
    "ENV_OVERRIDES",
    "CONFIG_FILE_NAME",
    "CONFIG_PATH_ENV",
    "MAILConfig",
    "ServerConfig",
    "SwarmConfig",
    "SettingsConfig",
    "ClientConfig",
    "AuthConfig",
    "AuthMode",
    "DatabaseConfig",
    "DatabaseBackend",
]
