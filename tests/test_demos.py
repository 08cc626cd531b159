"""The demo scripts run offline from any directory and print the conversation (issue 9)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
#: The scripts the tests below run (each as ``python scripts/NAME``, from a temporary directory).
DEMOS = ("single_swarm_demo.py", "multi_swarm_demo.py", "demo_client.py", "a2a_demo.py")
_MARKED_BLOCK = re.compile(
    r"^<!-- run by tests/test_demos\.py -->\n```bash\n(?P<body>.*?)^```$", re.M | re.S
)

pytestmark = pytest.mark.timeout(120)


def run(script: str, cwd: Path) -> str:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    env.pop("DATABASE_URL", None)
    env.pop("MAIL_CONFIG_PATH", None)
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=90,
        check=False,
    )
    assert result.returncode == 0, f"{script} failed:\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout


def test_single_swarm_demo(tmp_path: Path) -> None:
    out = run("single_swarm_demo.py", tmp_path)
    assert "alice asks: What's the weather in Tokyo tomorrow?" in out
    assert "alice → supervisor: [New Message]" in out
    assert "supervisor → weather:" in out
    assert "weather calls get_weather_forecast(location='Tokyo'" in out
    assert "Answer: Forecast for Tokyo on " in out
    assert "math calls calculate_expression(expression='12 * (3 + 4)')" in out
    assert "Answer: 12 * (3 + 4) = 84" in out
    assert not list(tmp_path.iterdir()), "the demo left files in its working directory"


def test_multi_swarm_demo(tmp_path: Path) -> None:
    out = run("multi_swarm_demo.py", tmp_path)
    assert "registered beta (http://127.0.0.1:" in out
    assert "registered alpha (http://127.0.0.1:" in out
    alpha, _, beta = out.partition("beta's events")
    assert "supervisor calls send_request(target='weather@beta'" in alpha
    assert "sent interswarm message forward to swarm beta" in alpha
    assert "received interswarm message from swarm beta" in alpha
    assert "weather@beta → supervisor@alpha: [Re: Forecast] Forecast for Lisbon" in alpha
    assert "received interswarm message from swarm alpha" in beta
    assert "weather calls get_weather_forecast(location='Lisbon', days_ahead=1" in beta
    assert "sent interswarm message back to swarm alpha" in beta
    assert "Answer: weather@beta says: Forecast for Lisbon on " in out
    assert "Both servers stopped." in out
    assert not list(tmp_path.iterdir())


def test_demo_client(tmp_path: Path) -> None:
    out = run("demo_client.py", tmp_path)
    assert "Server: mail protocol " in out
    assert "Swarm:  offline (entrypoint supervisor)" in out
    assert "Health: healthy" in out
    assert "Who am I: user alice" in out
    assert "  answer: 6 * 7 = 42" in out
    assert "weather calls get_weather_forecast(location='Rome'" in out
    assert "- 2 ** 10 = 1024" in out
    assert "Tasks of alice: 2" in out
    assert "Server stopped." in out
    assert not list(tmp_path.iterdir())


def test_a2a_demo(tmp_path: Path) -> None:
    out = run("a2a_demo.py", tmp_path)
    assert "remote A2A agent at http://127.0.0.1:" in out
    assert "A2A client asks: What's the weather in Lisbon tomorrow?" in out
    assert "  working: supervisor -> weather: Weather forecast" in out
    assert "  working: weather -> supervisor: Re: Weather forecast" in out
    assert "Answer: The remote A2A agent says: sunny and 24°C" in out
    assert "Both servers stopped." in out
    assert not list(tmp_path.iterdir())


def test_documented_demo_commands_are_the_ones_run_here() -> None:
    """A page block marked ``run by tests/test_demos.py`` (the README's federation demo,
    docs/examples.md) holds only ``uv run python scripts/<demo>`` for a demo run above."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    commands = [
        (page.name, shlex.split(line, comments=True))
        for page in pages
        for block in _MARKED_BLOCK.finditer(page.read_text(encoding="utf-8"))
        for line in block["body"].splitlines()
        if shlex.split(line, comments=True)
    ]
    assert ("README.md", ["uv", "run", "python", "scripts/multi_swarm_demo.py"]) in commands
    for page, words in commands:
        assert words[:3] == ["uv", "run", "python"], (page, words)
        assert len(words) == 4, (page, words)
        assert words[3].removeprefix("scripts/") in DEMOS, (page, words)
        assert (ROOT / words[3]).is_file(), (page, words)
