"""``mail task``, ``mail events [--follow]``, ``mail tasks --limit/--cursor`` and
``mail cancel`` against real servers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.cli.conftest import LiveServer
from tests.client.conftest import gated_template

from mail.cli import main
from mail.client import MAILClient

pytestmark = pytest.mark.timeout(60)


def conn(url: str, key: str, config: Path) -> list[str]:
    return ["--url", url, "--api-key", key, "-c", str(config)]


@pytest.fixture
def asked(live_server: LiveServer, empty_toml: Path, capsys: pytest.CaptureFixture[str]) -> str:
    args = conn(live_server.url, live_server.user_key, empty_toml)
    assert main(["message", "what is 2+2?", "--json", *args]) == 0
    task_id: str = json.loads(capsys.readouterr().out)["task_id"]
    return task_id


def test_task_shows_state_title_and_answer(
    live_server: LiveServer, empty_toml: Path, asked: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["task", asked, *conn(live_server.url, live_server.user_key, empty_toml)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [f"task:    {asked}", "state:   completed", "title:   what is 2+2?"]
    assert lines[-1] == "answer:  2+2 = 4"


def test_events_replay_and_follow(
    live_server: LiveServer, empty_toml: Path, asked: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = conn(live_server.url, live_server.user_key, empty_toml)
    assert main(["events", asked, "--json", *args]) == 0
    stored = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert stored[0]["event"] == "new_message" and stored[0]["id"] == "1"

    assert main(["events", asked, "--follow", "--json", *args]) == 0
    followed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # the stream leaves out the stored task_complete and closes with its own final one
    assert stored[-1]["event"] == "task_complete"
    assert [e["id"] for e in followed[:-1]] == [e["id"] for e in stored[:-1]]
    assert followed[-1]["event"] == "task_complete"

    assert main(["events", asked, *args]) == 0
    assert "user → supervisor" in capsys.readouterr().out


def test_tasks_pages(
    live_server: LiveServer, empty_toml: Path, asked: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = conn(live_server.url, live_server.user_key, empty_toml)
    assert main(["message", "what is 3+3?", "--json", *args]) == 0
    newest = json.loads(capsys.readouterr().out)["task_id"]

    assert main(["tasks", "-n", "1", "--json", *args]) == 0
    assert list(json.loads(capsys.readouterr().out)) == [newest]
    assert main(["tasks", "-n", "1", *args]) == 0
    out = capsys.readouterr().out
    assert newest in out and "older tasks: mail tasks --cursor " in out
    cursor = out.rsplit("--cursor ", 1)[1].strip()
    assert main(["tasks", "-n", "1", "--cursor", cursor, "--json", *args]) == 0
    older = json.loads(capsys.readouterr().out)
    assert len(older) == 1 and newest not in older


def test_cancel_refusals(
    live_server: LiveServer, empty_toml: Path, asked: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = conn(live_server.url, live_server.user_key, empty_toml)
    assert main(["cancel", asked, *args]) == 1
    assert "HTTP 409" in capsys.readouterr().err
    assert main(["cancel", "t-none", *args]) == 1
    assert "task 't-none' not found" in capsys.readouterr().err


async def test_cancel_a_running_task(
    start: Any, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gate = asyncio.Event()
    template, _worker = gated_template(gate)
    url = await start(template=template)
    args = conn(url, "user-key", empty_toml)
    async with MAILClient(url, "user-key") as client:
        stream = await client.post_message_stream("job", task_id="t-cli")
        async with stream:
            async for event in stream:
                if event.event == "new_message" and "worker" in event.data:
                    break
            status = await asyncio.to_thread(main, ["cancel", "t-cli", *args])
            final = [event async for event in stream][-1]
    assert (status, capsys.readouterr().out) == (0, "task t-cli: cancelled\n")
    assert final.json()["status"] == "cancelled"
    # --follow of a cancelled task replays it and ends with its task_error (exit 1)
    following = await asyncio.to_thread(main, ["events", "t-cli", "-f", "--json", *args])
    last = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (following, last["event"], last["data"]["status"]) == (1, "task_error", "cancelled")
    gate.set()
