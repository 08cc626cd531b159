"""`python -m mail.testing.llm`: the offline LLM recipe of docs/factories.md, as processes.

The stub command and `mail server` run as subprocesses, wired only by the variables the
docs name; LiteLLM makes real HTTP calls to the stub.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests._servers import Server, clean_env, start_server

REPO = Path(__file__).resolve().parents[2]
SWARMS = REPO / "swarms.json"
_LISTENING = re.compile(r"\Astub LLM listening on (http://127\.0\.0\.1:\d+/v1)")

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def stub_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL (with /v1) of a `python -m mail.testing.llm --port 0` process, which
    prints it first once listening."""
    command = [sys.executable, "-m", "mail.testing.llm", "--port", "0"]
    log = tmp_path_factory.mktemp("stub-llm") / "llm.log"
    with Server(
        command, env=clean_env(), cwd=log.parent, log=log, printed=_LISTENING, health=False
    ) as stub:
        yield stub.url


# The variables docs/factories.md gives for each swarm.
RECIPES = {
    "example": lambda url: {"LITELLM_PROXY_API_BASE": url},
    "example-no-proxy": lambda url: {"OPENAI_API_BASE": url, "OPENAI_API_KEY": "stub"},
}


@pytest.mark.parametrize("swarm", sorted(RECIPES))
def test_the_stub_command_drives_the_example_swarm_end_to_end(
    stub_url: str, swarm: str, tmp_path: Path
) -> None:
    env = clean_env() | RECIPES[swarm](stub_url)
    server = start_server(swarm, SWARMS, env, tmp_path / "data")
    try:
        headers = {"Authorization": f"Bearer {server.keys['user']}"}
        with httpx.Client(
            base_url=server.url, headers=headers, timeout=60, trust_env=False
        ) as http:
            weather = http.post(
                "/message", json={"body": "Will it be sunny in Tokyo tomorrow?", "stream": False}
            )
            arithmetic = http.post("/message", json={"body": "What is 12 * (3 + 4)?"})
    finally:
        server.stop()
    assert weather.status_code == 200, weather.text
    assert weather.json()["status"] == "completed"
    assert re.fullmatch(r"Tokyo on \d{4}-\d\d-\d\d: \w[\w ]*, -?\d+ C", weather.json()["response"])
    assert arithmetic.json()["response"] == "12 * (3 + 4) = 84"
    log = server.output()
    assert "LiteLLM completion()" not in log  # regression: logged twice per call at INFO
    assert "Traceback" not in log


def test_the_docs_give_these_commands_and_variables() -> None:
    page = (REPO / "docs" / "factories.md").read_text(encoding="utf-8")
    marker = "<!-- run by tests/testing/test_llm_command.py -->\n```bash\n"
    block = page.split(marker, 1)[1].split("```", 1)[0]
    assert "uv run python -m mail.testing.llm --port 4000" in block
    url = "http://127.0.0.1:4000/v1"
    for swarm, recipe in RECIPES.items():
        assignments = " ".join(f"{k}={v}" for k, v in recipe(url).items())
        assert f"{assignments} uv run mail server -n {swarm}\n" in block, swarm


def test_the_readme_gives_the_same_commands() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    marker = "<!-- run by tests/testing/test_llm_command.py -->\n```bash\n"
    block = readme.split(marker, 1)[1].split("```", 1)[0]
    assert "uv run python -m mail.testing.llm --port 4000" in block
    url = "http://127.0.0.1:4000/v1"
    assert f"LITELLM_PROXY_API_BASE={url} uv run mail server -n example " in block
    assert f"OPENAI_API_BASE={url} OPENAI_API_KEY=stub" in readme
