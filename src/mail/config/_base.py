"""Shared pieces of the configuration models."""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

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
