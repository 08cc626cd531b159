"""v1.3.6's ``mail.server.run_server_with_template``: a template built in Python is served
by a real process, with the port, host and settings the call gives."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest
from tests._servers import Server, free_port
from tests.server.conftest import MAIL_TOML
from tests.server.test_server_process import server_env

pytestmark = pytest.mark.timeout(45)

SCRIPT = """
import sys
from mail.api import MAILSwarmTemplate
from mail.config import load_config
from mail.server import run_server_with_template

template = MAILSwarmTemplate.from_swarm_json_file("offline", sys.argv[1])
template.name = "from-python"
run_server_with_template(template, int(sys.argv[2]), "127.0.0.1", 5, False,
                         config=load_config(sys.argv[3]))
"""


def _serve_and_ask(
    tmp_path: Path, script: str, args: list[str], env: dict[str, str] | None = None
) -> tuple[str, str]:
    """Run ``script`` (which serves the offline swarm on the port it is given after
    swarms.json), ask it 6*7 as a user, stop it; returns (swarm name, server output)."""
    cwd, data = tmp_path / "cwd", tmp_path / "data"
    cwd.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    swarms = MAIL_TOML.parent / "swarms.json"
    command = [sys.executable, "-c", script, str(swarms), str(port), *args]
    log = tmp_path / "server.log"
    with Server(command, env=server_env(data) | (env or {}), cwd=cwd, log=log, url=url) as server:
        credentials = json.loads((data / "credentials.json").read_text(encoding="utf-8"))
        user_key = next(k["key"] for k in credentials["keys"] if k["role"] == "user")
        with httpx.Client(base_url=url, timeout=10) as client:
            root = client.get("/").json()
            answer = client.post(
                "/message",
                json={"body": "what is 6*7?"},
                headers={"Authorization": f"Bearer {user_key}"},
            )
        assert answer.status_code == 200, answer.text
        assert "42" in answer.json()["response"]
        status = server.stop()
    output = log.read_text(encoding="utf-8", errors="replace")
    assert status == 0, output[-2000:]
    assert "Traceback" not in output
    return root["swarm"]["name"], output


def test_run_server_with_template_serves_the_template(tmp_path: Path) -> None:
    name, _output = _serve_and_ask(tmp_path, SCRIPT, [str(MAIL_TOML)])
    assert name == "from-python"


START_SERVER_SCRIPT = """
import sys
from mail.api import MAILSwarmTemplate

template = MAILSwarmTemplate.from_swarm_json_file("offline", sys.argv[1])
template.name = "started"
template.start_server(int(sys.argv[2]), "127.0.0.1", launch_ui=True,
                      server_url="http://peer-facing.example:9")
"""


def test_template_start_server_serves_the_template(tmp_path: Path) -> None:
    # v1.3.6's MAILSwarmTemplate.start_server: the UI flags are accepted (and logged),
    # server_url is the advertised base URL.
    env = {"MAIL_CONFIG_PATH": str(MAIL_TOML)}
    name, output = _serve_and_ask(tmp_path, START_SERVER_SCRIPT, [], env)
    assert name == "started"
    assert "launch_ui, ui_port and ui_path are ignored" in output
