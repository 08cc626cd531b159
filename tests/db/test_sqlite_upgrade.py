"""A SQLite file written by the first schema (before the unread time columns were dropped)
is upgraded on open and reads back as it was stored."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mail.db import CallerKey, SQLiteStore, TaskRow, latest_version
from mail.db.migrations import SQLITE_MIGRATIONS

KEY = CallerKey(swarm="demo", role="user", id="u1")
_K = ("demo", "user", "u1")
_T0 = "2026-01-02T03:04:05.000006+00:00"


def _version_1_file(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
            "description TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT '')"
        )
        first = SQLITE_MIGRATIONS[0]
        for statement in first.statements:
            conn.execute(statement)
        conn.execute("INSERT INTO schema_migrations VALUES (1, ?, '')", (first.description,))
        conn.execute(
            "INSERT INTO tasks (swarm_name, caller_role, caller_id, task_id, task_owner, "
            "state, completed, start_time, updated_at, created_at) "
            "VALUES (?, ?, ?, 't1', 'o', 'completed', 1, ?, ?, ?)",
            (*_K, _T0, _T0, _T0),
        )
        conn.execute(
            "INSERT INTO task_events VALUES (?, ?, ?, 't1', 1, 'new_message', ?)",
            (*_K, '{"timestamp":"x","description":"full text","task_id":"t1","extra_data":{}}'),
        )
        for agent in ("zed", "alpha"):  # the insertion order is the load order
            conn.execute(
                "INSERT INTO agent_histories (swarm_name, caller_role, caller_id, task_id, "
                "agent_name, tool_format, history, created_at, updated_at) "
                "VALUES (?, ?, ?, 't1', ?, 'completions', ?, ?, ?)",
                (*_K, agent, f'[{{"role":"user","content":"{agent}"}}]', _T0, _T0),
            )
        conn.execute(
            "INSERT INTO task_responses (swarm_name, caller_role, caller_id, task_id, "
            "response, created_at) VALUES (?, ?, ?, 't1', '{\"id\":\"m1\"}', ?)",
            (*_K, _T0),
        )
    finally:
        conn.close()


async def test_a_version_1_file_is_upgraded_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "mail.db"
    _version_1_file(path)
    async with SQLiteStore(path) as store:
        assert await store.schema_version() == latest_version("sqlite")
        [task] = await store.load_tasks(KEY)
        assert (task.task_id, task.state, task.start_time.isoformat()) == ("t1", "completed", _T0)
        details = (await store.load_details(KEY, ["t1"]))["t1"]
        assert [(e.seq, e.data["description"]) for e in details.events] == [(1, "full text")]
        assert list(details.histories.items()) == [
            ("zed", [{"role": "user", "content": "zed"}]),
            ("alpha", [{"role": "user", "content": "alpha"}]),
        ]
        assert details.response == {"id": "m1"}
        # the upgraded tables take new rows and replacements
        await store.save_history(
            KEY, "t1", "zed", [{"role": "user", "content": "z2"}], "completions"
        )
        await store.save_task(
            KEY,
            TaskRow(
                task_id="t2", task_owner="o", start_time=task.start_time, updated_at=task.updated_at
            ),
        )
        assert [t.task_id for t in await store.load_tasks(KEY)] == ["t1", "t2"]
        histories = await store.load_histories(KEY, "t1")
        assert histories["zed"] == [{"role": "user", "content": "z2"}]
        assert await store.prune(keep_last=0) == 1
    conn = sqlite3.connect(path)
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(agent_histories)")}
        indexes = {row[1] for row in conn.execute("PRAGMA index_list(tasks)")}
    finally:
        conn.close()
    assert "created_at" not in columns
    assert {"idx_tasks_start", "idx_tasks_finished"} <= indexes
