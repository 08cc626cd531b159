"""Configuration: ``mail.toml`` and the environment, read once into validated models.

:func:`load_config` is the one reader; everything else receives the :class:`MAILConfig` it
returns (or one of its parts) as a parameter. Nothing is read at import time.

Public names:

* :func:`load_config`, :func:`default_config_path`, :data:`ENV_OVERRIDES`,
  :data:`CONFIG_FILE_NAME`, :data:`CONFIG_PATH_ENV`
* :class:`MAILConfig` and its parts :class:`ServerConfig` (with :class:`SwarmConfig`,
  :class:`SettingsConfig`, :class:`InterswarmConfig`), :class:`ClientConfig`,
  :class:`AuthConfig`, :class:`DatabaseConfig`, :class:`StdlibConfig` (with
  :class:`StdlibHTTPConfig`, :class:`StdlibFSConfig`); the literal types :data:`AuthMode`,
  :data:`DatabaseBackend`

Federation settings live in ``[server.interswarm]``::

    [server.interswarm]
    health_interval = 30.0        # s between peer health checks (MAIL_SWARM_HEALTH_INTERVAL)
    health_max_backoff = 600.0    # longest wait before re-checking a peer that stays down
    agent_discovery = true        # may agents' discover_swarms make the server fetch URLs?
    discovery_hosts = ["localhost", "127.0.0.1", "::1"]  # besides registered peers

Agent-driven discovery fetches only http(s) URLs on those hosts or at a registered peer's
origin, with a timeout, a 1 MiB answer cap and no redirects; ``discovery_hosts = []``
limits it to registered peers, ``agent_discovery = false`` turns it off.

See ``docs/configuration.md`` for every key, its default and its environment variable.
"""

from __future__ import annotations

from mail.config._backends import AuthConfig, AuthMode, DatabaseBackend, DatabaseConfig
from mail.config._loader import ENV_OVERRIDES, default_config_path, load_config
from mail.config._lookup import CONFIG_FILE_NAME, CONFIG_PATH_ENV
from mail.config._root import MAILConfig
from mail.config.client import ClientConfig
from mail.config.server import InterswarmConfig, ServerConfig, SettingsConfig, SwarmConfig
from mail.config.stdlib import StdlibConfig, StdlibFSConfig, StdlibHTTPConfig

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
    "InterswarmConfig",
    "ClientConfig",
    "AuthConfig",
    "AuthMode",
    "DatabaseConfig",
    "DatabaseBackend",
    "StdlibConfig",
    "StdlibHTTPConfig",
    "StdlibFSConfig",
]
