"""The task's budget line in the viewer (Chromium against a real server): shown from the
closing event of an opened task that has a budget, with the limit that stopped it."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Page, expect
from tests.ui.conftest import Servers
from tests.ui.test_viewer import WAIT, sign_in

pytestmark = pytest.mark.timeout(120)

TEXT = """async (budget) => {
  const { budgetText } = await import("/ui/assets/views/budget.js");
  return budgetText(budget);
}"""


def test_an_opened_task_shows_its_budget(page: Page, servers: Servers) -> None:
    server = servers.offline
    headers = {"Authorization": f"Bearer {server.keys['user']}"}
    body = {"body": "What is 6 * 7?", "budget": {"agent_turns": 50, "total_tokens": 1000}}
    answer = httpx.post(f"{server.url}/message", json=body, headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    task_id = answer.json()["task_id"]
    sign_in(page, server.url, server.keys["user"])
    line = page.locator("#task-budget")
    expect(line).to_be_hidden()

    page.goto(f"{server.url}/ui#/task/{task_id}/chat")

    expect(line).to_have_text(
        # the offline swarm reports no tokens: the agent turns come first
        re.compile(r"^Budget: agent_turns \d+/50 · total_tokens 0/1,000$"),
        timeout=WAIT,
    )


def test_budget_text_names_the_limit_that_stopped_the_task(page: Page, servers: Servers) -> None:
    page.goto(f"{servers.offline.url}/ui")
    budget = {
        "limits": {"cost_usd": 0.5, "seconds": 10, "warn_at": 0.8},
        "spent": {"cost_usd": 0.62, "seconds": 3.25},
        "remaining": {"cost_usd": 0, "seconds": 6.75},
        "stopped_by": "cost_usd",
    }

    assert page.evaluate(TEXT, budget) == (
        "Budget: cost_usd 0.62/0.5 · seconds 3.25/10 (stopped: cost_usd exceeded)"
    )
    assert page.evaluate(TEXT, None) == ""
    assert page.evaluate(TEXT, {"limits": {"warn_at": 0.8}, "spent": {}}) == ""
