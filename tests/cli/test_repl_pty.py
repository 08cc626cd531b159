"""``mail client`` as a user sees it: the REPL in a pseudo-terminal against a live server.

The screen is read with pexpect (``TERM=dumb``: no colours, no spinner animation), so what
is asserted is what docs/cli.md shows. Tests that need a scripted swarm serve it in their
event loop and talk to the REPL from a worker thread.
"""

from __future__ import annotations

import asyncio
import re
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pytest
from tests.cli.conftest import LiveServer
from tests.client.conftest import Start, gated_template

pytestmark = pytest.mark.timeout(60)

Spawn = Callable[..., pexpect.spawn]


@pytest.fixture
def spawn(tmp_path: Path, mail_env: dict[str, str]) -> Iterator[Spawn]:
    children: list[pexpect.spawn] = []

    def start(*args: str) -> pexpect.spawn:
        env = {k: v for k, v in mail_env.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
        env |= {"HOME": str(tmp_path), "TERM": "dumb", "COLUMNS": "100"}
        env["MAIL_CONFIG_PATH"] = str(tmp_path / "mail.toml")  # no checkout config
        (tmp_path / "mail.toml").write_text("", encoding="utf-8")
        child = pexpect.spawn(
            sys.executable, ["-m", "mail.cli", "client", *args], env=env, cwd=str(tmp_path),
            encoding="utf-8", timeout=20, dimensions=(40, 100),
        )  # fmt: skip
        children.append(child)
        return child

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)


def prompt_of(server: LiveServer) -> str:
    return re.escape(f"user:user@{server.url}> ")


def run(child: pexpect.spawn, line: str, prompt: str) -> str:
    """Type ``line``, wait for the next prompt; the screen in between."""
    child.sendline(line)
    child.expect(prompt)
    return str(child.before)


