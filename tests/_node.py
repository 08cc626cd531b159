"""Running the Node packages of packages/ from pytest: the tools on PATH and a command's
output, a failure showing what it printed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def node_tool(name: str, hint: str) -> str:
    """The path of ``name`` (node, npm, npx); fails the test with ``hint`` without it."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"`{name}` is not on PATH: {hint}")
    return path


def run_in(package: Path, command: list[str], env: dict[str, str], timeout: float) -> str:
    """``command`` run in ``package``: what it printed; the test fails when it fails."""
    result = subprocess.run(
        command,
        cwd=package,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=timeout,
        check=False,
    )
    output = f"{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, f"`{' '.join(command)}` exited {result.returncode}:\n{output}"
    return output
