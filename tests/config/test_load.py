"""load_config: path resolution, environment and CLI overrides, warnings and errors."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mail.config import ENV_OVERRIDES, MAILConfig, load_config
from mail.errors import ConfigurationError

REPO = Path(__file__).resolve().parents[2]
WriteToml = Callable[..., Path]


# --- paths -------------------------------------------------------------------------------


def test_relative_paths_resolve_against_the_file_not_the_cwd(
    write_toml: WriteToml, elsewhere: Path
) -> None:
    path = write_toml(
        """
        [server]
        data_dir = "state"
        [server.swarm]
        source = "swarms/main.json"
        registry = "../shared/registry.json"
        """
    )
    conf = path.parent.resolve()
    config = load_config(path, env={})
    assert config.server.data_dir == str(conf / "state")
    assert config.server.swarm.source == str(conf / "swarms/main.json")
    assert config.server.swarm.registry == str(conf.parent / "shared/registry.json")
    assert config.auth.credentials_file == str(conf / "state/credentials.json")
    assert config.database.sqlite_path == str(conf / "state/mail.db")


def test_defaults_resolve_against_the_file_directory(
    write_toml: WriteToml, elsewhere: Path
) -> None:
    conf = write_toml("").parent.resolve()
    config = load_config(conf / "mail.toml", env={})
    assert config.server.data_dir == str(conf / ".mail")
    assert config.server.swarm.source == str(conf / "swarms.json")
    assert config.server.swarm.registry == str(conf / ".mail/registries/example-no-proxy.json")


def test_explicit_data_files_resolve_against_the_file(
    write_toml: WriteToml, elsewhere: Path
) -> None:
    path = write_toml(
        """
        [auth]
        credentials_file = "keys/creds.json"
        [database]
        sqlite_path = "/var/lib/mail/mail.db"
        """
    )
    config = load_config(path, env={})
    assert config.auth.credentials_file == str(path.parent.resolve() / "keys/creds.json")
    assert config.database.sqlite_path == "/var/lib/mail/mail.db"


# --- environment -------------------------------------------------------------------------

_FILE = """
[server]
base_url = "http://file.example"
data_dir = "file-state"
[server.swarm]
name = "from-file"
source = "file-swarms.json"
registry = "file-registry.json"
[database]
url = "postgresql://file@db/mail"
"""


@pytest.mark.parametrize(
    ("var", "value", "attribute", "expected"),
    [
        ("SWARM_NAME", "from-env", "server.swarm.name", "from-env"),
        ("SWARM_SOURCE", "env/swarms.json", "server.swarm.source", "{cwd}/env/swarms.json"),
        ("SWARM_REGISTRY_FILE", "env/reg.json", "server.swarm.registry", "{cwd}/env/reg.json"),
        ("BASE_URL", "https://mail.example.com/", "server.base_url", "https://mail.example.com"),
        ("MAIL_DATA_DIR", "env-state", "server.data_dir", "{cwd}/env-state"),
        ("MAIL_DATA_DIR", "/abs/state", "auth.credentials_file", "/abs/state/credentials.json"),
        ("AUTH_ENDPOINT", "http://auth/login", "auth.auth_endpoint", "http://auth/login"),
        ("TOKEN_INFO_ENDPOINT", "http://auth/info", "auth.token_info_endpoint", "http://auth/info"),
        ("DATABASE_URL", "postgres://env@db/mail", "database.url", "postgres://env@db/mail"),
        ("DATABASE_URL", "none", "database.url", None),
        ("MAIL_METRICS", "yes", "server.metrics.enabled", True),
        ("MAIL_METRICS", "0", "server.metrics.enabled", False),
    ],
)
def test_environment_overrides_the_file(
    write_toml: WriteToml,
    elsewhere: Path,
    var: str,
    value: str,
    attribute: str,
    expected: str | bool | None,
) -> None:
    config = load_config(write_toml(_FILE), env={var: value})
    if isinstance(expected, str):
        expected = expected.format(cwd=elsewhere)
    assert _get(config, attribute) == expected


def test_every_documented_env_variable_is_covered() -> None:
    assert set(ENV_OVERRIDES) == {
        "SWARM_NAME",
        "SWARM_SOURCE",
        "SWARM_REGISTRY_FILE",
        "BASE_URL",
        "MAIL_DATA_DIR",
        "MAIL_PORT",
        "AUTH_ENDPOINT",
        "TOKEN_INFO_ENDPOINT",
        "DATABASE_URL",
        "MAIL_RETENTION_DAYS",
        "MAIL_RETENTION_MAX_TASKS",
        "MAIL_PRUNE_INTERVAL",
        "MAIL_COMMIT_TIMEOUT",
        "MAIL_SWARM_HEALTH_INTERVAL",
        "MAIL_CORS_ORIGINS",
        "MAIL_REDIS_URL",
        "MAIL_REPLICA_ID",
        "MAIL_LEASE_SECONDS",
        "MAIL_MAP_SUMMARY_API_KEY",
        "MAIL_METRICS",
        "MAIL_METRICS_PORT",
        "MAIL_TELEMETRY",
        "MAIL_TELEMETRY_ENDPOINT",
        "MAIL_TELEMETRY_CAPTURE_CONTENT",
    }


def test_mail_port_sets_the_port_and_a_flag_wins(write_toml: WriteToml) -> None:
    path = write_toml(_FILE)
    assert load_config(path, env={"MAIL_PORT": "9001"}).server.port == 9001
    flagged = load_config(path, env={"MAIL_PORT": "9001"}, overrides={"server": {"port": 9002}})
    assert flagged.server.port == 9002


def test_empty_env_values_count_as_unset(write_toml: WriteToml) -> None:
    config = load_config(write_toml(_FILE), env=dict.fromkeys(ENV_OVERRIDES, ""))
    assert config.server.swarm.name == "from-file"
    assert config.database.url == "postgresql://file@db/mail"


def test_database_url_none_uses_sqlite(write_toml: WriteToml) -> None:
    config = load_config(write_toml(_FILE), env={"DATABASE_URL": "none"})
    assert config.database.url is None
    assert config.database.backend == "sqlite"
    assert config.database.persist is True


def test_database_url_with_another_scheme_is_an_error_without_the_password() -> None:
    with pytest.raises(ConfigurationError) as info:
        load_config(env={"DATABASE_URL": "mysql://u:hunter2@db/mail"}, search=False)
    message = str(info.value)
    assert "environment variable DATABASE_URL" in message
    assert "'database.url'" in message
    assert "postgres" in message
    assert "hunter2" not in message


def test_persist_false_means_memory(write_toml: WriteToml) -> None:
    config = load_config(write_toml("[database]\npersist = false\n"), env={})
    assert config.database.backend == "memory"


# --- auth mode ---------------------------------------------------------------------------


def test_both_auth_endpoints_in_env_select_remote_auth(write_toml: WriteToml) -> None:
    path = write_toml('[auth]\nmode = "embedded"\n')
    env = {"AUTH_ENDPOINT": "http://auth/login", "TOKEN_INFO_ENDPOINT": "http://auth/info"}
    assert load_config(path, env=env).auth.mode == "remote"


def test_both_auth_endpoints_in_file_select_remote_auth(write_toml: WriteToml) -> None:
    path = write_toml(
        """
        [auth]
        auth_endpoint = "http://auth/login"
        token_info_endpoint = "http://auth/info"
        """
    )
    assert load_config(path, env={}).auth.mode == "remote"


def test_one_auth_endpoint_stays_embedded_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="mail.config"):
        config = load_config(env={"AUTH_ENDPOINT": "http://auth/login"}, search=False)
    assert config.auth.mode == "embedded"
    assert len(config.warnings) == 1
    assert "TOKEN_INFO_ENDPOINT" in config.warnings[0]
    assert config.warnings[0] in caplog.messages


def test_remote_mode_without_endpoints_is_an_error(write_toml: WriteToml) -> None:
    path = write_toml('[auth]\nmode = "remote"\n')
    with pytest.raises(ConfigurationError, match=r"mail\.toml: invalid value for 'auth'.*both"):
        load_config(path, env={})


# --- CLI overrides -----------------------------------------------------------------------


def test_overrides_apply_only_when_given(write_toml: WriteToml) -> None:
    path = write_toml("[server]\ndebug = true\nreload = true\nport = 8100\n")
    not_given: dict[str, Any] = {"server": {"debug": None, "reload": None, "port": None}}
    config = load_config(path, env={}, overrides=not_given)
    assert (config.server.debug, config.server.reload, config.server.port) == (True, True, 8100)
    given = {"server": {"port": 9000, "reload": False}}
    config = load_config(path, env={}, overrides=given)
    assert (config.server.debug, config.server.reload, config.server.port) == (True, False, 9000)


def test_debug_in_file_is_kept_when_no_flag_is_given(write_toml: WriteToml) -> None:
    # CONTRACT 15.6: the original forced debug/reload to false unless -d/-r were passed.
    config = load_config(write_toml("[server]\ndebug = true\n"), env={}, overrides={})
    assert config.server.debug is True


def test_overrides_beat_the_environment(write_toml: WriteToml, elsewhere: Path) -> None:
    config = load_config(
        write_toml(_FILE),
        env={"SWARM_NAME": "from-env", "SWARM_SOURCE": "env.json"},
        overrides={"server": {"swarm": {"name": "from-cli", "source": "cli.json"}}},
    )
    assert config.server.swarm.name == "from-cli"
    assert config.server.swarm.source == str(elsewhere / "cli.json")


def test_overrides_accept_registry_file_alias(elsewhere: Path) -> None:
    overrides = {"server": {"swarm": {"registry_file": "cli-reg.json"}}}
    config = load_config(env={}, overrides=overrides, search=False)
    assert config.server.swarm.registry == str(elsewhere / "cli-reg.json")


def test_unknown_override_key_is_an_error() -> None:
    with pytest.raises(ConfigurationError, match=r"overrides: unknown key 'server\.prot'"):
        load_config(env={}, overrides={"server": {"prot": 1}}, search=False)


def test_badly_typed_override_names_the_key() -> None:
    with pytest.raises(ConfigurationError, match=r"overrides: invalid value for 'server\.port'"):
        load_config(env={}, overrides={"server": {"port": "nine"}}, search=False)


# --- file contents -----------------------------------------------------------------------


def test_registry_file_alias(write_toml: WriteToml) -> None:
    path = write_toml('[server.swarm]\nregistry_file = "legacy.json"\n')
    config = load_config(path, env={})
    assert config.server.swarm.registry == str(path.parent.resolve() / "legacy.json")
    assert config.warnings == ()


def test_registry_and_registry_file_together_is_an_error(write_toml: WriteToml) -> None:
    path = write_toml('[server.swarm]\nregistry = "a.json"\nregistry_file = "b.json"\n')
    with pytest.raises(ConfigurationError, match="registry_file"):
        load_config(path, env={})


def test_unknown_keys_are_reported_not_fatal(
    write_toml: WriteToml, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_toml(
        """
        extra = 1
        [server]
        prot = 1
        port = 9001
        [server.swarm]
        nmae = "x"
        [servre]
        port = 1
        """
    )
    with caplog.at_level(logging.WARNING, logger="mail.config"):
        config = load_config(path, env={})
    assert config.server.port == 9001
    label = str(path.resolve())
    assert config.warnings == (
        f"{label}: unknown key 'extra' (ignored)",
        f"{label}: unknown key 'server.prot' (ignored)",
        f"{label}: unknown key 'server.swarm.nmae' (ignored)",
        f"{label}: unknown key 'servre' (ignored)",
    )
    assert [r.message for r in caplog.records if r.name == "mail.config"] == list(config.warnings)
    assert all(r.levelno == logging.WARNING for r in caplog.records)


def test_malformed_toml_names_the_file_and_line(write_toml: WriteToml) -> None:
    path = write_toml("[server]\nport = = 8000\n")
    with pytest.raises(ConfigurationError) as info:
        load_config(path, env={})
    assert str(path.resolve()) in str(info.value)
    assert "invalid TOML" in str(info.value)
    assert "line 2" in str(info.value)


def test_non_utf8_file_is_a_configuration_error(tmp_path: Path) -> None:
    path = tmp_path / "mail.toml"
    path.write_bytes(b'[server]\nhost = "\xff"\n')
    with pytest.raises(ConfigurationError, match="invalid TOML"):
        load_config(path, env={})


@pytest.mark.parametrize(
    ("toml", "key", "expected"),
    [
        ('[server]\nport = "8000"\n', "server.port", "valid integer"),
        ("[server]\nport = 70000\n", "server.port", "less than or equal to 65535"),
        ('[server]\ndebug = "yes"\n', "server.debug", "valid boolean"),
        ("[server.swarm]\nkeywords = [1]\n", "server.swarm.keywords.0", "valid string"),
        (
            "[server.settings]\ntask_message_limit = 0\n",
            "server.settings.task_message_limit",
            "greater than or equal to 1",
        ),
        ('[server]\nbase_url = "localhost:8000"\n', "server.base_url", "http"),
        ('[auth]\nmode = "ldap"\n', "auth.mode", "'embedded' or 'remote'"),
        ("[client]\ntimeout = true\n", "client.timeout", "valid number"),
        ("[server]\nport = 8000.5\n", "server.port", "integer"),
    ],
)
def test_wrong_types_name_file_key_and_expectation(
    write_toml: WriteToml, toml: str, key: str, expected: str
) -> None:
    path = write_toml(toml)
    with pytest.raises(ConfigurationError) as info:
        load_config(path, env={})
    message = str(info.value)
    assert message.startswith(f"{path.resolve()}: invalid value for '{key}'")
    assert expected in message


def test_scalar_where_a_table_belongs_is_an_error(write_toml: WriteToml) -> None:
    path = write_toml("server = 5\n")
    with pytest.raises(ConfigurationError, match="'server' must be a table"):
        load_config(path, env={})


def test_all_errors_are_reported_at_once(write_toml: WriteToml) -> None:
    path = write_toml('[server]\nport = "x"\nhost = 1\n')
    with pytest.raises(ConfigurationError) as info:
        load_config(path, env={})
    assert "'server.port'" in str(info.value)
    assert "'server.host'" in str(info.value)


def test_api_key_is_not_echoed_in_errors(write_toml: WriteToml) -> None:
    path = write_toml('[client]\napi_key = ""\n')
    with pytest.raises(ConfigurationError, match=r"'client\.api_key'") as info:
        load_config(path, env={})
    assert "got" not in str(info.value)


# --- the shipped file --------------------------------------------------------------------


def test_shipped_mail_toml_selects_the_offline_swarm_without_warnings(
    elsewhere: Path,
) -> None:
    config = load_config(REPO / "mail.toml", env={})
    assert config.warnings == ()
    assert config.server.swarm.name == "offline"
    assert config.server.swarm.source == str(REPO / "swarms.json")
    assert config.server.swarm.registry == str(REPO / ".mail/registries/offline.json")
    assert (config.server.host, config.server.port) == ("127.0.0.1", 8000)
    assert config.server.settings.task_message_limit == 15
    assert config.client.timeout == 3600.0
    assert config.auth.mode == "embedded"
    assert config.database.backend == "sqlite"
    assert config.server.data_dir == str(REPO / ".mail")


def _get(config: MAILConfig, dotted: str) -> Any:
    value: Any = config
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


# --- [server.interswarm] ---------------------------------------------------------------------


def test_interswarm_settings_are_read_from_the_file(write_toml: WriteToml) -> None:
    config = load_config(
        write_toml(
            """
            [server.interswarm]
            health_interval = 5
            health_max_backoff = 60.0
            agent_discovery = false
            discovery_hosts = ["peers.example.com", "10.0.0.2:8000", "[::1]:9"]
            """
        ),
        env={},
    )
    interswarm = config.server.interswarm
    assert (interswarm.health_interval, interswarm.health_max_backoff) == (5.0, 60.0)
    assert interswarm.agent_discovery is False
    assert interswarm.discovery_hosts == ("peers.example.com", "10.0.0.2:8000", "[::1]:9")
    assert config.warnings == ()


def test_address_lists_are_read(write_toml: WriteToml) -> None:
    path = write_toml(
        "[server.interswarm]\n"
        'allow_networks = ["169.254.10.0/24"]\n'
        'deny_networks = ["127.0.0.0/8", "::1"]\n'
        'allow_hosts = ["peer.internal"]\n'
        'deny_hosts = ["*.corp.example"]\n'
    )
    interswarm = load_config(path, env={}).server.interswarm
    assert interswarm.allow_networks == ("169.254.10.0/24",)
    assert interswarm.deny_networks == ("127.0.0.0/8", "::1")
    assert interswarm.allow_hosts == ("peer.internal",)
    assert interswarm.deny_hosts == ("*.corp.example",)
    defaults = load_config(None, env={}, search=False).server.interswarm
    assert defaults.allow_networks == defaults.deny_networks == ()


def test_health_interval_from_the_environment_beats_the_file(write_toml: WriteToml) -> None:
    path = write_toml("[server.interswarm]\nhealth_interval = 5\n")
    config = load_config(path, env={"MAIL_SWARM_HEALTH_INTERVAL": "12.5"})
    assert config.server.interswarm.health_interval == 12.5
    assert load_config(path, env={}).server.interswarm.health_interval == 5.0


@pytest.mark.parametrize(
    ("text", "env", "problem"),
    [
        ("health_interval = 0", {}, "'server.interswarm.health_interval'"),
        ("", {"MAIL_SWARM_HEALTH_INTERVAL": "soon"}, "MAIL_SWARM_HEALTH_INTERVAL"),
        ('discovery_hosts = ["http://peer"]', {}, "expected host names or host:port"),
        ('discovery_hosts = ["peer:port"]', {}, "expected host names or host:port"),
        ('deny_networks = ["10.0.0.0/33"]', {}, "expected IP networks such as 10.0.0.0/8"),
        ('allow_networks = ["peer.test"]', {}, "expected IP networks such as 10.0.0.0/8"),
        ('allow_hosts = ["http://peer.test"]', {}, "expected host names such as"),
        ('deny_hosts = ["peer.test:80"]', {}, "expected host names such as"),
    ],
)
def test_bad_interswarm_settings_name_the_key(
    write_toml: WriteToml, text: str, env: dict[str, str], problem: str
) -> None:
    path = write_toml(f"[server.interswarm]\n{text}\n")
    with pytest.raises(ConfigurationError, match=re.escape(problem)):
        load_config(path, env=env)


def test_unknown_interswarm_keys_are_reported(write_toml: WriteToml) -> None:
    path = write_toml("[server.interswarm]\nhealth_intervall = 5\n")
    config = load_config(path, env={})
    assert config.warnings == (
        f"{path}: unknown key 'server.interswarm.health_intervall' (ignored)",
    )
    assert config.server.interswarm.health_interval == 30.0


# --- the registry's home -------------------------------------------------------------------


def test_the_registry_defaults_to_registries_in_the_data_directory(
    write_toml: WriteToml,
) -> None:
    path = write_toml('[server]\ndata_dir = "state"\n[server.swarm]\nname = "alpha"\n')
    config = load_config(path, env={})
    conf = path.parent.resolve()
    assert config.server.swarm.registry == str(conf / "state/registries/alpha.json")
    assert config.auth.credentials_file == str(conf / "state/credentials.json")
    assert config.database.sqlite_path == str(conf / "state/mail.db")


def test_two_data_directories_of_one_config_have_two_registries(
    write_toml: WriteToml, tmp_path: Path
) -> None:
    path = write_toml('[server.swarm]\nname = "alpha"\n')
    one = load_config(path, env={"MAIL_DATA_DIR": str(tmp_path / "one")})
    two = load_config(path, env={"MAIL_DATA_DIR": str(tmp_path / "two")})
    assert one.server.swarm.registry == str(tmp_path / "one/registries/alpha.json")
    assert two.server.swarm.registry == str(tmp_path / "two/registries/alpha.json")


def test_without_a_file_the_registry_defaults_to_the_data_directory_in_the_working_directory(
    elsewhere: Path,
) -> None:
    config = load_config(env={"SWARM_NAME": "alpha"}, search=False)
    assert config.server.swarm.registry == str(elsewhere / ".mail/registries/alpha.json")


def test_a_registry_in_the_old_default_place_is_still_used(write_toml: WriteToml) -> None:
    path = write_toml('[server]\ndata_dir = "state"\n[server.swarm]\nname = "alpha"\n')
    conf = path.parent.resolve()
    old = conf / "registries/alpha.json"
    old.parent.mkdir(parents=True)
    old.write_text("{}")
    config = load_config(path, env={})
    assert config.server.swarm.registry == str(old)
    assert any("old default place, shared by every server" in w for w in config.warnings)
    # once the new one exists, it wins
    new = conf / "state/registries/alpha.json"
    new.parent.mkdir(parents=True)
    new.write_text("{}")
    config = load_config(path, env={})
    assert config.server.swarm.registry == str(new)
    assert config.warnings == ()


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"MAIL_METRICS_PORT": "9464"}, "port is set but metrics are not enabled"),
        ({"MAIL_METRICS": "maybe"}, "environment variable MAIL_METRICS"),
        ({"MAIL_METRICS": "1", "MAIL_METRICS_PORT": "0"}, "environment variable MAIL_METRICS_PORT"),
    ],
)
def test_bad_metrics_settings_are_refused(
    write_toml: WriteToml, env: dict[str, str], says: str
) -> None:
    with pytest.raises(ConfigurationError, match=says):
        load_config(write_toml(_FILE), env=env)


def test_metrics_from_the_file(write_toml: WriteToml) -> None:
    config = load_config(write_toml("[server.metrics]\nenabled = true\nport = 9464\n"), env={})

    assert (config.server.metrics.enabled, config.server.metrics.port) == (True, 9464)
    assert config.server.metrics.host == "127.0.0.1"
