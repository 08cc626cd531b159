"""Which server ``mail client`` and the one-shot commands talk to, and with which key.

The URL is the one given (argument or ``--url``; a ``swarm://`` link is turned into an
HTTP(S) URL and its token), else ``[client] url``, else the address a running local server
recorded in ``<[server] data_dir>/server.json``, else ``http://127.0.0.1:<[server] port>``.
The key is ``--api-key``, else the link's token, else ``[client] api_key``, else (for a
loopback URL only, so it never leaves the machine) the ``user`` key the local server wrote.
Standard library only at import; the configuration is loaded inside :func:`resolve`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mail._server_file import listening_url
from mail.url_scheme import SWARM_SCHEME, is_loopback, parse_swarm_url

if TYPE_CHECKING:
    from mail.config import ClientConfig, MAILConfig

__all__ = ["UNREACHABLE_HINT", "Target", "is_loopback", "resolve", "swarm_link"]

#: What a command adds when no server answered at all.
UNREACHABLE_HINT = (
    "hint: is the server running? Give its address with --url URL "
    "(a local `mail server` records it in its data directory), or run `mail doctor`"
)


@dataclass(frozen=True, slots=True)
class Target:
    """A resolved connection: base URL, API key (``None``: none) and client settings."""

    url: str
    api_key: str | None
    config: ClientConfig
    key_source: str


def swarm_link(link: str) -> tuple[str, str | None]:
    """``swarm://connect?server=HOST[:PORT]&token=KEY`` as ``(base URL, token)``; see
    :func:`mail.url_scheme.parse_swarm_url`. Raises ``ValueError`` for another kind of link."""
    parsed = parse_swarm_url(link)
    return parsed.base_url, parsed.token


def _given_url(args: argparse.Namespace) -> str | None:
    positional = getattr(args, "url", None)
    flag = getattr(args, "url_flag", None)
    if positional and flag and positional != flag:
        raise ValueError(f"two URLs given: {positional!r} and --url {flag!r}")
    return positional or flag


def resolve(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Target:
    """The :class:`Target` for parsed connection flags (``url``/``url_flag``, ``api_key``,
    ``timeout``, ``verbose``, ``config``; missing attributes count as not given), reading
    ``mail.toml`` and ``env`` (default ``os.environ``) through :func:`mail.config.load_config`.

    Raises ``ValueError`` for a bad URL, :class:`~mail.errors.ConfigurationError` for an
    unusable ``mail.toml``.
    """
    from mail.config import load_config  # noqa: PLC0415  # pydantic: only when a command runs

    overrides = {
        "client": {
            "timeout": getattr(args, "timeout", None),
            "verbose": True if getattr(args, "verbose", False) else None,
        }
    }
    config = load_config(getattr(args, "config", None), env=env, overrides=overrides)
    url = _given_url(args)
    token = None
    if url and url.lower().startswith(f"{SWARM_SCHEME}:"):
        url, token = swarm_link(url)
    if not url:
        url = (
            config.client.url
            or listening_url(config.server.data_dir)
            or f"http://127.0.0.1:{config.server.port}"
        )
    if "://" not in url:
        raise ValueError(f"not an http(s) URL: {url!r}")
    url = url.rstrip("/")
    key, source = _api_key(args, token, url, config)
    return Target(url=url, api_key=key, config=config.client, key_source=source)


def _api_key(
    args: argparse.Namespace, token: str | None, url: str, config: MAILConfig
) -> tuple[str | None, str]:
    from mail.client import default_api_key  # noqa: PLC0415
    from mail.errors import ConfigurationError  # noqa: PLC0415

    given = getattr(args, "api_key", None)
    if given:
        return given, "--api-key"
    if token:
        return token, "swarm link"
    if config.client.api_key:
        return config.client.api_key, "[client] api_key"
    if not is_loopback(urlsplit(url).hostname):
        return None, "none"
    try:
        key = default_api_key(config)
    except ConfigurationError:
        return None, "none"
    return (key, "credentials file") if key else (None, "none")
