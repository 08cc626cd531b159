"""The official A2A JavaScript SDK (``@a2a-js/sdk``, pinned in packages/a2a-js-tests) against
a real ``mail server`` on the offline swarm: its client reads the card, sends over JSON-RPC
and HTTP+JSON, streams, follows up in the same context, and is refused a wrong key.

Needs Node 20 or newer with npm (``npm ci`` runs here when ``.ci/run`` has not run it)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from tests._node import node_tool, run_in
from tests._servers import clean_env, start_server

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "packages" / "a2a-js-tests"
NODE_HINT = "install Node 20 or newer (with npm) to test packages/a2a-js-tests"

pytestmark = pytest.mark.timeout(900)


def _tool(name: str) -> str:
    return node_tool(name, NODE_HINT)


def _run(command: list[str], env: dict[str, str], timeout: float) -> str:
    return run_in(PACKAGE, command, env, timeout)


def test_the_official_js_client_talks_to_the_swarm(tmp_path: Path) -> None:
    node, npm = _tool("node"), _tool("npm")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    major = int(version.stdout.strip().lstrip("v").split(".")[0])
    if major < 20:
        pytest.fail(f"node {version.stdout.strip()} is too old: {NODE_HINT}")
    env = clean_env() | {"CI": "1"}
    if not (PACKAGE / "node_modules").is_dir():
        _run([npm, "ci", "--no-audit", "--no-fund"], env, timeout=600)
    with start_server("offline", ROOT / "swarms.json", clean_env(), tmp_path / "data") as server:
        env |= {"A2A_URL": server.url, "A2A_KEY": server.keys["user"]}
        output = _run([npm, "test"], env, 600)
    assert re.search(r"^# pass [1-9]", output, re.M), f"no test passed:\n{output}"
    assert not re.search(r"^# (fail|skipped|todo) [1-9]", output, re.M), output
