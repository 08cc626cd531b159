"""``mail message``, ``mail tasks``, ``mail ping`` and ``mail register`` for scripts and CI.

Most run in-process through ``main([...])`` against the live server (an empty mail.toml
keeps the checkout's settings out); the exit-status contract is also checked on real
processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.cli.conftest import LiveServer
from tests.client.conftest import Start

from mail.api import MAILAgentTemplate, MAILSwarmTemplate
from mail.cli import main
from mail.cli._oneshot_commands import desktop_entry
from mail.client import MAILClient
from mail.testing import ScriptedAgent, tc

pytestmark = pytest.mark.timeout(60)


def conn(server: LiveServer, config: Path, key: str | None = None) -> list[str]:
    return ["--url", server.url, "--api-key", key or server.user_key, "-c", str(config)]


# --- mail message --------------------------------------------------------------------------


def test_message_prints_the_answer(
    live_server: LiveServer, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["message", "what is 2+2?", *conn(live_server, empty_toml)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "2+2 = 4\n"
    assert captured.err == ""


def test_message_json(
    live_server: LiveServer, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["message", "what is 2+2?", "--json", *conn(live_server, empty_toml)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "completed"
    assert result["response"] == "2+2 = 4"
    assert result["task_id"]


def test_message_stream_renders_the_conversation(
    live_server: LiveServer, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["message", "weather in Oslo?", "--stream", *conn(live_server, empty_toml)]) == 0
    out = capsys.readouterr().out
    assert "user → supervisor: New Message  weather in Oslo?" in out
    assert "weather called get_weather_forecast" in out
    assert "╭─ Answer" in out
    assert "\x1b" not in out  # not a terminal: no colours


def test_message_stream_raw_is_json_lines_ending_with_task_complete(
    live_server: LiveServer, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["message", "what is 5*5?", "--stream", "--raw", *conn(live_server, empty_toml)]
    assert main(args) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["id"] for e in events[:-1]] == [str(i) for i in range(1, len(events))]
    assert events[0]["event"] == "new_message"
    assert events[-1]["event"] == "task_complete"
    assert events[-1]["id"] is None
    assert "25" in events[-1]["data"]["response"]


def test_message_continues_a_task(
    live_server: LiveServer, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["message", "what is 1+1?", "--json", *conn(live_server, empty_toml)]) == 0
    task_id = json.loads(capsys.readouterr().out)["task_id"]
    args = ["message", "and 2+3?", "--task-id", task_id, "--resume-from", "user_response"]
    assert main([*args, "--json", *conn(live_server, empty_toml)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["task_id"] == task_id
    assert "5" in result["response"]


def test_a_refused_key_exits_1(
    live_server: LiveServer, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["message", "hi", *conn(live_server, empty_toml, key="wrong")]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "mail message: HTTP 401: invalid API key\n"


def test_an_unknown_entrypoint_exits_1(
    live_server: LiveServer, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["message", "hi", "--entrypoint", "nobody", "--stream", *conn(live_server, empty_toml)]
    assert main(args) == 1
    assert capsys.readouterr().err.startswith("mail message: HTTP 4")


def test_an_unreachable_server_exits_1(
    closed_url: str, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["message", "hi", "--url", closed_url, "-ak", "k", "-c", str(empty_toml)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"mail message: cannot reach {closed_url}")
    # issue 21 item 2: say where to look
    assert err.endswith("--url URL (a local `mail server` records it in its data directory), "
                        "or run `mail doctor`\n")  # fmt: skip


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["-k", "[1]"], "expected a JSON object"),
        (["-t", "0"], "must be more than 0"),
        (["--resume-from", "later"], "invalid choice: 'later'"),
    ],
)
def test_usage_errors_exit_2(
    args: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["message", "hi", *args]) == 2
    assert error in capsys.readouterr().err


def test_a_bad_swarm_link_exits_2(empty_toml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["message", "hi", "--url", "swarm://connect?token=x", "-c", str(empty_toml)]) == 2
    assert capsys.readouterr().err.startswith("mail message: swarm link without server=HOST")


def test_exit_statuses_of_real_processes(
    live_server: LiveServer, empty_toml: Path, mail_env: dict[str, str]
) -> None:
    def mail(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mail.cli", *args], capture_output=True, text=True,
            timeout=30, check=False, env=mail_env,
        )  # fmt: skip

    ok = mail("message", "what is 2+2?", *conn(live_server, empty_toml))
    assert (ok.returncode, ok.stdout) == (0, "2+2 = 4\n")
    refused = mail("message", "hi", *conn(live_server, empty_toml, key="wrong"))
    assert (refused.returncode, refused.stdout) == (1, "")
    assert "Traceback" not in refused.stderr
    usage = mail("message")
    assert usage.returncode == 2
    assert "the following arguments are required: BODY" in usage.stderr


# --- mail tasks ----------------------------------------------------------------------------


def test_tasks_table_and_json(
    live_server: LiveServer, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["message", "what is 9*9?", "--json", *conn(live_server, empty_toml)]) == 0
    task_id = json.loads(capsys.readouterr().out)["task_id"]
    assert main(["tasks", *conn(live_server, empty_toml)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["id", "state", "title", "started"]  # a page: no events
    row = next(line for line in lines if line.startswith(task_id))
    assert "completed" in row
    assert main(["tasks", "--json", *conn(live_server, empty_toml)]) == 0
    assert json.loads(capsys.readouterr().out)[task_id]["state"] == "completed"


def test_task_and_tasks_show_the_budget(
    live_server: LiveServer, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # as the admin: the user's task list, shared by other tests, stays without budgets
    key = live_server.admin_key
    headers = {"Authorization": f"Bearer {key}"}
    body = {"body": "what is 9*9?", "budget": {"agent_turns": 50, "total_tokens": 1000}}
    answer = httpx.post(f"{live_server.url}/message", json=body, headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    task_id = answer.json()["task_id"]

    assert main(["task", task_id, *conn(live_server, empty_toml, key)]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert main(["tasks", *conn(live_server, empty_toml, key)]) == 0
    table = capsys.readouterr().out.splitlines()

    # the offline swarm reports no tokens: the agent turns are the most spent
    line = next(line for line in shown if line.startswith("budget:"))
    assert re.fullmatch(r"budget:  agent_turns \d+/50, total_tokens 0/1,000", line), line
    assert table[0].split() == ["id", "state", "title", "started", "budget"]
    row = next(line for line in table if line.startswith(task_id))
    assert re.search(r" turns \d+/50$", row), row


def test_tasks_of_another_caller_are_not_listed(
    live_server: LiveServer, empty_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tasks", "--json", *conn(live_server, empty_toml, live_server.admin_key)]) == 0
    tasks = json.loads(capsys.readouterr().out)
    assert all(t["task_owner"].startswith("admin:") for t in tasks.values())


# --- mail ping -----------------------------------------------------------------------------


def test_ping_a_live_server(live_server: LiveServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ping", live_server.url]) == 0
    assert capsys.readouterr().out == "✓ offline is healthy\n"


def test_ping_a_closed_port(closed_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ping", closed_url, "-t", "2"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"✗ cannot reach {closed_url}")


def test_ping_a_swarm_link(live_server: LiveServer, capsys: pytest.CaptureFixture[str]) -> None:
    server = live_server.url.removeprefix("http://")
    assert main(["ping", f"swarm://connect?server={server}&token=x"]) == 0
    assert capsys.readouterr().out == "✓ offline is healthy\n"


# --- mail register -------------------------------------------------------------------------


def register(
    tmp_path: Path, mail_env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    env = mail_env | {"XDG_DATA_HOME": str(tmp_path / "data"), "HOME": str(tmp_path)}
    env["PATH"] = str(tmp_path / "bin")  # no xdg-mime: nothing outside tmp_path changes
    return subprocess.run(
        [sys.executable, "-m", "mail.cli", "register", *args], capture_output=True, text=True,
        timeout=30, check=False, env=env,
    )  # fmt: skip


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG desktop files")
def test_register_dry_run_writes_nothing(tmp_path: Path, mail_env: dict[str, str]) -> None:
    result = register(tmp_path, mail_env, "--dry-run")
    assert result.returncode == 0, result.stderr
    target = tmp_path / "data" / "applications" / "mail-swarm.desktop"
    assert result.stdout.startswith(f"would write {target}:")
    assert f"Exec={sys.executable} -m mail.cli client %u" in result.stdout
    assert "MimeType=x-scheme-handler/swarm;" in result.stdout
    assert "xdg-mime not found" in result.stdout
    assert not (tmp_path / "data").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG desktop files")
def test_register_writes_the_desktop_file(tmp_path: Path, mail_env: dict[str, str]) -> None:
    result = register(tmp_path, mail_env)
    assert result.returncode == 0, result.stderr
    target = tmp_path / "data" / "applications" / "mail-swarm.desktop"
    assert target.read_text(encoding="utf-8") == desktop_entry()
    assert f"wrote {target}" in result.stdout


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() == 0, reason="XDG; root ignores modes"
)
def test_register_reports_an_unwritable_directory(tmp_path: Path, mail_env: dict[str, str]) -> None:
    (tmp_path / "data").mkdir(mode=0o500)
    result = register(tmp_path, mail_env)
    assert result.returncode == 1
    assert result.stderr.startswith("mail register: cannot write ")


def test_desktop_entry_quotes_an_interpreter_path_with_spaces() -> None:
    entry = desktop_entry('/opt/my "mail"/bin/python')
    assert 'Exec="/opt/my \\"mail\\"/bin/python" -m mail.cli client %u\n' in entry
    assert desktop_entry("/usr/bin/py%3").count("%%3") == 1


# --- Ctrl+C ----------------------------------------------------------------------------------


def held_template(entered: asyncio.Event, gate: asyncio.Event) -> MAILSwarmTemplate:
    """A swarm whose one agent sets ``entered`` when a task reaches it, then waits for
    ``gate`` before completing the task."""
    answer = ScriptedAgent(rule=lambda _incoming: tc("task_complete", finish_message="done"))

    async def agent(messages: list[dict[str, Any]], tool_choice: Any = "required") -> Any:
        entered.set()
        await gate.wait()
        return await answer(messages, tool_choice)

    template = MAILAgentTemplate(
        "supervisor", lambda **_: agent, [], [], {}, enable_entrypoint=True,
        can_complete_tasks=True,
    )  # fmt: skip
    return MAILSwarmTemplate("held", "1.0.0", [template], [], "supervisor", description="held")


async def test_ctrl_c_names_the_task_and_how_to_follow_it(
    start: Start, empty_toml: Path, mail_env: dict[str, str]
) -> None:
    # issue 21 item 3e: Ctrl+C left no way back to the task that goes on
    entered, gate = asyncio.Event(), asyncio.Event()
    url = await start(template=held_template(entered, gate))
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mail.cli", "message", "do the job", "--url", url,
        "--api-key", "user-key", "-c", str(empty_toml), env=mail_env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        await asyncio.wait_for(entered.wait(), 30)  # the task runs on the server
        process.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(process.communicate(), 30)
    finally:
        gate.set()
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 130
    assert out == b""
    match = re.fullmatch(
        rb"mail message: cancelled; task ([0-9a-f-]{36}) goes on on the server; "
        rb"follow it with: mail events \1 --follow\n",
        err,
    )
    assert match, err
    async with MAILClient(url, "user-key") as client:  # the id is the server's task
        task = await client.get_task(match.group(1).decode())
    assert task["task_id"] == match.group(1).decode()
