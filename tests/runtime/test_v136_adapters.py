"""v1.3.6's runtime and task names do what they did (issue 22 item 1), on real objects."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mail import MAILSwarmTemplate
from mail.core import AgentCore, MAILRuntime, MAILTask, format_agent_address
from mail.core.message import create_agent_address, create_user_address, make_request
from mail.core.tasks import TaskState

SWARMS = Path(__file__).resolve().parents[2] / "swarms.json"


async def test_runtime_views_follow_a_real_task() -> None:
    swarm = MAILSwarmTemplate.from_swarm_json_file("offline", SWARMS).instantiate({}, user_id="u")
    runtime = swarm.runtime
    queue = runtime.response_queue  # fed from the first read on
    try:
        answer, _ = await swarm.post_message("What is 6 * 7?", timeout=30)
    finally:
        await swarm.shutdown()
    task_id = answer["message"]["task_id"]
    assert set(runtime.mail_tasks) == {task_id}
    assert runtime.response_messages[task_id]["id"] == answer["id"]
    assert runtime.events[task_id] == runtime.get_events_by_task_id(task_id)
    assert runtime.get_task_by_id(task_id) is runtime.mail_tasks[task_id]
    assert (await asyncio.wait_for(queue.get(), 1))["id"] == answer["id"]
    task = runtime.mail_tasks[task_id]
    assert task.get_messages()[0]["message"]["body"] == "What is 6 * 7?"
    assert task.get_messages_by_user() == task.get_messages()[:1]
    assert task.get_messages_by_type("request")


async def test_runtime_without_router_is_not_interswarm_running() -> None:
    runtime = MAILRuntime({"a": AgentCore(lambda *_: None, [])}, {}, "u")
    await runtime.start_interswarm()
    assert await runtime.is_interswarm_running() is False
    await runtime.stop_interswarm()
    assert runtime.get_events_by_task_id("nope") == []


async def test_queue_stash_moves_only_the_tasks_messages_and_load_puts_them_back() -> None:
    def msg(task: str) -> object:
        return make_request(
            task_id=task,
            sender=create_user_address("u"),
            recipient=create_agent_address(format_agent_address("a")),
            subject="s",
            body="b",
        )

    queue: asyncio.PriorityQueue[tuple[int, int, object]] = asyncio.PriorityQueue()
    for seq, task in enumerate(["t1", "t2", "t1"]):
        queue.put_nowait((1, seq, msg(task)))
    task = MAILTask("t1", "user:u@s", ["user:u@s"])
    await task.queue_stash(queue)  # type: ignore[arg-type]
    assert [seq for _, seq, _ in task.stash] == [0, 2]
    assert queue.qsize() == 1
    await task.queue_load(queue)  # type: ignore[arg-type]
    assert task.stash == [] and queue.qsize() == 3


def test_task_flags_and_db_dict_round_trip() -> None:
    task = MAILTask("t1", "user:u@s", ["user:u@s"])
    task.add_remote_swarm("beta")
    task.mark_complete()
    assert task.state is TaskState.COMPLETED
    row = task.to_db_dict()
    assert row["completed"] is True and row["remote_swarms"] == ["beta"]
    again = MAILTask.from_db_dict(row)
    assert again.state is TaskState.COMPLETED and again.start_time == task.start_time
    again.resume()
    assert again.is_running
    assert task.get_lifetime() >= 0
