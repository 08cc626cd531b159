"""``TaskTable.observe_tasks``: told of every change of a task's record, after the store's
listener, and never broken by an observer that raises (MAP Mail's statuses use it)."""

from __future__ import annotations

import logging

import pytest

from mail.core.tasks import MAILTask, TaskState, TaskTable


async def test_observers_see_each_change_and_a_failing_one_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    table = TaskTable()
    seen: list[tuple[str, TaskState]] = []

    def broken(_task: MAILTask) -> None:
        raise RuntimeError("observer bug")

    table.observe_tasks(broken)
    table.observe_tasks(lambda task: seen.append((task.task_id, task.state)))
    with caplog.at_level(logging.ERROR, logger="mail.runtime"):
        task = table.create("t1", "user:u1@s", ["user:u1@s"])
        task.state = TaskState.WAITING_BREAKPOINT
        task.changed()
    assert seen == [("t1", TaskState.RUNNING), ("t1", TaskState.WAITING_BREAKPOINT)]
    assert [r.getMessage() for r in caplog.records] == ["a task observer of task t1 failed"] * 2
    table.observe(lambda _log: None)  # observing events too keeps the task observers
    task.changed()
    assert len(seen) == 3
