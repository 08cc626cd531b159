"""Where ``mail server`` listens, as processes see it: a port in use is one line and exit 2;
a server on a port of its own is found by clients through ``<data_dir>/server.json``."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tests._servers import Server, clean_env, free_port
from tests.cli.conftest import MAIL_TOML

pytestmark = pytest.mark.timeout(90)


def server_env(data: Path) -> dict[str, str]:
    return clean_env(data) | {"MAIL_LOG_LEVEL": "WARNING"}


def server_command(port: int) -> list[str]:
    return [sys.executable, "-m", "mail.cli", "server", "-c", str(MAIL_TOML), "-p", str(port),
            "-H", "127.0.0.1", "--print-llm-streams", "false"]  # fmt: skip


def serving(data: Path, port: int) -> Server:
    """A ``mail server`` process of the offline swarm on ``port``, not started."""
    url = f"http://127.0.0.1:{port}"
    log = data.parent / "server.log"
    return Server(server_command(port), env=server_env(data), cwd=data, log=log, url=url)


def test_a_client_finds_a_server_on_another_port_through_the_data_dir(tmp_path: Path) -> None:
    # issue 21 item 2: `mail message` went to port 8000 whatever port the server used
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    with serving(data, port) as server:
        record = json.loads((data / "server.json").read_text(encoding="utf-8"))
        assert record == {"url": f"http://127.0.0.1:{port}", "pid": server.process.pid}
        client = subprocess.run(
            [sys.executable, "-m", "mail.cli", "message", "what is 2+2?", "-c", str(MAIL_TOML)],
            cwd=data, env=server_env(data), capture_output=True, text=True, timeout=60,
            check=False,
        )  # fmt: skip
        assert client.returncode == 0, client.stderr
        assert client.stdout == "2+2 = 4\n"
        assert server.stop() == 0  # Ctrl+C
    assert not (data / "server.json").exists()  # a stopped server leaves no address behind


def test_server_json_is_removed_on_sigterm_too(tmp_path: Path) -> None:
    # issue 41: uvicorn re-raised SIGTERM with its default action once it had shut down,
    # which ended the process before the block that removes server.json could run
    data = tmp_path / "data"
    data.mkdir()
    server = serving(data, free_port()).start()
    try:
        record = json.loads((data / "server.json").read_text(encoding="utf-8"))
        assert record["pid"] == server.process.pid
        status = server.terminate()
    finally:
        server.stop()
    # what a supervisor expects of a clean stop on SIGTERM, as before (Ctrl-C exits 0)
    assert status == -signal.SIGTERM, server.tail()
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
