"""Authentication and persistence settings: the ``[auth]`` and ``[database]`` tables."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from mail.config._base import DEFAULT_DATA_DIR, ConfigModel, http_url

#: ``embedded``: API keys kept in ``credentials_file``; ``remote``: an external auth service.
AuthMode = Literal["embedded", "remote"]
#: Where tasks, events and histories are stored (see :attr:`DatabaseConfig.backend`).
DatabaseBackend = Literal["postgres", "sqlite", "memory"]

_POSTGRES_SCHEMES = ("postgres://", "postgresql://")
_MAX_RETENTION_DAYS = 36_500  # a century: keeps "now - retention" a valid datetime


class AuthConfig(ConfigModel):
    """``[auth]``: how callers are authenticated.

    With no ``mode`` given, the mode is ``"remote"`` when both ``auth_endpoint`` and
    ``token_info_endpoint`` are set and ``"embedded"`` otherwise. ``"remote"`` without both
    endpoints is invalid. ``cache_seconds`` is how long a remote token lookup is reused and
    ``timeout`` bounds each call to the auth service. Bad values raise
    ``pydantic.ValidationError``.
    """

    mode: AuthMode = "embedded"
    auth_endpoint: str | None = None
    token_info_endpoint: str | None = None
    credentials_file: str = Field(default=f"{DEFAULT_DATA_DIR}/credentials.json", min_length=1)
    cache_seconds: float = Field(default=30.0, ge=0)
    timeout: float = Field(default=10.0, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _infer_mode(cls, data: Any) -> Any:
        if (
            isinstance(data, dict)
            and "mode" not in data
            and data.get("auth_endpoint")
            and data.get("token_info_endpoint")
        ):
            return {**data, "mode": "remote"}
        return data

    @field_validator("auth_endpoint", "token_info_endpoint")
    @classmethod
    def _check_endpoint(cls, value: str | None) -> str | None:
        return http_url(value)

    @model_validator(mode="after")
    def _remote_needs_endpoints(self) -> AuthConfig:
        if self.mode == "remote" and not (self.auth_endpoint and self.token_info_endpoint):
            raise ValueError(
                "mode 'remote' needs both auth_endpoint and token_info_endpoint "
                "(env AUTH_ENDPOINT and TOKEN_INFO_ENDPOINT)"
            )
        return self


class DatabaseConfig(ConfigModel):
    """``[database]``: PostgreSQL when ``url`` is set, else SQLite at ``sqlite_path``.

    ``url`` may be given as ``"none"`` (or empty) to mean unset. ``persist = false`` keeps
    everything in memory. ``url`` is kept out of ``repr`` and validation errors since it
    usually carries a password. A URL that is not ``postgres://`` or ``postgresql://``
    raises ``pydantic.ValidationError``.

    Retention: finished tasks last updated more than ``retention_days`` days ago, and those
    beyond the ``retention_max_tasks`` most recent, are pruned every ``prune_interval``
    seconds by the server and by ``mail db-prune``. ``0`` (or ``None``) turns a limit, or
    the server's job, off. Negative values (and more than 36,500 days) are invalid.

    ``commit_timeout``: how long, in seconds, an answer (a task's end, a pause, a cancel)
    waits for its task to be committed when the store fails or is slow; after it the
    client gets a 503 with ``Retry-After`` and the task id, and while writes keep
    failing (or one has been under way this long) new tasks are refused with a 503.
    """

    model_config = ConfigDict(hide_input_in_errors=True)

    url: str | None = Field(default=None, repr=False)
    sqlite_path: str = Field(default=f"{DEFAULT_DATA_DIR}/mail.db", min_length=1)
    persist: bool = True
    retention_days: float | None = Field(default=30.0, ge=0, le=_MAX_RETENTION_DAYS)
    retention_max_tasks: int | None = Field(default=None, ge=0)
    prune_interval: float = Field(default=3600.0, ge=0, allow_inf_nan=False)
    commit_timeout: float = Field(default=5.0, gt=0, le=300, allow_inf_nan=False)

    @field_validator("url", mode="before")
    @classmethod
    def _none_means_unset(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("", "none"):
            return None
        return value

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(_POSTGRES_SCHEMES):
            raise ValueError("expected a postgres:// or postgresql:// URL, or 'none' for SQLite")
        return value

    @property
    def backend(self) -> DatabaseBackend:
        """``"memory"`` when ``persist`` is false, ``"postgres"`` with a ``url``, else ``"sqlite"``."""
        if not self.persist:
            return "memory"
        return "postgres" if self.url is not None else "sqlite"

    @property
    def retention_older_than(self) -> timedelta | None:
        """``retention_days`` as a ``timedelta``; ``None`` (no age limit) when 0 or unset."""
        return timedelta(days=self.retention_days) if self.retention_days else None

    @property
    def retention_keep_last(self) -> int | None:
        """``retention_max_tasks``; ``None`` (no count limit) when 0 or unset."""
        return self.retention_max_tasks or None

    @property
    def prune_every(self) -> float | None:
        """Seconds between the server's prunes; ``None`` when the job is off
        (``prune_interval = 0``, no store, or neither limit set)."""
        limited = self.retention_older_than is not None or self.retention_keep_last is not None
        if not (self.persist and limited and self.prune_interval > 0):
            return None
        return self.prune_interval
