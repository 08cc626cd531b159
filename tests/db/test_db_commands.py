"""``mail db-init``/``db-migrate``/``db-prune`` (:mod:`mail.cli._db_commands`): ``db-prune``
applies the configured retention by default, the flags when given, and reports errors clearly."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mail.cli import main
from mail.db import CallerKey, EventRow, SQLiteStore, TaskDetails, TaskRow, latest_version

KEY = CallerKey(swarm="demo", role="user", id="u1")


def _config(tmp_path: Path, database: str) -> Path:
    path = tmp_path / "mail.toml"
    db = tmp_path / "mail.db"
    path.write_text(f'[database]\nsqlite_path = "{db}"\n{database}\n', encoding="utf-8")
    return path


def _seed(path: Path) -> None:
    async def seed() -> None:
        now = datetime.now(UTC)
        async with SQLiteStore(path) as store:
            for task_id, state, age in (
                ("old-done", "completed", timedelta(days=10)),
                ("old-failed", "failed", timedelta(days=3)),
                ("old-running", "running", timedelta(days=10)),
                ("young-done", "completed", timedelta(hours=1)),
            ):
                when = now - age
                row = TaskRow(
                    task_id=task_id, task_owner="o", state=state, start_time=when, updated_at=when
                )
                await store.save_task(KEY, row)

    asyncio.run(seed())


def _left(path: Path) -> set[str]:
    async def load() -> set[str]:
        async with SQLiteStore(path) as store:
            return {t.task_id for t in await store.load_tasks(KEY)}

    return asyncio.run(load())


def test_defaults_to_the_configured_retention(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, "retention_days = 5\nretention_max_tasks = 0")
    _seed(tmp_path / "mail.db")
    assert main(["db-prune", "-c", str(config)]) == 0
    assert capsys.readouterr().out == "pruned 1 finished tasks (older than 5 days)\n"
    assert _left(tmp_path / "mail.db") == {"old-failed", "old-running", "young-done"}


def test_configured_count_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, "retention_days = 0\nretention_max_tasks = 1")
    _seed(tmp_path / "mail.db")
    assert main(["db-prune", "-c", str(config)]) == 0
    assert capsys.readouterr().out == "pruned 2 finished tasks (beyond the newest 1)\n"
    assert _left(tmp_path / "mail.db") == {"old-running", "young-done"}


def test_flags_replace_the_configured_retention(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, "retention_days = 30")
    _seed(tmp_path / "mail.db")
    assert main(["db-prune", "-c", str(config), "--older-than", "2"]) == 0
    assert "pruned 2 finished tasks (older than 2 days)" in capsys.readouterr().out
    assert main(["db-prune", "-c", str(config), "--keep", "0"]) == 0
    assert "pruned 1 finished tasks (beyond the newest 0)" in capsys.readouterr().out
    assert _left(tmp_path / "mail.db") == {"old-running"}


def test_nothing_to_prune_by_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, "retention_days = 0")
    assert main(["db-prune", "-c", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mail db-prune: no retention is configured")
    assert "--older-than DAYS" in err
    assert not (tmp_path / "mail.db").exists()  # refused before opening the store


@pytest.mark.parametrize(
    ("database", "expected"),
    [
        ("retention_days = -1", "'database.retention_days'"),
        ("retention_max_tasks = 2.5", "'database.retention_max_tasks'"),
    ],
)
def test_bad_retention_configuration_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], database: str, expected: str
) -> None:
    config = _config(tmp_path, database)
    assert main(["db-prune", "-c", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mail db-prune: ")
    assert expected in err


def test_negative_keep_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, "")
    assert main(["db-prune", "-c", str(config), "--keep", "-1"]) == 2
    assert "--keep must be 0 or more" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["db-init", "db-migrate"])
def test_migrate_reports_the_schema_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    config = _config(tmp_path, "")
    assert main([command, "-c", str(config)]) == 0
    assert capsys.readouterr().out == f"sqlite store at schema version {latest_version('sqlite')}\n"


def test_storage_failure_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mail.db").mkdir()  # a directory where the file should be
    config = _config(tmp_path, "")
    assert main(["db-prune", "-c", str(config), "--keep", "5"]) == 1
    assert "open failed" in capsys.readouterr().err


def test_db_prune_command_prunes_a_sqlite_file(tmp_path: Path) -> None:
    """``mail db-prune`` as a user runs it: its own process, a real file, every table."""
    db = tmp_path / "mail.db"
    config = _config(tmp_path, "retention_days = 5\nretention_max_tasks = 0")
    _seed(db)

    async def add_details() -> None:
        async with SQLiteStore(db) as store:
            for task_id in ("old-done", "young-done"):
                data = {"timestamp": "t", "description": "d", "extra_data": {}}
                await store.append_events(
                    KEY, [EventRow(task_id=task_id, seq=1, event="e", data=data)]
                )
                await store.save_history(KEY, task_id, "a", [{"role": "user"}], "completions")
                await store.save_response(KEY, task_id, {"id": task_id})

    asyncio.run(add_details())
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "MAIL_CONFIG_PATH")}
    result = subprocess.run(
        [sys.executable, "-m", "mail.cli", "db-prune", "-c", str(config)],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == "pruned 1 finished tasks (older than 5 days)\n"

    async def details() -> dict[str, TaskDetails]:
        async with SQLiteStore(db) as store:
            return await store.load_details(KEY, ["old-done", "young-done"])

    left = asyncio.run(details())
    assert list(left) == ["young-done"]  # the pruned task's rows are gone from every table
    assert (left["young-done"].response, len(left["young-done"].events)) == (
        {"id": "young-done"},
        1,
    )
    assert _left(db) == {"old-failed", "old-running", "young-done"}
