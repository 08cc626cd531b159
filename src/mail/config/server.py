"""Server settings: the ``[server]``, ``[server.swarm]``, ``[server.settings]``,
``[server.interswarm]`` and ``[server.cluster]`` tables.

Constructing these models directly gives the literal defaults below (pydantic raises
``ValidationError`` for bad values); :func:`mail.config.load_config` is what reads
``mail.toml`` and the environment, resolves relative paths and raises
:class:`mail.errors.ConfigurationError` instead.
"""

from __future__ import annotations

import logging
import socket
from typing import Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, ConfigDict, Field, field_validator, model_validator

from mail._limits import NAME_PATTERN
from mail.config._base import DEFAULT_DATA_DIR, ConfigModel, NetworkRules, http_url

__all__ = [
    "DEFAULT_CORS_ORIGINS",
    "BudgetConfig",
    "ModelPrice",
    "ClusterConfig",
    "ServerConfig",
    "SwarmConfig",
    "SettingsConfig",
    "InterswarmConfig",
    "MapConfig",
    "MetricsConfig",
    "TelemetryConfig",
]

#: The browser origins allowed by default: a UI served on port 3000 of this machine.
DEFAULT_CORS_ORIGINS = ("http://localhost:3000", "http://127.0.0.1:3000")

#: The configuration logger (``mail.config``); v1.3.6 had one per config module.
logger = logging.getLogger("mail.config")

_ALL_INTERFACES = ("0.0.0.0", "::", "")  # noqa: S104  # compared against, not bound


