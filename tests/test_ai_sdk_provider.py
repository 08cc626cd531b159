"""The TypeScript AI SDK provider (packages/ai-sdk-provider, issue 24): its strict type check
and its tests (unit tests on recorded SSE, end-to-end tests with ``ai``'s generateText and
streamText against real ``mail server`` processes started from this venv's ``mail``).

Needs Node 20+ and npm; ``npm ci`` runs first when ``node_modules`` is missing (it needs the
npm registry, or npm's cache).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "packages" / "ai-sdk-provider"
NODE_HINT = "install Node 20 or newer (with npm) to test packages/ai-sdk-provider"

pytestmark = pytest.mark.timeout(900)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"`{name}` is not on PATH: {NODE_HINT}")
    return path


def _run(command: list[str], env: dict[str, str], timeout: float) -> None:
    result = subprocess.run(
        command,
        cwd=PACKAGE,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, (
        f"`{' '.join(command)}` exited {result.returncode} in {PACKAGE}:\n"
        f"{result.stdout}\n{result.stderr}"
    )


def test_ai_sdk_provider_type_checks_and_passes_its_tests() -> None:
    node = _tool("node")
    npm = _tool("npm")
    npx = _tool("npx")
    version = subprocess.run(
        [node, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    major = int(version.lstrip("v").split(".")[0])
    if major < 20:
        pytest.fail(f"node {version} is too old: {NODE_HINT}")
    mail = Path(sys.executable).parent / "mail"
    assert mail.exists(), f"no `mail` next to {sys.executable}: run `uv sync`"
    env = {**os.environ, "MAIL_BIN": str(mail), "CI": "1"}
    for name in ("MAIL_CONFIG_PATH", "MAIL_DATA_DIR", "DATABASE_URL", "SWARM_REGISTRY_FILE"):
        env.pop(name, None)
    if not (PACKAGE / "node_modules").is_dir():
        _run([npm, "ci", "--no-audit", "--no-fund"], env, timeout=600)
    _run([npx, "tsc", "--noEmit"], env, timeout=300)
    _run([npm, "test"], env, timeout=600)
