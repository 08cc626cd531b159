"""`mail server` with an LLM swarm whose settings are missing or wrong, as real processes.

Before it listens, the server refuses to start when an LLM agent lacks its proxy URL (one
line naming the variable and `mail doctor`); `--skip-llm-check` or `llm_check = false`
starts anyway. At run time, a proxy URL where nothing listens fails the task after one
round of retries, with an error naming the URL tried and the variable that sets it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from tests._servers import Server, clean_env, credentials, free_port, start_server

REPO = Path(__file__).resolve().parents[2]
SWARMS = REPO / "swarms.json"

pytestmark = pytest.mark.timeout(120)


def _mail_server(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mail.cli", "server", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        env=env,
    )


def test_an_llm_swarm_without_its_proxy_url_does_not_start(tmp_path: Path) -> None:
    # as the LLM recipe of docs/factories.md is typed, with its variable forgotten
    env = clean_env(tmp_path / "data")
    port = str(free_port())
    done = _mail_server("-n", "example", "-s", str(SWARMS), "-p", port, cwd=tmp_path, env=env)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("mail server: LITELLM_PROXY_API_BASE is not set")
    assert "supervisor" in lines[0] and "`mail doctor`" in lines[0]
    assert "--skip-llm-check" in lines[0]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "data" / "server.json").exists()  # it never listened


def test_a_missing_provider_key_is_named_too(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "data")
    port = str(free_port())
    args = ("-n", "example-no-proxy", "-s", str(SWARMS), "-p", port)
    done = _mail_server(*args, cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert "OPENAI_API_KEY is not set" in done.stderr, done.stderr


def _one_agent_swarm(tmp_path: Path) -> Path:
    """A swarm of one LLM agent behind the LiteLLM proxy, retrying fast (two retries)."""
    agent = {
        "name": "assistant",
        "factory": "python::mail.factories.supervisor:LiteLLMSupervisorFunction",
        "comm_targets": [],
        "enable_entrypoint": True,
        "can_complete_tasks": True,
        "tool_format": "completions",
        "agent_params": {
            "llm": "openai/gpt-4o-mini",
            "system": "You answer.",
            "max_retries": 2,
            "retry_backoff": 0.01,
        },
    }
    swarm = {
        "name": "lonely",
        "version": "1.3.6",
        "entrypoint": "assistant",
        "agents": [agent],
        "actions": [],
    }
    path = tmp_path / "swarms.json"
    path.write_text(json.dumps([swarm]), encoding="utf-8")
    return path


def test_skip_llm_check_starts_and_an_unreachable_proxy_fails_after_one_round(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    command = [sys.executable, "-m", "mail.cli", "server", "-n", "lonely"]
    command += ["-s", str(_one_agent_swarm(tmp_path)), "-p", str(port), "-H", "127.0.0.1"]
    env = clean_env(data) | {"LITELLM_PROXY_API_KEY": "proxy-key"}
    log = tmp_path / "server.log"
    url = f"http://127.0.0.1:{port}"
    # without LITELLM_PROXY_API_BASE, the flag starts it anyway
    server = Server([*command, "--skip-llm-check"], env=env, cwd=tmp_path, log=log, url=url)
    server.start()
    server.stop()
    nobody = f"http://127.0.0.1:{free_port()}"  # a loopback port nothing listens on
    server.env["LITELLM_PROXY_API_BASE"] = nobody
    server.start()
    try:
        with httpx.Client(base_url=url, timeout=60, trust_env=False) as http:
            headers = {"Authorization": f"Bearer {credentials(data)['user']}"}
            body = {"body": "hello", "show_events": True}
            answer = http.post("/message", headers=headers, json=body)
    finally:
        server.stop()
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "failed"
    error = answer.json()["response"]
    assert f"could not connect to {nobody}/" in error
    assert "set by LITELLM_PROXY_API_BASE" in error
    assert "failed after 3 attempts" in error  # one round: the first try and two retries
    names = [e["event"] for e in answer.json()["events"]]
    assert names.count("agent_error") == 1, names  # no second turn for the agent
    retries = re.findall(r"LLM call to \S+ failed .*; retry (\d) of 2", server.output())
    assert retries == ["1", "2"]


def test_llm_check_false_in_mail_toml_starts_anyway(tmp_path: Path) -> None:
    data = tmp_path / "data"
    toml = tmp_path / "mail.toml"
    toml.write_text("[server]\nllm_check = false\n", encoding="utf-8")
    env = clean_env(data) | {"MAIL_CONFIG_PATH": str(toml)}
    server = start_server("example", SWARMS, env, data)
    server.stop()
    assert "LITELLM_PROXY_API_BASE" not in server.output()