class SwarmConfig(ConfigModel):
    """``[server.swarm]``: which swarm template the server runs and where its registry lives.

    ``registry`` is also accepted under its legacy name ``registry_file``.
    ``description``, ``keywords`` and ``public`` describe the swarm to peers. Bad values
    raise ``pydantic.ValidationError``.
    """

    name: str = Field(default="example-no-proxy", pattern=NAME_PATTERN)
    source: str = Field(default="swarms.json", min_length=1)
    registry: str = Field(
        default="registries/example-no-proxy.json",
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


class InterswarmConfig(NetworkRules):
    """``[server.interswarm]``: how the server watches its peers and what agents may discover.

    * ``health_interval``: seconds between health checks of the registered swarms
      (env ``MAIL_SWARM_HEALTH_INTERVAL``); a peer that failed ``n`` checks in a row is
      next checked after ``min(health_interval * 2**n, health_max_backoff)`` seconds.
    * ``reply_timeout``: seconds a local agent's request (or interswarm broadcast) that a
      peer accepted waits for the peer's reply; then the agent is told it will get none.
      The agent is told sooner when a health check marks the peer inactive.
    * ``agent_discovery``: whether agents' ``discover_swarms`` tool may make the server
      fetch peers' ``GET /swarms`` at all.
    * ``discovery_hosts``: the hosts (``name``, ``address`` or ``host:port``) agents may
      discover from besides the swarms already registered; default the loopback names.
      The swarms a listing names are added only if their URL is allowed by the same rule.
      ``[]`` limits discovery to registered peers.
    * ``allow_networks``, ``deny_networks`` (CIDR networks or addresses), ``allow_hosts``,
      ``deny_hosts`` (host names, ``*.example.com`` for subdomains): widen or narrow which
      addresses the server connects to for peers (registration, health checks, discovery,
      delivery). By default unspecified, link-local, cloud metadata and multicast
      addresses are refused, loopback and private ones allowed; a deny entry wins over an
      allow entry. See docs/security.md.

    Bad values raise ``pydantic.ValidationError``.
    """

    health_interval: float = Field(default=30.0, gt=0)
    health_max_backoff: float = Field(default=600.0, gt=0)
    reply_timeout: float = Field(default=300.0, gt=0)
    agent_discovery: bool = True
    discovery_hosts: tuple[str, ...] = Field(
        default=("localhost", "127.0.0.1", "::1"), strict=False
    )

    @model_validator(mode="after")
    def _check_backoff(self) -> InterswarmConfig:
        if self.health_max_backoff < self.health_interval:
            raise ValueError(
                f"health_max_backoff ({self.health_max_backoff}) must be at least "
                f"health_interval ({self.health_interval})"
            )
        return self

    @field_validator("discovery_hosts")
    @classmethod
    def _check_hosts(cls, hosts: tuple[str, ...]) -> tuple[str, ...]:
        for host in hosts:
            if not _is_host_entry(host.strip()):
                raise ValueError(f"expected host names or host:port, got {host!r}")
        return hosts


class ClusterConfig(ConfigModel):
    """``[server.cluster]``: several ``mail server`` replicas sharing one deployment.

    * ``redis_url`` (env ``MAIL_REDIS_URL``): the Redis server the replicas meet through
      (``redis://host:6379/0``, ``rediss://`` for TLS). ``None`` (the default): no cluster,
      nothing changes. Cluster mode needs the PostgreSQL store (``[database] url``).
    * ``replica_id`` (env ``MAIL_REPLICA_ID``): this replica's name in the cluster, unique
      among the replicas; default ``<hostname>:<port>`` (:meth:`ServerConfig.replica`).
    * ``lease_seconds`` (env ``MAIL_LEASE_SECONDS``): how long a replica's heartbeat (and,
      later, its hold on the tasks it runs) lasts without renewal; renewed every third of it.

    Bad values raise ``pydantic.ValidationError``. See docs/scaling.md.
    """

    redis_url: str | None = None
    replica_id: str | None = Field(default=None, min_length=1, max_length=200)
    lease_seconds: float = Field(default=15.0, ge=1.0, le=3600.0)

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        scheme = urlsplit(value.strip()).scheme
        if scheme not in ("redis", "rediss", "unix"):
            raise ValueError(f"must be a redis://, rediss:// or unix:// URL, got scheme {scheme!r}")
        return value.strip()

    @field_validator("replica_id")
    @classmethod
    def _check_replica_id(cls, value: str | None) -> str | None:
        if value is not None and any(c.isspace() for c in value):
            raise ValueError("must not contain whitespace")
        return value

    @property
    def enabled(self) -> bool:
        """Whether this server is a replica of a cluster (a ``redis_url`` is set)."""
        return self.redis_url is not None


def _is_host_entry(text: str) -> bool:
    """``name``, ``address``, ``name:port`` or ``[v6]:port`` (no scheme, path or user)."""
    if not text or any(c in text for c in "/@?# \t"):
        return False
    if text.count(":") > 1 and not text.startswith("["):
        return True  # a bare IPv6 address
    try:
        parts = urlsplit(f"//{text}")
        _ = parts.port  # raises for a port that is not a number in range
    except ValueError:
        return False
    return bool(parts.hostname)


class MapConfig(ConfigModel):
    """``[server.map]``: MAP Mail, the ``POST /map`` JSON-RPC methods ``mail/*``.

    ``summarizer`` makes ``mail/summary``'s summaries: ``"extractive"`` (offline, the
    default) or ``"litellm"``: the LiteLLM model ``summary_model`` (required then), at
    ``summary_api_base`` with ``summary_api_key`` (env ``MAIL_MAP_SUMMARY_API_KEY``; kept
    out of ``repr`` and errors) if set, each call bounded by ``summary_timeout`` seconds.
    """

    model_config = ConfigDict(hide_input_in_errors=True)

    enabled: bool = True
    max_thread_depth: int = Field(default=8, ge=1)
    summarizer: Literal["extractive", "litellm"] = "extractive"
    summary_model: str | None = Field(default=None, min_length=1)
    summary_api_base: str | None = None
    summary_api_key: str | None = Field(default=None, repr=False)
    summary_timeout: float = Field(default=60.0, gt=0, allow_inf_nan=False)

    @field_validator("summary_api_base")
    @classmethod
    def _check_api_base(cls, value: str | None) -> str | None:
        return http_url(value)

    @model_validator(mode="after")
    def _litellm_needs_a_model(self) -> MapConfig:
        if self.summarizer == "litellm" and self.summary_model is None:
            raise ValueError(
                'summarizer "litellm" needs summary_model, a LiteLLM model name '
                '(e.g. "openai/gpt-4o-mini")'
            )
        return self


class MetricsConfig(ConfigModel):
    """``[server.metrics]``: ``GET /metrics``, the server's counters in the Prometheus text
    format (the ``mail[metrics]`` extra; see docs/observability.md).

    * ``enabled`` (env ``MAIL_METRICS``): off by default; on, ``GET /metrics`` answers an
      admin key (off: 404 saying how to turn it on).
    * ``port`` (env ``MAIL_METRICS_PORT``): also serve them without a key on a listener of
      their own at ``host:port`` (``host`` default ``127.0.0.1``); ``None``: no listener.

    Bad values raise ``pydantic.ValidationError``.
    """

    enabled: bool = False
    host: str = Field(default="127.0.0.1", min_length=1)
    port: int | None = Field(default=None, ge=1, le=65535)

    @model_validator(mode="after")
    def _port_needs_enabled(self) -> MetricsConfig:
        if self.port is not None and not self.enabled:
            raise ValueError("port is set but metrics are not enabled: set enabled = true")
        return self


class TelemetryConfig(ConfigModel):
    """``[server.telemetry]``: OpenTelemetry traces of tasks, agent turns, model calls,
    actions and hops (the ``mail[otel]`` extra; see docs/observability.md).

    * ``enabled`` (env ``MAIL_TELEMETRY``): off by default. The standard ``OTEL_*``
      variables also turn traces on (``OTEL_EXPORTER_OTLP_ENDPOINT``,
      ``OTEL_TRACES_EXPORTER``) or off (``OTEL_SDK_DISABLED``, ``OTEL_TRACES_EXPORTER=none``).
    * ``endpoint`` (env ``MAIL_TELEMETRY_ENDPOINT``): the OTLP/HTTP collector's base URL
      (``http://collector:4318``; spans go to its ``/v1/traces``). ``None``: the
      ``OTEL_EXPORTER_OTLP_*`` variables, else ``http://localhost:4318``.
    * ``service_name``: the traces' ``service.name`` (default the swarm's name;
      ``OTEL_SERVICE_NAME`` wins).
    * ``capture_content`` (env ``MAIL_TELEMETRY_CAPTURE_CONTENT``): record the messages
      sent to models and their answers on the model calls' spans (off: never).

    Bad values raise ``pydantic.ValidationError``.
    """

    enabled: bool = False
    endpoint: str | None = None
    service_name: str | None = Field(default=None, min_length=1)
    capture_content: bool = False

    @field_validator("endpoint")
    @classmethod
    def _check_endpoint(cls, value: str | None) -> str | None:
        return http_url(value)

    @model_validator(mode="after")
    def _endpoint_needs_enabled(self) -> TelemetryConfig:
        if self.endpoint is not None and not self.enabled:
            raise ValueError("endpoint is set but telemetry is not enabled: set enabled = true")
        return self


class ModelPrice(ConfigModel):
    """A model's price in USD per million tokens (``cached_input``: of cached input tokens;
    default: the ``input`` price)."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)


class BudgetConfig(ConfigModel):
    """``[server.budget]``: the limits of every task whose swarm does not set its own
    (swarms.json's ``budget`` wins, limit by limit; see docs/budgets.md) and the prices
    its ``cost_usd`` is counted with.

    * ``input_tokens``, ``output_tokens``, ``total_tokens``, ``agent_turns``, ``actions``
      (whole numbers), ``cost_usd``, ``seconds``: limits (absent: none);
      ``warn_at``: the fraction of a limit (0.8) at which the supervisor is told to finish.
    * ``prices``: model -> ``{input, output, cached_input}`` USD per million tokens.
    * ``litellm_prices``: price the models ``prices`` does not list from LiteLLM's table.

    Bad values raise ``pydantic.ValidationError``.
    """

    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    total_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
    agent_turns: int | None = Field(default=None, ge=0)
    actions: int | None = Field(default=None, ge=0)
    seconds: float | None = Field(default=None, ge=0)
    warn_at: float | None = Field(default=None, gt=0, lt=1)
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    litellm_prices: bool = True

    def limits(self) -> dict[str, float]:
        """The limits set (and ``warn_at``), as a budget's JSON (:mod:`mail.core.budget`)."""
        return self.model_dump(exclude={"prices", "litellm_prices"}, exclude_none=True)

    def price_table(self) -> dict[str, dict[str, float]]:
        return {model: price.model_dump(exclude_none=True) for model, price in self.prices.items()}


class ServerConfig(ConfigModel):
    """``[server]``: how the HTTP server listens, what it advertises, where it keeps state.

    ``llm_check``: before it listens, ``mail server`` refuses to start when an LLM agent of
    the swarm lacks its proxy URL or API key (``mail doctor``'s "llm keys" check); ``false``
    (or ``--skip-llm-check``) starts anyway, for deployments that set them later.

    Bad values (a port outside 0-65535, a ``base_url`` that is not http(s)) raise
    ``pydantic.ValidationError``.
    """

    port: int = Field(default=8000, ge=0, le=65535)
    host: str = Field(default="0.0.0.0", min_length=1)  # noqa: S104  # the contract's default
    reload: bool = False
    debug: bool = False
    swarm: SwarmConfig = Field(default_factory=SwarmConfig)
    settings: SettingsConfig = Field(default_factory=SettingsConfig)
    interswarm: InterswarmConfig = Field(default_factory=InterswarmConfig)
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    map: MapConfig = Field(default_factory=MapConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    base_url: str | None = None
    data_dir: str = Field(default=DEFAULT_DATA_DIR, min_length=1)
    max_body_bytes: int = Field(default=1_048_576, gt=0)
    idle_runtime_seconds: float = Field(default=1800.0, gt=0)
    access_log: bool = True
    llm_check: bool = True
    cors_origins: list[str] = Field(
        default_factory=lambda: list(DEFAULT_CORS_ORIGINS),
        description="Browser origins allowed to call the server (CORS); [] allows none",
    )

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

    @property
    def replica_id(self) -> str:
        """This replica's id: ``[server.cluster] replica_id``, else ``<hostname>:<port>``."""
        return self.cluster.replica_id or f"{socket.gethostname()}:{self.port}"
