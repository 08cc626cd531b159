"""``mail tasks`` in a pseudo-terminal: at 80 columns nothing but the title is cut; a wider
terminal gives the title and the start time their room."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import httpx
import pexpect
import pytest
from tests.cli.conftest import LiveServer

pytestmark = pytest.mark.timeout(60)

_STYLE = re.compile(r"\x1b\[[0-9;]*m")  # bold headers: what a terminal shows, not text
TITLE = "Please tell me the weather in Paris tomorrow, in Celsius"


def tasks_screen(server: LiveServer, tmp_path: Path, env: dict[str, str], columns: int) -> str:
    env = {k: v for k, v in env.items() if k not in ("FORCE_COLOR", "NO_COLOR", "COLUMNS")}
    # a real terminal's type (rich takes a dumb one for 80 columns), without colours
    env |= {"TERM": "xterm", "NO_COLOR": "1", "MAIL_CONFIG_PATH": str(tmp_path / "mail.toml")}
    (tmp_path / "mail.toml").write_text("", encoding="utf-8")
    args = ["-m", "mail.cli", "tasks", "--url", server.url, "--api-key", server.user_key]
    child = pexpect.spawn(
        sys.executable, args, env=env, cwd=str(tmp_path), encoding="utf-8", timeout=20,
        dimensions=(50, columns),
    )  # fmt: skip
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return _STYLE.sub("", str(child.before)).replace("\r\n", "\n")


@pytest.fixture(scope="module")
def task_id(live_server: LiveServer) -> str:
    headers = {"Authorization": f"Bearer {live_server.user_key}"}
    with httpx.Client(timeout=30, trust_env=False) as http:
        answer = http.post(f"{live_server.url}/message", headers=headers, json={"body": TITLE})
    assert answer.json()["status"] == "completed"
    return str(answer.json()["task_id"])


def test_at_80_columns_state_and_time_stay_whole(
    live_server: LiveServer, task_id: str, tmp_path: Path, mail_env: dict[str, str]
) -> None:
    screen = tasks_screen(live_server, tmp_path, mail_env, 80)
    lines = screen.splitlines()
    assert lines[0].split() == ["id", "state", "title", "started"]
    assert all(len(line) <= 80 for line in lines), screen
    row = next(line for line in lines if line.startswith(task_id))
    assert re.fullmatch(
        rf"{task_id} +completed +Please tell me the [^ ]*… +\d\d-\d\d \d\d:\d\d", row.rstrip()
    ), row


def test_a_wider_terminal_shows_the_title_and_the_full_date(
    live_server: LiveServer, task_id: str, tmp_path: Path, mail_env: dict[str, str]
) -> None:
    screen = tasks_screen(live_server, tmp_path, mail_env, 160)
    row = next(line for line in screen.splitlines() if line.startswith(task_id))
    assert f" {TITLE} " in row, screen
    assert re.search(r" \d{4}-\d\d-\d\d \d\d:\d\d$", row.rstrip()), row
