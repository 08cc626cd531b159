"""``mail server --reload``: what ``run_server`` hands uvicorn (the app by name, the
settings) and the environment that makes the reloading worker load the same configuration
(the process itself is tested in test_server_process)."""

from __future__ import annotations

from pathlib import Path

from tests.server.conftest import MAIL_TOML

from mail.config import load_config
from mail.server._reload import (
    APP,
    OVERRIDES_ENV,
    reload_environment,
    uvicorn_options,
    worker_config,
)

SECRET_URL = "postgresql://mail:s3cret-pw@127.0.0.1:5432/mail"


def test_the_worker_imports_the_module_level_app() -> None:
    import mail.server

    module, _, name = APP.partition(":")
    assert module == "mail.server"
    assert name == "app"
    assert name in mail.server.__all__


def test_uvicorn_gets_reload_and_the_server_settings(tmp_path: Path) -> None:
    config = load_config(
        MAIL_TOML,
        env={"MAIL_DATA_DIR": str(tmp_path), "SWARM_REGISTRY_FILE": str(tmp_path / "r.json")},
        overrides={"server": {"reload": True, "debug": True, "port": 9123, "access_log": False}},
    )

    options = uvicorn_options(config)
    log_config = options.pop("log_config")
    assert options == {
        "host": "127.0.0.1",
        "port": 9123,
        "reload": True,
        "log_level": "debug",
        "access_log": False,
        "timeout_graceful_shutdown": 10,
        "ws": "websockets-sansio",
        "ws_max_size": config.server.max_body_bytes,
        "ws_per_message_deflate": False,
    }
    # the worker uvicorn spawns logs the mail loggers too (nothing else sets them up there)
    mail_logger = log_config["loggers"]["mail"]
    assert mail_logger["handlers"] == ["default"]
    assert mail_logger["level"] in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}
    assert mail_logger["propagate"] is False  # the root's handler, if any, would repeat it


def test_the_worker_loads_the_parents_configuration(tmp_path: Path) -> None:
    parent_env = {"MAIL_DATA_DIR": str(tmp_path), "SWARM_REGISTRY_FILE": str(tmp_path / "r.json")}
    config = load_config(
        MAIL_TOML,
        env=parent_env,
        overrides={
            "server": {
                "reload": True,
                "debug": True,
                "port": 9123,
                "max_body_bytes": 4096,
                "swarm": {"name": "example", "keywords": ["a", "b"]},
                "settings": {"finished_task_ttl": 5.0},
            },
            "database": {"url": SECRET_URL, "persist": True},
        },
    )

    env = reload_environment(config)
    worker = worker_config(parent_env | env)  # the worker inherits the parent's environment

    assert worker.model_dump() == config.model_dump()
    assert env["MAIL_CONFIG_PATH"] == str(MAIL_TOML)
    assert env["DATABASE_URL"] == SECRET_URL  # a variable load_config reads anyway...
    assert "s3cret" not in env[OVERRIDES_ENV]  # ...never in the settings' JSON


def test_without_the_variable_the_worker_reads_the_configuration_as_usual(
    tmp_path: Path,
) -> None:
    env = {
        "MAIL_DATA_DIR": str(tmp_path),
        "MAIL_CONFIG_PATH": str(MAIL_TOML),
        "SWARM_REGISTRY_FILE": str(tmp_path / "r.json"),
    }

    assert worker_config(env).model_dump() == load_config(env=env).model_dump()
