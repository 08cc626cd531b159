"""``mail message`` for a task that runs and then fails: exit status 1 in every mode.

The server is real (uvicorn on 127.0.0.1, in the test's event loop) and serves a swarm
whose only agent raises on every turn: the runtime retries once, then fails the task. The
command runs its own event loop, so it runs in a worker thread (``main``) or as a process.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import pytest
from tests.client.conftest import Start

from mail.api import MAILAgentTemplate, MAILSwarmTemplate
from mail.cli import main
from mail.testing import ScriptedAgent

pytestmark = pytest.mark.timeout(60)

#: The answer of the failed task (``POST /message``'s ``response``).
ERROR = "The task encountered an error: agent supervisor raised RuntimeError: the model is down."


def failing_swarm() -> MAILSwarmTemplate:
    broken = ScriptedAgent(rule=lambda _incoming: RuntimeError("the model is down"))
    supervisor = MAILAgentTemplate(
        "supervisor",
        lambda **_params: broken,
        [],
        [],
        {},
        enable_entrypoint=True,
        can_complete_tasks=True,
    )
    return MAILSwarmTemplate("failing", "1.0.0", [supervisor], [], "supervisor")


@pytest.fixture
async def failing(start: Start, empty_toml: Path) -> list[str]:
    """The connection flags of ``mail message`` for a server of :func:`failing_swarm`."""
    url = await start(template=failing_swarm())
    return ["--url", url, "--api-key", "user-key", "-c", str(empty_toml)]


async def mail_message(*args: str) -> int:
    """``main(["message", *args])`` off the event loop, which keeps serving meanwhile."""
    return await asyncio.to_thread(main, ["message", *args])


async def test_a_failed_task_exits_1_with_the_error_on_stderr(
    failing: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert await mail_message("hi", *failing) == 1

    captured = capsys.readouterr()
    assert captured.out == ""
    assert re.fullmatch(
        rf"mail message: task [0-9a-f-]{{36}} failed: {re.escape(ERROR)}\n", captured.err
    )


async def test_a_failed_task_as_json_exits_1_with_status_failed(
    failing: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert await mail_message("hi", "--json", *failing) == 1

    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert (result["status"], result["response"]) == ("failed", ERROR)
    assert result["task_id"]
    assert captured.err == ""


async def test_a_failed_stream_exits_1_and_shows_the_failure(
    failing: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert await mail_message("hi", "--stream", *failing) == 1

    out = capsys.readouterr().out
    assert "u1 → supervisor: New Message  hi" in out
    assert "✗ agent_error: agent supervisor raised RuntimeError: the model is down" in out
    assert "✗ task_error: error for task: agent supervisor raised RuntimeError" in out
    assert "╭─ Task failed" in out
    assert "The task encountered an error" in out.split("╭─ Task failed", 1)[1]
    assert "Answer" not in out


@pytest.mark.parametrize("flags", [["--raw"], ["--stream", "--json"]])
async def test_a_failed_stream_as_json_lines_exits_1_and_ends_with_task_error(
    failing: list[str], flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert await mail_message("hi", *flags, *failing) == 1

    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    names = [e["event"] for e in events]
    assert names[0] == "new_message"
    assert "task_complete" not in names
    assert (events[-1]["event"], events[-1]["id"]) == ("task_error", None)
    assert events[-1]["data"]["response"] == ERROR


async def test_a_failed_task_exits_1_as_a_process(
    failing: list[str], mail_env: dict[str, str]
) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mail.cli", "message", "hi", *failing,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=mail_env,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 30)

    assert process.returncode == 1
    assert out == b""
    assert err.decode().startswith("mail message: task ")
    assert f"failed: {ERROR}" in err.decode()
    assert b"Traceback" not in err
