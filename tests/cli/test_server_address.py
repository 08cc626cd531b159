"""Where ``mail server`` listens, as processes see it: a port in use is one line and exit 2;
a server on a port of its own is found by clients through ``<data_dir>/server.json``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.cli.conftest import _SERVER_ENV, MAIL_TOML, READY_WITHIN, _healthy, free_port

pytestmark = pytest.mark.timeout(90)


def server_env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SERVER_ENV}
    return env | {
        "MAIL_DATA_DIR": str(data),
        "SWARM_REGISTRY_FILE": str(data / "registry.json"),
        "MAIL_LOG_LEVEL": "WARNING",
    }


def server_command(port: int) -> list[str]:
    return [sys.executable, "-m", "mail.cli", "server", "-c", str(MAIL_TOML), "-p", str(port),
            "-H", "127.0.0.1", "--print-llm-streams", "false"]  # fmt: skip


@contextmanager
def serving(data: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """A ``mail server`` process of the offline swarm on ``port``, healthy."""
    log_path = data.parent / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            server_command(port), cwd=data, env=server_env(data), stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        # Polling a subprocess for readiness is the one place these tests sleep.
        deadline = time.monotonic() + READY_WITHIN
        while not _healthy(f"http://127.0.0.1:{port}"):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mail server did not become healthy:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.05)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


def test_a_client_finds_a_server_on_another_port_through_the_data_dir(tmp_path: Path) -> None:
    # issue 21 item 2: `mail message` went to port 8000 whatever port the server used
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    with serving(data, port) as server:
        record = json.loads((data / "server.json").read_text(encoding="utf-8"))
        assert record == {"url": f"http://127.0.0.1:{port}", "pid": server.pid}
        client = subprocess.run(
            [sys.executable, "-m", "mail.cli", "message", "what is 2+2?", "-c", str(MAIL_TOML)],
            cwd=data, env=server_env(data), capture_output=True, text=True, timeout=60,
            check=False,
        )  # fmt: skip
        assert client.returncode == 0, client.stderr
        assert client.stdout == "2+2 = 4\n"
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=15) == 0
    assert not (data / "server.json").exists()  # a stopped server leaves no address behind


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # issue 21 item 6: uvicorn logged the start-up, then "address already in use"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run(
            server_command(port), cwd=tmp_path, env=server_env(tmp_path) | {"MAIL_LOG_LEVEL": "INFO"},
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"mail server: port {port} on 127.0.0.1 is already in use (another mail server?); "
        "stop it or choose another port with -p/--port\n"
    )
    assert not (tmp_path / "server.json").exists()
