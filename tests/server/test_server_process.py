"""``mail server`` as a real process: starts from any working directory, answers, and stops
cleanly on SIGINT; an unknown swarm is a one-line usage error (CONTRACT 9.3); ``-r`` reloads
with the same configuration; ``uvicorn mail.server:app`` applies the configured body limit."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests._servers import Server, clean_env, free_port
from tests.server.conftest import MAIL_TOML

pytestmark = pytest.mark.timeout(45)

RESTARTED_WITHIN = 10.0  # for a new worker to answer after a change


def server_env(data_dir: Path) -> dict[str, str]:
    return clean_env(data_dir) | {"MAIL_LOG_LEVEL": "WARNING"}


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(working directory with nothing in it, data directory)."""
    cwd, data = tmp_path / "cwd", tmp_path / "data"
    cwd.mkdir()
    yield cwd, data


def test_mail_server_process_serves_and_stops_on_sigint(dirs: tuple[Path, Path]) -> None:
    cwd, data = dirs
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = cwd.parent / "server.log"
    command = [sys.executable, "-m", "mail.cli", "server", "-c", str(MAIL_TOML)]
    command += ["-p", str(port), "-H", "127.0.0.1"]
    with Server(command, env=server_env(data), cwd=cwd, log=log, url=url) as server:
        print(f"mail server: healthy {server.ready_in:.3f}s after launch")
        credentials = json.loads((data / "credentials.json").read_text(encoding="utf-8"))
        user_key = next(k["key"] for k in credentials["keys"] if k["role"] == "user")
        with httpx.Client(base_url=url, timeout=10) as client:
            root = client.get("/").json()
            answer = client.post(
                "/message",
                json={"body": "what is 6*7?"},
                headers={"Authorization": f"Bearer {user_key}"},
            )
        assert root["swarm"]["name"] == "offline"
        assert root["protocol_version"] == "1.3"
        assert answer.status_code == 200
        assert "42" in answer.json()["response"]

        status = server.stop()
    output_text = log.read_text(encoding="utf-8", errors="replace")
    assert status == 0, f"exit status {status}; output:\n{output_text[-2000:]}"
    assert "Traceback" not in output_text
    assert list(cwd.iterdir()) == []  # nothing written to the working directory


@pytest.mark.parametrize("module", ["mail.cli", "mail.server"])
def test_unknown_swarm_is_a_one_line_error(dirs: tuple[Path, Path], module: str) -> None:
    cwd, data = dirs
    command = [sys.executable, "-m", module]
    command += [*(["server"] if module == "mail.cli" else []), "-n", "nosuch", "-c", str(MAIL_TOML)]

    result = subprocess.run(
        command, cwd=cwd, env=server_env(data), capture_output=True, text=True, timeout=30,
        check=False,
    )  # fmt: skip

    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("mail server: ")
    assert "nosuch" in lines[0]
    assert result.stdout == ""


@pytest.mark.parametrize("access_log", [True, False])
def test_access_log_follows_the_config(dirs: tuple[Path, Path], access_log: bool) -> None:
    cwd, data = dirs
    config = cwd.parent / "mail.toml"
    text = MAIL_TOML.read_text(encoding="utf-8")
    text = text.replace("[server]\n", f"[server]\naccess_log = {str(access_log).lower()}\n", 1)
    swarms = (MAIL_TOML.parent / "swarms.json").as_posix()
    text = text.replace('source = "swarms.json"', f'source = "{swarms}"', 1)
    config.write_text(text, encoding="utf-8")
    port = free_port()
    log = cwd.parent / "server.log"
    command = [sys.executable, "-m", "mail.cli", "server", "-c", str(config)]
    command += ["-p", str(port), "-H", "127.0.0.1"]
    url = f"http://127.0.0.1:{port}"
    with Server(command, env=server_env(data), cwd=cwd, log=log, url=url) as server:
        assert server.stop() == 0
    output_text = log.read_text(encoding="utf-8", errors="replace")
    assert ('"GET /health HTTP/1.1" 200' in output_text) is access_log, output_text[-2000:]


