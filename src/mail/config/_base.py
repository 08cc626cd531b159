"""Shared pieces of the configuration models."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Directory, relative to mail.toml (or the working directory), for the server's local state.
DEFAULT_DATA_DIR = ".mail"


class ConfigModel(BaseModel):
    """Base of the configuration models: immutable, strictly typed, no unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


def http_url(value: str | None) -> str | None:
    """Check that ``value`` is an absolute http(s) URL; return it without a trailing slash."""
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("expected an absolute http:// or https:// URL")
    return value.rstrip("/")


class NetworkRules(ConfigModel):
    """The outbound guard's lists, shared by ``[server.interswarm]`` and ``[stdlib.http]``.

    ``allow_networks``, ``deny_networks``: CIDR networks or single addresses;
    ``allow_hosts``, ``deny_hosts``: host names, ``*.example.com`` for every subdomain
    (see :class:`mail.net.AddressPolicy`). A bad entry raises
    ``pydantic.ValidationError``.
    """

    allow_networks: tuple[str, ...] = Field(default=(), strict=False)
    deny_networks: tuple[str, ...] = Field(default=(), strict=False)
    allow_hosts: tuple[str, ...] = Field(default=(), strict=False)
    deny_hosts: tuple[str, ...] = Field(default=(), strict=False)

    @field_validator("allow_networks", "deny_networks")
    @classmethod
    def _check_networks(cls, networks: tuple[str, ...]) -> tuple[str, ...]:
        for network in networks:
            try:
                ipaddress.ip_network(network.strip(), strict=False)
            except ValueError:
                raise ValueError(
                    f"expected IP networks such as 10.0.0.0/8, got {network!r}"
                ) from None
        return networks

    @field_validator("allow_hosts", "deny_hosts")
    @classmethod
    def _check_names(cls, hosts: tuple[str, ...]) -> tuple[str, ...]:
        for host in hosts:
            name = host.strip().removeprefix("*.")
            if not name or any(c in name for c in "/@?#:[] \t*"):
                raise ValueError(f"expected host names such as peer.example.com, got {host!r}")
        return hosts
