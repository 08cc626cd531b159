"""``mail server --reload``: the worker process uvicorn restarts gets the same configuration.

With reload, uvicorn imports the app by name (:data:`APP`) in a worker process it spawns
again after each code change, so the app cannot be handed over as an object. The parent
passes its configuration through the worker's environment instead: every setting except
secrets as JSON in :data:`OVERRIDES_ENV` (applied as ``load_config`` overrides), the file
it read in ``MAIL_CONFIG_PATH`` and the database URL in ``DATABASE_URL``, the variables
``load_config`` reads anyway. :func:`worker_config` is what the lazily built
``mail.server:app`` loads; without :data:`OVERRIDES_ENV` (plain ``uvicorn mail.server:app``)
it is ``load_config()``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mail._log_format import json_logs
from mail.errors import ConfigurationError

if TYPE_CHECKING:
    from mail.config import MAILConfig

__all__ = ["APP", "OVERRIDES_ENV", "reload_environment", "uvicorn_options", "worker_config"]

#: What uvicorn imports in a reloading worker.
APP = "mail.server:app"
#: The environment variable carrying the parent's settings to the worker (JSON).
OVERRIDES_ENV = "MAIL_SERVER_OVERRIDES"
_SECTIONS = ("server", "client", "auth", "database")
# passed by the variables load_config reads, never inside the JSON
_SECRETS: dict[str, set[str]] = {"client": {"api_key"}, "database": {"url"}}


def uvicorn_options(config: MAILConfig) -> dict[str, Any]:
    """The keyword arguments of ``uvicorn.run`` for ``config`` (``reload`` included)."""
    server = config.server
    options: dict[str, Any] = {
        "host": server.host,
        "port": server.port,
        "reload": server.reload,
        "log_level": "debug" if server.debug else "info",
        "access_log": server.access_log,
        "timeout_graceful_shutdown": 10,
        # the /map WebSocket (MAP's SDK transport), on websockets' maintained sans-I/O core;
        # a frame over the body limit is refused (1009) before it is buffered whole
        "ws": "websockets-sansio",
        "ws_max_size": server.max_body_bytes,
        # MAP's frames are small: compressing each cost the server and the client more CPU
        # than the rest of a turn's transport (benchmarks/map_websocket.py)
        "ws_per_message_deflate": False,
    }
    if server.reload:
        options["log_config"] = worker_logging()
    elif json_logs():
        # uvicorn's records go to the root logger's JSON handler (mail server set it up)
        options["log_config"] = None
    return options


def worker_logging() -> dict[str, Any]:
    """uvicorn's logging configuration plus the ``mail`` loggers, at this process's level
    (``$MAIL_LOG_LEVEL``, which ``mail server`` applied): a reloading worker is a process
    of uvicorn's, and only this configuration sets up its logging."""
    import copy  # noqa: PLC0415
    import logging  # noqa: PLC0415

    from uvicorn.config import LOGGING_CONFIG  # noqa: PLC0415  # the server process only

    level = logging.getLevelName(logging.getLogger("mail").getEffectiveLevel())
    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["mail"] = {"handlers": ["default"], "level": level, "propagate": False}
    if json_logs():
        for formatter in config["formatters"].values():
            formatter.clear()
            formatter["()"] = "mail._log_format.JSONFormatter"
    return config


def reload_environment(config: MAILConfig) -> dict[str, str]:
    """The variables that make :func:`worker_config` return ``config`` in a worker."""
    from mail.config import CONFIG_PATH_ENV  # noqa: PLC0415  # no config import at start-up

    settings = config.model_dump(mode="json", include=set(_SECTIONS), exclude=_SECRETS)
    env = {OVERRIDES_ENV: json.dumps(settings)}
    if config.source_path is not None:
        env[CONFIG_PATH_ENV] = str(config.source_path)
    if config.database.url is not None:
        env["DATABASE_URL"] = config.database.url
    return env


def worker_config(env: Mapping[str, str]) -> MAILConfig:
    """The configuration of a server started by name: ``load_config`` with ``env`` and the
    settings in :data:`OVERRIDES_ENV`, if set. Raises :class:`ConfigurationError`."""
    from mail.config import load_config  # noqa: PLC0415  # no config import at start-up

    raw = env.get(OVERRIDES_ENV)
    if not raw:
        return load_config(env=env)
    try:
        overrides = json.loads(raw)
    except ValueError as e:
        raise ConfigurationError(f"{OVERRIDES_ENV} is not JSON: {e}") from None
    if not isinstance(overrides, dict):
        raise ConfigurationError(f"{OVERRIDES_ENV} must hold a JSON object")
    return load_config(env=env, overrides=overrides)