def test_reload_serves_the_configured_app_and_restarts_on_a_code_change(
    dirs: tuple[Path, Path],
) -> None:
    """``mail server -r`` hands uvicorn ``mail.server:app``; the worker it spawns (and
    spawns again after a change) gets the flags too: ``-d`` opens ``/ui/*`` on loopback."""
    cwd, data = dirs
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = cwd.parent / "server.log"
    command = [sys.executable, "-m", "mail.cli", "server", "-r", "-d", "-c", str(MAIL_TOML)]
    command += ["-p", str(port), "-H", "127.0.0.1"]
    with Server(command, env=server_env(data), cwd=cwd, log=log, url=url) as server:
        with httpx.Client(base_url=url, timeout=10) as client:
            agents = client.get("/ui/agents")  # no key: debug mode, loopback
            root = client.get("/").json()
        assert agents.status_code == 200, agents.text
        assert root["swarm"]["name"] == "offline"

        (cwd / "edited.py").write_text("VALUE = 1\n", encoding="utf-8")
        restarted = _wait_for_restart(url, root["uptime"], server.process)
        with httpx.Client(base_url=url, timeout=10) as client:
            assert client.get("/ui/agents").status_code == 200
        assert restarted
        status = server.stop()
    output_text = log.read_text(encoding="utf-8", errors="replace")
    assert status == 0, f"exit status {status}; output:\n{output_text[-2000:]}"
    assert "Traceback" not in output_text
    assert output_text.count("Application startup complete") == 2, output_text[-2000:]


def _wait_for_restart(url: str, uptime: float, process: subprocess.Popen[bytes]) -> bool:
    """Poll ``GET /`` until a new worker answers (its uptime is below ``uptime`` plus the
    time since). Polling, as for readiness: a subprocess offers no other signal."""
    started = time.perf_counter()
    with httpx.Client(base_url=url, timeout=0.5) as client:
        while time.perf_counter() - started < RESTARTED_WITHIN:
            if process.poll() is not None:
                pytest.fail(f"mail server exited with status {process.returncode}")
            try:
                now = client.get("/").json()["uptime"]
            except (httpx.TransportError, ValueError):
                now = None
            if now is not None and now < uptime + (time.perf_counter() - started) - 0.05:
                return True
            time.sleep(0.05)
    return False


def test_uvicorn_by_name_applies_the_configured_body_limit(dirs: tuple[Path, Path]) -> None:
    """``uvicorn mail.server:app`` builds the app before the configuration is read: the
    limit of ``[server] max_body_bytes`` must still apply (413 above it)."""
    cwd, data = dirs
    config = cwd.parent / "mail.toml"
    swarms = (MAIL_TOML.parent / "swarms.json").as_posix()
    config.write_text(
        f'[server]\nmax_body_bytes = 2048\n[server.swarm]\nname = "offline"\nsource = "{swarms}"\n',
        encoding="utf-8",
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "uvicorn", "mail.server:app"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    env = server_env(data) | {"MAIL_CONFIG_PATH": str(config)}
    with Server(command, env=env, cwd=cwd, log=cwd.parent / "server.log", url=url) as server:
        with httpx.Client(base_url=url, timeout=10) as client:
            large = client.post("/message", content=b"x" * 4096)
            small = client.post("/message", content=b"x" * 1024)
        assert (large.status_code, large.json()) == (
            413,
            {"detail": "request body is larger than 2048 bytes"},
        )
        assert small.status_code == 401  # under the limit: on to authentication
        assert server.stop() == 0


def test_the_map_websocket_takes_no_per_message_deflate(dirs: tuple[Path, Path]) -> None:
    """A client offering permessage-deflate (the ``ws`` package behind the official SDK
    does by default) gets uncompressed frames: MAP's frames are a few hundred bytes, and
    compressing each cost both sides more CPU than the rest of a ``mail/turn``'s
    transport (benchmarks/README.md, "MAP over WebSocket")."""
    from websockets.sync.client import connect

    cwd, data = dirs
    port = free_port()
    command = [sys.executable, "-m", "mail.cli", "server", "-c", str(MAIL_TOML)]
    command += ["-p", str(port), "-H", "127.0.0.1"]
    url = f"http://127.0.0.1:{port}"
    with Server(command, env=server_env(data), cwd=cwd, log=cwd.parent / "server.log", url=url):
        credentials = json.loads((data / "credentials.json").read_text(encoding="utf-8"))
        user_key = next(k["key"] for k in credentials["keys"] if k["role"] == "user")
        with connect(
            f"ws://127.0.0.1:{port}/map",
            additional_headers={"Authorization": f"Bearer {user_key}"},
            compression="deflate",  # offered
            proxy=None,
            open_timeout=15,
        ) as ws:
            ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "mail/list", "params": {}}))
            answer = json.loads(ws.recv(timeout=15))
            extensions = ws.response.headers.get("Sec-WebSocket-Extensions")
    assert "conversations" in answer["result"], answer
    assert extensions is None
