"""[database] retention: defaults, the file, the environment, and bad values."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from mail.config import DatabaseConfig, load_config
from mail.errors import ConfigurationError

WriteToml = Callable[..., Path]


def test_defaults_keep_30_days_without_a_count_limit_pruned_hourly() -> None:
    db = DatabaseConfig()
    assert (db.retention_days, db.retention_max_tasks, db.prune_interval) == (30.0, None, 3600.0)
    assert db.retention_older_than == timedelta(days=30)
    assert db.retention_keep_last is None
    assert db.prune_every == 3600.0
    loaded = load_config(env={}, search=False).database
    assert (loaded.retention_days, loaded.retention_max_tasks, loaded.prune_interval) == (
        30.0,
        None,
        3600.0,
    )
    # None (only possible in Python: TOML has no null) also means "no limit"
    unset = DatabaseConfig(retention_days=None, retention_max_tasks=None)
    assert (unset.retention_older_than, unset.retention_keep_last, unset.prune_every) == (
        None,
        None,
        None,
    )


def test_file_values(write_toml: WriteToml) -> None:
    path = write_toml(
        """
        [database]
        retention_days = 7
        retention_max_tasks = 500
        prune_interval = 60
        """
    )
    db = load_config(path, env={}).database
    assert db.retention_older_than == timedelta(days=7)
    assert db.retention_keep_last == 500
    assert db.prune_every == 60.0


@pytest.mark.parametrize(
    ("values", "older_than", "keep_last", "every"),
    [
        ({"retention_days": 0}, None, None, None),
        ({"retention_days": 0, "retention_max_tasks": 0}, None, None, None),
        ({"retention_days": 0, "retention_max_tasks": 10}, None, 10, 3600.0),
        ({"prune_interval": 0}, timedelta(days=30), None, None),
        ({"persist": False}, timedelta(days=30), None, None),
        ({"retention_days": 0.5, "prune_interval": 0.25}, timedelta(hours=12), None, 0.25),
    ],
)
def test_zero_turns_a_limit_or_the_job_off(
    values: dict[str, object],
    older_than: timedelta | None,
    keep_last: int | None,
    every: float | None,
) -> None:
    db = load_config(env={}, overrides={"database": values}, search=False).database
    assert db.retention_older_than == older_than
    assert db.retention_keep_last == keep_last
    assert db.prune_every == every


def test_environment_overrides_the_file(write_toml: WriteToml) -> None:
    path = write_toml("[database]\nretention_days = 7\nprune_interval = 60\n")
    env = {
        "MAIL_RETENTION_DAYS": "1.5",
        "MAIL_RETENTION_MAX_TASKS": " 100 ",
        "MAIL_PRUNE_INTERVAL": "0",
    }
    db = load_config(path, env=env).database
    assert db.retention_days == 1.5
    assert db.retention_max_tasks == 100
    assert db.prune_interval == 0.0
    assert db.prune_every is None


@pytest.mark.parametrize(
    ("line", "key", "expected"),
    [
        ("retention_days = -1", "retention_days", "greater than or equal to 0"),
        ('retention_days = "30"', "retention_days", "valid number"),
        ("retention_days = true", "retention_days", "valid number"),
        ("retention_days = 100000", "retention_days", "less than or equal to 36500"),
        ("retention_days = nan", "retention_days", "less than or equal to 36500"),
        ("retention_max_tasks = -3", "retention_max_tasks", "greater than or equal to 0"),
        ("retention_max_tasks = 1.5", "retention_max_tasks", "valid integer"),
        ("prune_interval = -60", "prune_interval", "greater than or equal to 0"),
        ("prune_interval = inf", "prune_interval", "finite number"),
        ('prune_interval = "hourly"', "prune_interval", "valid number"),
    ],
)
def test_bad_file_values_name_the_file_and_the_key(
    write_toml: WriteToml, line: str, key: str, expected: str
) -> None:
    path = write_toml(f"[database]\n{line}\n")
    with pytest.raises(ConfigurationError) as info:
        load_config(path, env={})
    message = str(info.value)
    assert f"{path.resolve()}: invalid value for 'database.{key}'" in message
    assert expected in message


@pytest.mark.parametrize(
    ("var", "value", "key", "expected"),
    [
        ("MAIL_RETENTION_DAYS", "a month", "retention_days", "valid number"),
        ("MAIL_RETENTION_DAYS", "-2", "retention_days", "greater than or equal to 0"),
        ("MAIL_RETENTION_MAX_TASKS", "1e3", "retention_max_tasks", "valid integer"),
        ("MAIL_PRUNE_INTERVAL", "nan", "prune_interval", "finite number"),
    ],
)
def test_bad_environment_values_name_the_variable(
    var: str, value: str, key: str, expected: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        load_config(env={var: value}, search=False)
    message = str(info.value)
    assert f"environment variable {var}: invalid value for 'database.{key}'" in message
    assert expected in message
