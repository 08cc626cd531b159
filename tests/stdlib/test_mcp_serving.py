"""MCP servers behind the MAIL server: ``mail server -n mcp-demo`` answers with the MCP
tool's result, a down server stops the start with one line, ``POST /swarms/load`` refuses
``command`` servers, and ``mail doctor`` reports each server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests._servers import clean_env, free_port, serve, start_server
from tests.server.conftest import KEYS, ROLE_KEYS, make_config
from tests.stdlib._mcp_helpers import SWARMS, http_demo

from mail.cli._doctor import run_checks
from mail.config import StdlibConfig, StdlibHTTPConfig
from mail.server import create_app
from mail.stdlib._settings import configure
from mail.testing import StaticAuth

pytestmark = pytest.mark.timeout(60)


def mcp_demo() -> dict[str, Any]:
    swarm: dict[str, Any] = {s["name"]: s for s in json.loads(SWARMS.read_text())}["mcp-demo"]
    return swarm


def test_mail_server_mcp_demo_answers_a_message_with_the_tools_result(tmp_path: Path) -> None:
    server = start_server("mcp-demo", SWARMS, clean_env(), tmp_path / "data")
    try:
        with httpx.Client(
            base_url=server.url,
            headers={"Authorization": f"Bearer {server.keys['user']}"},
            timeout=30,
            trust_env=False,
        ) as http:
            answer = http.post("/message", json={"body": "add 2 and 40"})
            hello = http.post("/message", json={"body": "hello", "show_events": True})
    finally:
        server.stop()
    assert answer.status_code == 200, answer.text
    assert answer.json()["response"] == "The MCP tool calc__add answered: 42"
    # a greeting: no tool fits, and the agent says so instead of counting its words
    assert hello.json()["status"] == "completed"
    greeting = hello.json()["response"]
    assert greeting.startswith("Hello! I have no tool for a greeting.")
    assert "calc__add (try: add 2 and 40)" in greeting
    assert not any(e["event"] == "action_call" for e in hello.json()["events"])
    assert "Traceback" not in server.output()


def test_mail_server_stops_with_one_line_when_a_server_is_down(tmp_path: Path) -> None:
    swarm = mcp_demo() | {"mcp_servers": [{"name": "calc", "url": "http://127.0.0.1:9/mcp"}]}
    source = tmp_path / "swarms.json"
    source.write_text(json.dumps([swarm]))
    env = clean_env() | {
        "MAIL_DATA_DIR": str(tmp_path / "data"),
        "SWARM_REGISTRY_FILE": str(tmp_path / "registry.json"),
    }
    command = [sys.executable, "-m", "mail.cli", "server", "-n", "mcp-demo", "-s", str(source)]
    command += ["-p", str(free_port()), "-H", "127.0.0.1"]

    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=45, check=False
    )

    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("mail server:")]
    assert errors == [
        "mail server: MCP server 'calc' (http://127.0.0.1:9/mcp) could not be started: "
        "ConnectError: All connection attempts failed"
    ]
    assert "Traceback" not in done.stderr + done.stdout


async def test_swarms_load_refuses_commands_and_tokens_and_guards_url_servers(
    tmp_path: Path,
) -> None:
    app = create_app(make_config(tmp_path), authenticator=StaticAuth(KEYS))
    async with serve(app) as base, http_demo() as url, httpx.AsyncClient(base_url=base) as client:
        admin = {"Authorization": f"Bearer {ROLE_KEYS['admin']}"}
        refused = await client.post(
            "/swarms/load", json={"json": json.dumps(mcp_demo())}, headers=admin
        )
        assert refused.status_code == 400
        detail = refused.json()["detail"]
        assert detail.startswith("error loading swarm from JSON")
        assert "'command' servers are not allowed in a swarm sent over HTTP" in detail
        assert app.state.mail.template.name == "offline"

        # an untrusted swarm may not send the server's environment to its URL
        leaky = mcp_demo() | {"mcp_servers": [{"name": "calc", "url": url, "token": "${HOME}"}]}
        refused = await client.post("/swarms/load", json={"json": json.dumps(leaky)}, headers=admin)
        assert refused.status_code == 400
        assert "'token' references are not allowed" in refused.json()["detail"]

        # its url servers go through the outbound guard of [stdlib.http]: loopback refused
        remote = mcp_demo() | {"mcp_servers": [{"name": "calc", "url": url}]}
        refused = await client.post(
            "/swarms/load", json={"json": json.dumps(remote)}, headers=admin
        )
        assert refused.status_code == 400
        assert "refused by the rule 'loopback'" in refused.json()["detail"]

        previous = configure(StdlibConfig(http=StdlibHTTPConfig(allow_loopback=True)))
        try:
            loaded = await client.post(
                "/swarms/load", json={"json": json.dumps(remote)}, headers=admin
            )
        finally:
            configure(previous)
        assert loaded.status_code == 200, loaded.text

        user = {"Authorization": f"Bearer {ROLE_KEYS['user']}"}
        answer = await client.post(
            "/message", json={"body": "add 2 and 40"}, headers=user, timeout=30
        )
        assert answer.json()["response"] == "The MCP tool calc__add answered: 42"


def test_mail_doctor_reports_each_mcp_server(tmp_path: Path) -> None:
    swarm = mcp_demo()
    swarm["mcp_servers"].append({"name": "down", "url": "http://127.0.0.1:9/mcp", "optional": True})
    source = tmp_path / "swarms.json"
    source.write_text(json.dumps([swarm]))
    env = {"MAIL_DATA_DIR": str(tmp_path), "SWARM_REGISTRY_FILE": str(tmp_path / "r.json")}

    checks = run_checks(
        None,
        env,
        search=False,
        overrides={"server": {"swarm": {"name": "mcp-demo", "source": str(source)}}},
    )

    found = {c.name: c for c in checks if c.name.startswith("mcp server")}
    assert found["mcp server calc"].status == "ok"
    assert found["mcp server calc"].message == "stdio: 2 tool(s) offered: add, word_count"
    assert found["mcp server down"].status == "warn"
    assert "could not be started" in found["mcp server down"].message
