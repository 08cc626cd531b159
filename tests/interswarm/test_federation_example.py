"""examples/federation/swarms.json, as README.md's "Federating two swarms" uses it by hand.

Regression (issue 21): the README's hand-made federation hung, because what it described
missed the agent-level ``enable_interswarm`` and the peer's reverse ``comm_targets`` entry;
the shipped file has both and two real `mail server` processes answer across it.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from tests._servers import clean_env, start_server

from mail.api import MAILSwarmTemplate
from mail.cli._doctor import check_interswarm_targets
from mail.config import load_config

REPO = Path(__file__).resolve().parents[2]
FEDERATION = REPO / "examples" / "federation" / "swarms.json"


@pytest.mark.parametrize("name", ["alpha", "beta"])
def test_the_federation_example_loads_and_doctor_has_no_interswarm_warning(name: str) -> None:
    MAILSwarmTemplate.from_swarm_json_file(name, FEDERATION).validate()
    overrides = {"server": {"swarm": {"name": name, "source": str(FEDERATION)}}}
    config = load_config(None, env={}, overrides=overrides, search=False)
    [check] = check_interswarm_targets(config)
    assert check.status == "ok", check


def register(
    http: httpx.Client, url: str, admin_key: str, peer: str, peer_url: str, token: str
) -> None:
    answer = http.post(
        f"{url}/swarms",
        headers={"Authorization": f"Bearer {admin_key}"},
        json={"name": peer, "base_url": peer_url, "auth_token": token},
    )
    assert answer.status_code == 200, answer.text


@pytest.mark.timeout(120)
def test_two_servers_federate_with_the_example_by_the_readme_steps(tmp_path: Path) -> None:
    alpha = start_server("alpha", FEDERATION, clean_env(), tmp_path / ".mail-alpha")
    try:
        beta = start_server("beta", FEDERATION, clean_env(), tmp_path / ".mail-beta")
        try:
            with httpx.Client(timeout=60, trust_env=False) as http:
                register(http, alpha.url, alpha.keys["admin"], "beta", beta.url, beta.keys["agent"])
                register(
                    http, beta.url, beta.keys["admin"], "alpha", alpha.url, alpha.keys["agent"]
                )
                answer = http.post(
                    f"{alpha.url}/message",
                    headers={"Authorization": f"Bearer {alpha.keys['user']}"},
                    json={"body": "Weather in Lisbon tomorrow?"},
                )
        finally:
            beta.stop()
    finally:
        alpha.stop()
    assert answer.status_code == 200, answer.text + alpha.output()[-2000:]
    assert answer.json()["status"] == "completed"
    # beta's weather agent ran the action and answered supervisor@alpha
    assert re.fullmatch(
        r"Forecast for Lisbon on \d{4}-\d\d-\d\d: .+°C\.", answer.json()["response"]
    )
