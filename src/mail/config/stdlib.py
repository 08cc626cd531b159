"""Settings of the standard library's actions: the ``[stdlib.http]`` and ``[stdlib.fs]``
tables.

Constructing these models directly gives the literal defaults below (pydantic raises
``ValidationError`` for bad values); :func:`mail.config.load_config` reads them from
``mail.toml``, puts ``[stdlib.fs] root`` in the data directory unless configured and makes
it absolute, and raises :class:`mail.errors.ConfigurationError` instead.
"""

from __future__ import annotations

from pydantic import Field

from mail.config._base import DEFAULT_DATA_DIR, ConfigModel, NetworkRules

__all__ = ["StdlibConfig", "StdlibFSConfig", "StdlibHTTPConfig"]


class StdlibHTTPConfig(NetworkRules):
    """``[stdlib.http]``: what the HTTP and interswarm actions may reach, and their limits.

    * ``allow_networks``, ``deny_networks``, ``allow_hosts``, ``deny_hosts``: as in
      ``[server.interswarm]``;
    * ``allow_loopback``, ``allow_private``: whether loopback (``127.0.0.0/8``, ``::1``) and
      private (``10.0.0.0/8``, ``172.16.0.0/12``, ``192.168.0.0/16``, ``100.64.0.0/10``,
      ``fc00::/7``) addresses may be reached; off by default, unlike for peers, since an
      agent chooses these URLs;
    * ``timeout``: seconds for each request (connect, each read, each write);
    * ``max_response_bytes``: the longest response body read;
    * ``max_redirects``: how many redirects one call follows (``0``: none).

    Bad values raise ``pydantic.ValidationError``.
    """

    allow_loopback: bool = False
    allow_private: bool = False
    timeout: float = Field(default=30.0, gt=0)
    max_response_bytes: int = Field(default=1_048_576, gt=0)
    max_redirects: int = Field(default=5, ge=0)


class StdlibFSConfig(ConfigModel):
    """``[stdlib.fs]``: the directory the file actions are confined to, and their caps.

    * ``root``: the directory (created on first use); by default ``files`` in the data
      directory;
    * ``max_read_bytes``, ``max_write_bytes``: the largest file read, the largest content
      written.

    Bad values raise ``pydantic.ValidationError``.
    """

    root: str = Field(default=f"{DEFAULT_DATA_DIR}/files", min_length=1)
    max_read_bytes: int = Field(default=1_048_576, gt=0)
    max_write_bytes: int = Field(default=1_048_576, gt=0)


class StdlibConfig(ConfigModel):
    """``[stdlib]``: the settings of :mod:`mail.stdlib`'s actions."""

    http: StdlibHTTPConfig = Field(default_factory=StdlibHTTPConfig)
    fs: StdlibFSConfig = Field(default_factory=StdlibFSConfig)
