"""The configuration models on their own: contract defaults, immutability, secrets."""

from __future__ import annotations

import pydantic
import pytest

import mail.config
from mail.config import (
    AuthConfig,
    ClientConfig,
    DatabaseConfig,
    InterswarmConfig,
    MAILConfig,
    ServerConfig,
    SettingsConfig,
    SwarmConfig,
)


def test_public_names_are_pinned() -> None:
    assert set(mail.config.__all__) == {
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
    }
    assert all(hasattr(mail.config, name) for name in mail.config.__all__)


def test_seed_module_path_exports_server_models() -> None:
    from mail.config import server

    assert server.ServerConfig is ServerConfig
    assert server.SwarmConfig is SwarmConfig
    assert server.SettingsConfig is SettingsConfig
    assert server.InterswarmConfig is InterswarmConfig


def test_server_defaults_match_the_contract() -> None:
    server = ServerConfig()
    assert (server.port, server.host, server.reload, server.debug) == (
        8000,
        "0.0.0.0",  # noqa: S104  # the contract default, compared only
        False,
        False,
    )
    assert server.swarm == SwarmConfig(
        name="example-no-proxy",
        source="swarms.json",
        registry="registries/example-no-proxy.json",
        description="",
        keywords=(),
        public=False,
    )
    assert server.settings.task_message_limit == 15
    assert server.settings.print_llm_streams is True
    assert (server.settings.max_finished_tasks, server.settings.finished_task_ttl) == (1000, 3600.0)
    assert server.settings.task_timeout == 3600.0
    assert (server.base_url, server.data_dir) == (None, ".mail")
    assert (server.max_body_bytes, server.idle_runtime_seconds) == (1_048_576, 1800.0)
    assert server.access_log is True
    assert server.interswarm == InterswarmConfig(
        health_interval=30.0,
        health_max_backoff=600.0,
        agent_discovery=True,
        discovery_hosts=("localhost", "127.0.0.1", "::1"),
    )


def test_interswarm_backoff_below_the_interval_is_refused() -> None:
    with pytest.raises(pydantic.ValidationError, match="health_max_backoff"):
        InterswarmConfig(health_interval=60.0, health_max_backoff=30.0)


def test_client_auth_database_defaults() -> None:
    assert ClientConfig() == ClientConfig(timeout=3600.0, verbose=False, url=None, api_key=None)
    auth = AuthConfig()
    assert (auth.mode, auth.auth_endpoint, auth.token_info_endpoint) == ("embedded", None, None)
    assert (auth.credentials_file, auth.cache_seconds, auth.timeout) == (
        ".mail/credentials.json",
        30.0,
        10.0,
    )
    db = DatabaseConfig()
    assert (db.url, db.sqlite_path, db.persist, db.backend) == (
        None,
        ".mail/mail.db",
        True,
        "sqlite",
    )


def test_models_are_frozen() -> None:
    config = MAILConfig()
    with pytest.raises(pydantic.ValidationError):
        config.server.port = 1  # type: ignore[misc]


def test_registry_file_is_an_alias_of_registry() -> None:
    assert SwarmConfig.model_validate({"registry_file": "r.json"}).registry == "r.json"


@pytest.mark.parametrize("name", ["../../x", "${HOME}", "", "a b"])
def test_swarm_name_follows_the_name_pattern(name: str) -> None:
    with pytest.raises(pydantic.ValidationError, match="name"):
        SwarmConfig(name=name)


def test_data_files_follow_data_dir_when_built_directly() -> None:
    config = MAILConfig(server=ServerConfig(data_dir="/srv/mail"))
    assert config.auth.credentials_file == "/srv/mail/credentials.json"
    assert config.database.sqlite_path == "/srv/mail/mail.db"
    explicit = MAILConfig(
        server=ServerConfig(data_dir="/srv/mail"), auth=AuthConfig(credentials_file="/k.json")
    )
    assert explicit.auth.credentials_file == "/k.json"
    assert explicit.database.sqlite_path == "/srv/mail/mail.db"


def test_auth_mode_is_remote_when_both_endpoints_are_given() -> None:
    auth = AuthConfig(auth_endpoint="http://a/login", token_info_endpoint="http://a/info")
    assert auth.mode == "remote"
    explicit = AuthConfig(
        mode="embedded", auth_endpoint="http://a/login", token_info_endpoint="http://a/info"
    )
    assert explicit.mode == "embedded"


def test_remote_auth_without_endpoints_is_invalid() -> None:
    with pytest.raises(pydantic.ValidationError, match="token_info_endpoint"):
        AuthConfig(mode="remote", auth_endpoint="http://a/login")


def test_database_backend() -> None:
    assert DatabaseConfig(url="postgresql://u@h/db").backend == "postgres"
    assert DatabaseConfig(url="none").url is None
    assert DatabaseConfig(persist=False, url="postgresql://u@h/db").backend == "memory"


def test_secrets_stay_out_of_repr_and_errors() -> None:
    assert "sk-secret" not in repr(ClientConfig(api_key="sk-secret"))
    assert "hunter2" not in repr(DatabaseConfig(url="postgresql://u:hunter2@h/db"))
    with pytest.raises(pydantic.ValidationError) as info:
        DatabaseConfig(url="mysql://u:hunter2@h/db")
    assert "hunter2" not in str(info.value)


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        (ServerConfig(), "http://localhost:8000"),
        (ServerConfig(host="127.0.0.1", port=9000), "http://127.0.0.1:9000"),
        (ServerConfig(host="::", port=1), "http://localhost:1"),
        (ServerConfig(host="::1", port=1), "http://[::1]:1"),
        (ServerConfig(base_url="https://mail.example.com/"), "https://mail.example.com"),
    ],
)
def test_advertised_url(server: ServerConfig, expected: str) -> None:
    assert server.advertised_url == expected
