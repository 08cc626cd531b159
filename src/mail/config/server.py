"""Server settings: the ``[server]``, ``[server.swarm]`` and ``[server.settings]`` tables.

Constructing these models directly gives the literal defaults below (pydantic raises
``ValidationError`` for bad values); :func:`mail.config.load_config` is what reads
``mail.toml`` and the environment, resolves relative paths and raises
:class:`mail.errors.ConfigurationError` instead.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field, field_validator

from mail.config._base import DEFAULT_DATA_DIR, ConfigModel, http_url

__all__ = ["ServerConfig", "SwarmConfig", "SettingsConfig"]

_ALL_INTERFACES = ("0.0.0.0", "::", "")  # noqa: S104  # compared against, not bound


class SwarmConfig(ConfigModel):
    """``[server.swarm]``: which swarm template the server runs and where its registry lives.

    ``registry`` is also accepted under its legacy name ``registry_file``.
    ``description``, ``keywords`` and ``public`` describe the swarm to peers. Bad values
    raise ``pydantic.ValidationError``.
    """

    name: str = Field(default="example-no-proxy", min_length=1)
    source: str = Field(default="swarms.json", min_length=1)
    registry: str = Field(
        default=".mail/registries/example-no-proxy.json",
        min_length=1,
        validation_alias=AliasChoices("registry", "registry_file"),
    )
    description: str = ""
    keywords: tuple[str, ...] = Field(default=(), strict=False)
    public: bool = False


class SettingsConfig(ConfigModel):
    """``[server.settings]``: runtime limits applied to every task.

    Bad values raise ``pydantic.ValidationError``.
    """

    task_message_limit: int = Field(default=15, ge=1)
    print_llm_streams: bool = True
    max_finished_tasks: int = Field(default=1000, ge=0)
    finished_task_ttl: float = Field(default=3600.0, gt=0)
    task_timeout: float = Field(default=3600.0, gt=0)


class ServerConfig(ConfigModel):
    """``[server]``: how the HTTP server listens, what it advertises, where it keeps state.

    Bad values (a port outside 0-65535, a ``base_url`` that is not http(s)) raise
    ``pydantic.ValidationError``.
    """

    port: int = Field(default=8000, ge=0, le=65535)
    host: str = Field(default="0.0.0.0", min_length=1)  # noqa: S104  # the contract's default
    reload: bool = False
    debug: bool = False
    swarm: SwarmConfig = Field(default_factory=SwarmConfig)
    settings: SettingsConfig = Field(default_factory=SettingsConfig)
    base_url: str | None = None
    data_dir: str = Field(default=DEFAULT_DATA_DIR, min_length=1)
    max_body_bytes: int = Field(default=1_048_576, gt=0)
    idle_runtime_seconds: float = Field(default=1800.0, gt=0)
    access_log: bool = True

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str | None) -> str | None:
        return http_url(value)

    @property
    def advertised_url(self) -> str:
        """The URL peers should use: ``base_url``, else ``http://{host}:{port}``.

        A wildcard host (``0.0.0.0``, ``::``) is replaced by ``localhost``: set ``base_url``
        (env ``BASE_URL``) whenever peers on other machines must reach this server.
        """
        if self.base_url is not None:
            return self.base_url
        host = "localhost" if self.host in _ALL_INTERFACES else self.host
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"