def test_a_session(spawn: Spawn, live_server: LiveServer, tmp_path: Path) -> None:
    child = spawn(live_server.url, "--api-key", live_server.user_key)
    prompt = prompt_of(live_server)
    child.expect(prompt)
    assert "MAIL client" in str(child.before)

    screen = run(child, 'message "what is 6*7?"', prompt)
    assert "╭─ Answer" in screen
    assert "42" in screen

    screen = run(child, 'message-stream "weather in Paris?"', prompt)
    assert "user → supervisor: New Message  weather in Paris?" in screen
    assert "supervisor → weather: Weather forecast" in screen
    assert 'weather called get_weather_forecast(location="Paris"' in screen
    assert "⚙ weather runs action get_weather_forecast" in screen
    assert "✔ supervisor completed the task" in screen
    assert "╭─ Answer" in screen
    assert "Forecast for Paris" in screen.split("╭─ Answer", 1)[1]

    screen = run(child, "help", prompt)
    for name in ("message-stream", "swarm-register", "task-events", "post-message", "exit"):
        assert name in screen

    screen = run(child, "mesage hello", prompt)
    assert "unknown command 'mesage'. Did you mean 'message'?" in screen

    child.sendintr()  # Ctrl+C at the prompt: a fresh prompt, still running
    child.expect(prompt)
    screen = run(child, "whoami", prompt)
    assert "role user, id user" in screen

    child.sendline("exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    history = tmp_path / ".mail_history"
    assert 'message "what is 6*7?"' in history.read_text(encoding="utf-8")
    assert history.stat().st_mode & 0o777 == 0o600  # lines may hold tokens


#: Longer than uvicorn's keep-alive timeout (5 s): the server closes the idle connection.
IDLE_PAUSE = 6.0


@pytest.mark.timeout(90)
def test_a_message_after_an_idle_pause_is_answered_the_first_time(
    spawn: Spawn, live_server: LiveServer
) -> None:
    # issue 21 item 1: the pooled connection the start-up whoami used was closed by the
    # server during the pause; the request went out on it and failed with "Can not write
    # request body".
    child = spawn(live_server.url, "--api-key", live_server.user_key)
    prompt = prompt_of(live_server)
    child.expect(prompt)
    for _ in range(2):
        time.sleep(IDLE_PAUSE)  # deliberate: the user thinks, the server closes the connection
        screen = run(child, 'message "what is 2+2?"', prompt)
        assert "error" not in screen
        assert "2+2 = 4" in screen
    child.sendline("exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_usage_errors_keep_the_loop(spawn: Spawn, live_server: LiveServer) -> None:
    child = spawn("--url", live_server.url, "-ak", live_server.user_key)
    prompt = prompt_of(live_server)
    child.expect(prompt)

    screen = run(child, "message", prompt)
    assert "usage: message" in screen
    assert "the following arguments are required: body" in screen

    screen = run(child, 'message "unclosed', prompt)
    assert "No closing quotation" in screen

    screen = run(child, "message hi -k '[1]'", prompt)
    assert "expected a JSON object" in screen

    screen = run(child, "help task-events", prompt)
    assert "usage: task-events [-h] [--after N] [--raw] TASK_ID" in screen

    screen = run(child, "get-health", prompt)  # a name from the seed's CLI doc
    assert "health: healthy (swarm offline)" in screen

    screen = run(child, 'post-message "what is 2+2?"', prompt)
    assert "2+2 = 4" in screen

    child.sendeof()  # Ctrl+D leaves too
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_refused_key_prompts_mail_and_login_fixes_it(
    spawn: Spawn, live_server: LiveServer, tmp_path: Path
) -> None:
    child = spawn(live_server.url, "--api-key", "not-a-key")
    child.expect(r"error: whoami: HTTP 401")
    child.expect("mail> ")

    screen = run(child, "tasks-get", "mail> ")
    assert "error: tasks-get: HTTP 401" in screen

    prompt = prompt_of(live_server)
    screen = run(child, f"login {live_server.user_key}", prompt)
    assert "logged in to" in screen
    screen = run(child, "logout", "mail> ")
    assert "logged out" in screen

    child.sendline("quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    history = (tmp_path / ".mail_history").read_text(encoding="utf-8")
    assert live_server.user_key not in history  # `login KEY` lines are not kept
    assert "logout" in history


def test_ctrl_c_cancels_a_command_and_returns_to_the_prompt(spawn: Spawn) -> None:
    # A server that accepts connections and never answers: every request hangs.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        silent.settimeout(20)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        child = spawn(url, "--api-key", "k", "--timeout", "60")

        connection, _ = silent.accept()  # the start-up whoami is in flight
        child.sendintr()
        child.expect("cancelled whoami")
        child.expect("mail> ")

        child.sendline("health")
        second, _ = silent.accept()  # GET /health is in flight
        child.sendintr()
        child.expect("cancelled")
        child.expect("mail> ")

        child.sendline("exit")
        child.expect(pexpect.EOF)
        child.close()
        connection.close()
        second.close()
    assert child.exitstatus == 0


async def test_ctrl_c_during_a_stream_leaves_the_task_running(spawn: Spawn, start: Start) -> None:
    gate = asyncio.Event()  # the worker's turn waits for it
    template, _worker = gated_template(gate)
    url = await start(template=template)
    loop = asyncio.get_running_loop()
    prompt = re.escape(f"user:u1@{url}> ")
    child = spawn(url, "--api-key", "user-key")  # forked before any worker thread exists

    def session() -> tuple[str, str, str]:
        child.expect(prompt)
        child.sendline('message-stream "do the job"')
        child.expect("supervisor → worker: job")  # the worker is held mid-turn now
        child.sendintr()
        child.expect(r"the task goes on on the server; follow it with: task-events ([0-9a-f-]{36})")
        hint = str(child.before) + str(child.after)
        task_id = child.match.group(1)
        child.expect(prompt)  # the prompt is back while the task still runs
        loop.call_soon_threadsafe(gate.set)
        followed = run(child, f"task-events {task_id}", prompt)
        child.sendline("exit")
        child.expect(pexpect.EOF)
        child.close()
        return hint, task_id, followed

    try:
        hint, task_id, followed = await asyncio.to_thread(session)
    finally:
        gate.set()

    assert "cancelled" in hint
    assert "Answer" not in hint  # the stream stopped before the task ended
    assert "worker → supervisor: Re: job  worked" in followed
    assert "╭─ Answer" in followed
    assert "done: worked" in followed.split("╭─ Answer", 1)[1]
    assert task_id in followed  # the panel's subtitle names the task
    assert child.exitstatus == 0
