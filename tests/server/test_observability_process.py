"""``mail server`` as a real process with metrics and JSON logs on: every log line is a
JSON object, ``/metrics`` counts the tasks it ran; a bad ``[server.metrics]`` is one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests._servers import clean_env, free_port, start_server
from tests.server.conftest import SWARMS_JSON

pytestmark = pytest.mark.timeout(60)

_PRINTED = ("MAIL API keys", "  admin ", "  user ", "  agent ", "Stored in ", "MAIL swarm viewer")


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every log record of ``text`` (each a JSON line: one that does not parse fails the
    test). The other lines are what the server prints besides its log: the first start's
    key banner and the viewer's URL."""
    lines = [line for line in text.splitlines() if line.strip()]
    printed = [line for line in lines if not line.startswith("{")]
    assert all(line.startswith(_PRINTED) for line in printed), printed
    return [json.loads(line) for line in lines if line.startswith("{")]


def test_json_logs_and_metrics_of_a_real_server(tmp_path: Path) -> None:
    env = clean_env() | {"MAIL_METRICS": "1", "MAIL_LOG_FORMAT": "json"}
    with start_server("offline", SWARMS_JSON, env, tmp_path / "data") as server:
        keys = {role: {"Authorization": f"Bearer {key}"} for role, key in server.keys.items()}
        with httpx.Client(base_url=server.url, timeout=15) as client:
            answer = client.post("/message", json={"body": "what is 6*7?"}, headers=keys["user"])
            scrape = client.get("/metrics", headers=keys["admin"])
        server.stop()
    records = json_lines(server.output())

    assert answer.status_code == 200, answer.text
    assert scrape.status_code == 200
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(scrape.text)
        for s in family.samples
    }
    assert samples[("mail_tasks_started_total", (("swarm", "offline"),))] == 1
    assert (
        samples[("mail_tasks_finished_total", (("status", "completed"), ("swarm", "offline")))] == 1
    )
    assert {"time", "level", "logger", "message"} <= set(records[0])
    serving = [r for r in records if r["message"].startswith("serving swarm offline")]
    assert serving
    assert serving[0]["logger"] == "mail.server"
    assert serving[0]["level"] == "INFO"
    # uvicorn's access log too, as JSON
    assert any(r["logger"] == "uvicorn.access" and "/message" in r["message"] for r in records)


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"MAIL_METRICS_PORT": "9464"}, "metrics are not enabled"),
        ({"MAIL_METRICS": "maybe"}, "MAIL_METRICS"),
        ({"MAIL_METRICS": "1", "MAIL_METRICS_PORT": "70000"}, "MAIL_METRICS_PORT"),
    ],
)
def test_bad_metrics_settings_are_one_line(tmp_path: Path, env: dict[str, str], says: str) -> None:
    command = [sys.executable, "-m", "mail.cli", "server", "-n", "offline", "-s", str(SWARMS_JSON)]
    command += ["-p", str(free_port()), "-H", "127.0.0.1"]

    result = subprocess.run(
        command, cwd=tmp_path, env=clean_env(tmp_path / "data") | env, capture_output=True,
        text=True, timeout=30, check=False,
    )  # fmt: skip

    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert says in lines[0]


def test_the_metrics_port_in_use_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [sys.executable, "-m", "mail.cli", "server", "-n", "offline"]
        command += ["-s", str(SWARMS_JSON), "-p", str(free_port()), "-H", "127.0.0.1"]
        env = clean_env(tmp_path / "data") | {"MAIL_METRICS": "1", "MAIL_METRICS_PORT": str(port)}
        result = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30,
            check=False,
        )  # fmt: skip

    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"127.0.0.1:{port}" in lines[0]
