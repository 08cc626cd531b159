"""benchmarks/map_websocket.py runs: a real ``mail server`` and the official SDK's
reference server started, one short round of each phase driven by the SDK's client and by
raw JSON-RPC, and the table printed (its figures are not checked: tests assert no times).

Needs Node 20+ and npm, as tests/test_map_sdk.py.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests._servers import clean_env

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "map_websocket.py"

pytestmark = pytest.mark.timeout(300)  # an `npm ci` first, when node_modules is missing


@pytest.mark.parametrize("client", ["sdk", "raw"])
def test_the_websocket_benchmark_runs(client: str) -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("`node` or `npm` is not on PATH: install Node 20 or newer (with npm)")
    command = [sys.executable, str(SCRIPT), "--rounds", "1", "--turns", "5"]
    command += ["--connections", "1,2", "--client", client]
    result = subprocess.run(
        command, cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=240,
        check=False,
    )  # fmt: skip

    output = f"{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output
    lines = result.stdout.splitlines()
    for phase in ("1 writer connection(s):", "2 writer connection(s):"):
        rows = lines[lines.index(phase) + 2 : lines.index(phase) + 4]
        assert [row.split()[0] for row in rows] == ["mail", "reference"], output
        assert all(len(row.split()) == 11 for row in rows), output  # every column filled
