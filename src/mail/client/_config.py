"""Where :class:`mail.client.MAILClient` finds its settings and its default API key.

Both read ``mail.toml`` (through :mod:`mail.config`, imported only when called, so that
importing the client stays light).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mail.config import ClientConfig, MAILConfig

__all__ = ["default_api_key", "load_client_config", "local_server_url"]

logger = logging.getLogger("mail.client")


def load_client_config() -> ClientConfig:
    """The ``[client]`` table of ``mail.toml``; the defaults (and a warning) if it is unusable."""
    from mail.config import ClientConfig, load_config  # noqa: PLC0415  # keeps the import light
    from mail.errors import ConfigurationError  # noqa: PLC0415

    try:
        return load_config().client
    except ConfigurationError as e:
        logger.warning("using the default client settings: %s", e)
        return ClientConfig()


def default_api_key(config: MAILConfig | None = None, *, role: str = "user") -> str | None:
    """The ``role`` key of the local server's embedded credentials file, if there is one.

    The file is ``config.auth.credentials_file`` (``config`` defaults to
    ``mail.config.load_config()``), written by ``mail server`` on first start as
    ``{"version": 1, "keys": [{"role", "id", "key"}, ...]}``; the key whose ``id`` is the
    role name wins. Returns ``None`` when the file does not exist or holds no such key.

    Raises :class:`~mail.errors.ConfigurationError` when the configuration is invalid or
    the file is unreadable or malformed.
    """
    from mail.config import load_config  # noqa: PLC0415  # keeps the import light
    from mail.errors import ConfigurationError  # noqa: PLC0415

    path = Path((config or load_config()).auth.credentials_file)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigurationError(f"cannot read credentials file {path}: {e}") from e
    try:
        keys = json.loads(text)["keys"]
        matching = [
            (k["id"], k["key"]) for k in keys if isinstance(k, dict) and k.get("role") == role
        ]
    except (ValueError, KeyError, TypeError) as e:
        raise ConfigurationError(f"credentials file {path} is malformed") from e
    chosen = next((key for id_, key in matching if id_ == role), None)
    if chosen is None and matching:
        chosen = matching[0][1]
    return chosen if isinstance(chosen, str) else None


def local_server_url(config: MAILConfig | None = None) -> str | None:
    """The base URL a running local ``mail server`` recorded in ``<data_dir>/server.json``
    (``config`` defaults to ``mail.config.load_config()``); ``None`` when there is no such
    file or its server process is gone.

    Raises :class:`~mail.errors.ConfigurationError` when the configuration is invalid.
    """
    from mail._server_file import listening_url  # noqa: PLC0415
    from mail.config import load_config  # noqa: PLC0415  # keeps the import light

    return listening_url((config or load_config()).server.data_dir)
