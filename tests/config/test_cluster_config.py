"""``[server.cluster]``: off by default, set by the file or the environment, validated."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from mail.config import load_config
from mail.config.server import ClusterConfig, ServerConfig
from mail.errors import ConfigurationError


def test_cluster_mode_is_off_by_default() -> None:
    config = load_config(search=False, env={})
    assert config.server.cluster == ClusterConfig()
    assert config.server.cluster.enabled is False
    assert config.server.cluster.lease_seconds == 15.0
    assert config.server.replica_id == f"{socket.gethostname()}:8000"


def test_the_file_sets_the_cluster(tmp_path: Path) -> None:
    path = tmp_path / "mail.toml"
    path.write_text(
        '[server]\nport = 9100\n[server.cluster]\nredis_url = "redis://cache:6379/2"\n'
        'replica_id = "r-1"\nlease_seconds = 30\n',
        encoding="utf-8",
    )
    config = load_config(path, env={})
    assert config.server.cluster.enabled
    assert config.server.cluster.redis_url == "redis://cache:6379/2"
    assert config.server.replica_id == "r-1"
    assert config.server.cluster.lease_seconds == 30.0


def test_the_environment_sets_the_cluster() -> None:
    env = {
        "MAIL_REDIS_URL": "rediss://cache:6380/0",
        "MAIL_REPLICA_ID": "replica-b",
        "MAIL_LEASE_SECONDS": "7.5",
        "MAIL_PORT": "9200",
    }
    config = load_config(search=False, env=env)
    assert config.server.cluster.redis_url == "rediss://cache:6380/0"
    assert config.server.replica_id == "replica-b"
    assert config.server.cluster.lease_seconds == 7.5


def test_the_default_replica_id_is_host_and_port() -> None:
    server = ServerConfig(port=8123)
    assert server.replica_id == f"{socket.gethostname()}:8123"


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"MAIL_REDIS_URL": "http://cache:6379"}, "server.cluster.redis_url"),
        ({"MAIL_LEASE_SECONDS": "0.1"}, "MAIL_LEASE_SECONDS"),
        ({"MAIL_LEASE_SECONDS": "soon"}, "MAIL_LEASE_SECONDS"),
        ({"MAIL_REPLICA_ID": "two words"}, "MAIL_REPLICA_ID"),
    ],
)
def test_bad_cluster_values_are_refused(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        load_config(search=False, env=env)


def test_a_redis_password_is_not_shown_in_errors(tmp_path: Path) -> None:
    path = tmp_path / "mail.toml"
    path.write_text('[server.cluster]\nredis_url = "ftp://u:s3cret@cache"\n', encoding="utf-8")
    with pytest.raises(ConfigurationError) as caught:
        load_config(path, env={})
    assert "s3cret" not in str(caught.value)
