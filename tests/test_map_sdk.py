"""The official MAP SDK (``@multi-agent-protocol/sdk``, pinned in packages/map-sdk-tests)
against a real ``mail server`` process (issue 36): its Node tests connect with
``ClientConnection.connect("ws://…/map", {auth})``, subscribe, start a task with a
conversation and see its events arrive, authenticate late, and disconnect; an
``AgentConnection`` registers with an agent key and takes part in a conversation, and two
user keys share one by invitation; call every ``mail/*`` operation through the SDK's
typed methods and check the fields of its result types; resume a dropped socket without
loss; and run one scenario against this server and the SDK's reference server
(``MAPServer``, started by the Node test itself), comparing outcomes and shapes
(packages/map-sdk-tests/test/compare.test.mjs). The WebSocket section's example of
docs/map-mail.md runs as written.

Needs Node 20+ and npm; ``npm ci`` runs first when ``node_modules`` is missing (it needs
the npm registry, or npm's cache).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import httpx
import pytest
from tests._node import node_tool, run_in
from tests._servers import clean_env, start_server

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "packages" / "map-sdk-tests"
DOCS = ROOT / "docs" / "map-mail.md"
MARKER = "<!-- run by tests/test_map_sdk.py -->"
NODE_HINT = "install Node 20 or newer (with npm) to test packages/map-sdk-tests"
#: the tests of compare.test.mjs (against the SDK's reference server)
COMPARED = (
    "every step has the same outcome on both servers",
    "our results have every field of the reference, with the same JSON types",
)

pytestmark = pytest.mark.timeout(900)


def _tool(name: str) -> str:
    return node_tool(name, NODE_HINT)


def docs_example() -> str:
    """The JavaScript block of docs/map-mail.md marked as run by this test."""
    text = DOCS.read_text(encoding="utf-8")
    found = re.search(re.escape(MARKER) + r"\n```js\n(.*?)\n```\n", text, re.S)
    assert found is not None, f"no ```js block after {MARKER} in {DOCS}"
    return found.group(1) + "\n"


def _run(command: list[str], env: dict[str, str], timeout: float) -> str:
    return run_in(PACKAGE, command, env, timeout)


def _new_key(url: str, admin_key: str, role: str, holder: str) -> str:
    """A new API key made with ``POST /keys``."""
    made = httpx.post(
        f"{url}/keys",
        json={"role": role, "id": holder},
        headers={"Authorization": f"Bearer {admin_key}"},
        timeout=15,
    )
    assert made.status_code == 201, made.text
    key: str = made.json()["key"]
    return key


def test_the_official_sdk_connects_subscribes_and_disconnects(tmp_path: Path) -> None:
    node, npm = _tool("node"), _tool("npm")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    major = int(version.stdout.strip().lstrip("v").split(".")[0])
    if major < 20:
        pytest.fail(f"node {version.stdout.strip()} is too old: {NODE_HINT}")
    env = clean_env() | {"CI": "1"}
    if not (PACKAGE / "node_modules").is_dir():
        _run([npm, "ci", "--no-audit", "--no-fund"], env, timeout=600)
    example = PACKAGE / ".docs-example.mjs"  # in the package: its imports resolve there
    example.write_text(docs_example(), encoding="utf-8")
    try:
        with start_server("offline", ROOT / "swarms.json", clean_env(), tmp_path / "data") as s:
            env |= {
                "MAP_URL": s.url.replace("http://", "ws://") + "/map",
                "MAP_KEY": s.keys["user"],
                "MAP_USER2_KEY": _new_key(s.url, s.keys["admin"], "user", "sdk-second-user"),
                "MAP_AGENT_KEY": s.keys["agent"],
            }
            output = _run([npm, "test"], env, 600)
            printed = _run([node, example.name], env, 120).strip().splitlines()
    finally:
        example.unlink()
    assert re.search(r"^# pass [1-9]", output, re.M), f"no test passed:\n{output}"
    assert not re.search(r"^# (fail|skipped|todo) [1-9]", output, re.M), output
    for ran in COMPARED:  # the comparison with the reference server ran, and passed
        assert re.search(rf"^ok \d+ - {re.escape(ran)}$", output, re.M), f"{ran!r}:\n{output}"
    # the example's two lines: the task's answer, the events seen while it ran
    assert "42" in printed[0], printed
    assert printed[1].split()[0] == "mail.created", printed
