"""The example of docs/a2a.md runs as written against a real ``mail server`` on the
offline swarm, with the server's user key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests._servers import clean_env, start_server

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "a2a.md"
MARKER = "<!-- run by tests/a2a/test_docs_example.py -->"


def docs_example() -> str:
    """The Python block of docs/a2a.md marked as run by this test."""
    text = DOCS.read_text(encoding="utf-8")
    after = text.split(MARKER, 1)[1]
    return after.split("```python\n", 1)[1].split("\n```", 1)[0]


def test_the_docs_example_asks_and_streams(tmp_path: Path) -> None:
    with start_server("offline", ROOT / "swarms.json", clean_env(), tmp_path / "data") as server:
        env = clean_env() | {"MAIL_URL": server.url, "MAIL_API_KEY": server.keys["user"]}
        result = subprocess.run(
            [sys.executable, "-c", docs_example()],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )

    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "12 * (3 + 4) = 84"
    assert "... agent weather called get_weather_forecast" in lines
    assert lines[-1].startswith("Forecast for Paris on ")
