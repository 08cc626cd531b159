"""`python -m mail.testing.llm`: the offline LLM recipe of docs/factories.md, as processes.

The stub command and `mail server` run as subprocesses, wired only by the variables the
docs name; LiteLLM makes real HTTP calls to the stub.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
SWARMS = REPO / "swarms.json"
READY_WITHIN = 30.0
# What would change where the server or LiteLLM look: the test sets what it needs.
_DROPPED = (
    "MAIL_CONFIG_PATH", "MAIL_LOG_LEVEL", "SWARM_NAME", "SWARM_SOURCE", "DATABASE_URL",
    "MAIL_DATA_DIR", "SWARM_REGISTRY_FILE", "BASE_URL", "AUTH_ENDPOINT", "TOKEN_INFO_ENDPOINT",
    "LITELLM_PROXY_API_BASE", "LITELLM_PROXY_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL",
    "OPENAI_API_KEY", "LITELLM_LOG",
)  # fmt: skip
_LISTENING = re.compile(r"stub LLM listening on (http://127\.0\.0\.1:\d+/v1)")

pytestmark = pytest.mark.timeout(120)


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in _DROPPED}


def _stop(process: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@pytest.fixture(scope="module")
def stub_url() -> Iterator[str]:
    """The base URL (with /v1) of a `python -m mail.testing.llm --port 0` process."""
    command = [sys.executable, "-m", "mail.testing.llm", "--port", "0"]
    process = subprocess.Popen(
        command, env=_clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # the command prints its URL once listening
        found = _LISTENING.match(first)
        assert found, f"unexpected first line from the stub LLM: {first!r}"
        yield found.group(1)
    finally:
        _stop(process)
        if process.stdout is not None:
            process.stdout.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@dataclass(frozen=True, slots=True)
class Server:
    url: str
    user_key: str
    log: Path


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=0.5, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def _start_server(
    swarm: str, env: dict[str, str], data: Path
) -> tuple[subprocess.Popen[bytes], Server]:
    url = f"http://127.0.0.1:{(port := _free_port())}"
    command = [sys.executable, "-m", "mail.cli", "server", "-n", swarm, "-s", str(SWARMS)]
    command += ["-p", str(port), "-H", "127.0.0.1"]
    log = data.parent / f"{data.name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=data, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + READY_WITHIN
    while not _healthy(url):  # polling a subprocess for readiness: it offers no other signal
        if process.poll() is not None or time.monotonic() > deadline:
            _stop(process)
            pytest.fail(f"mail server did not become healthy:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)
    keys = json.loads((data / "credentials.json").read_text(encoding="utf-8"))["keys"]
    user_key = next(k["key"] for k in keys if k["role"] == "user")
    return process, Server(url, user_key, log)


# The variables docs/factories.md gives for each swarm.
RECIPES = {
    "example": lambda url: {"LITELLM_PROXY_API_BASE": url},
    "example-no-proxy": lambda url: {"OPENAI_API_BASE": url, "OPENAI_API_KEY": "stub"},
}


@pytest.mark.parametrize("swarm", sorted(RECIPES))
def test_the_stub_command_drives_the_example_swarm_end_to_end(
    stub_url: str, swarm: str, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    env = _clean_env() | {"MAIL_DATA_DIR": str(data)} | RECIPES[swarm](stub_url)
    process, server = _start_server(swarm, env, data)
    try:
        headers = {"Authorization": f"Bearer {server.user_key}"}
        with httpx.Client(
            base_url=server.url, headers=headers, timeout=60, trust_env=False
        ) as http:
            weather = http.post(
                "/message", json={"body": "Will it be sunny in Tokyo tomorrow?", "stream": False}
            )
            arithmetic = http.post("/message", json={"body": "What is 12 * (3 + 4)?"})
    finally:
        _stop(process)
    assert weather.status_code == 200, weather.text
    assert weather.json()["status"] == "completed"
    assert re.fullmatch(r"Tokyo on \d{4}-\d\d-\d\d: \w[\w ]*, -?\d+ C", weather.json()["response"])
    assert arithmetic.json()["response"] == "12 * (3 + 4) = 84"
    log = server.log.read_text(encoding="utf-8", errors="replace")
    assert "LiteLLM completion()" not in log  # regression: logged twice per call at INFO
    assert "Traceback" not in log
