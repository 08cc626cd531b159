"""`mail server -n <team>-offline` serves the offline team swarms (a real process each)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tests._servers import clean_env, start_server

SWARMS = Path(__file__).resolve().parents[2] / "swarms.json"
QUESTIONS = {
    "support-offline": "How do I reset my password?",
    "data-analysis-offline": "Summarize the inventory data.",
    "research-offline": "Tell me about tides.",
}


@pytest.mark.timeout(90)
@pytest.mark.parametrize("name", list(QUESTIONS))
def test_mail_server_runs_the_offline_team_swarm(name: str, tmp_path: Path) -> None:
    server = start_server(name, SWARMS, clean_env(), tmp_path / ".mail")
    try:
        with httpx.Client(timeout=60, trust_env=False) as http:
            answer = http.post(
                f"{server.url}/message",
                headers={"Authorization": f"Bearer {server.keys['user']}"},
                json={"body": QUESTIONS[name]},
            )
    finally:
        server.stop()
    assert answer.status_code == 200, answer.text + server.output()[-2000:]
    assert answer.json()["status"] == "completed"
    assert answer.json()["response"].startswith("Here is what the team found:")
