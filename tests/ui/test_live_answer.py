"""The chat shows an LLM's answer as it streams: the ``token_delta`` events of a swarm whose
model streams (the stub LLM playing the example swarm, ``stream_tokens`` on) grow the
answer in the page before the final one replaces it."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect
from tests._servers import Server, clean_env, start_server
from tests.ui.conftest import FIXTURES

pytestmark = pytest.mark.timeout(120)

_LISTENING = re.compile(r"\Astub LLM listening on (http://127\.0\.0\.1:\d+/v1)")

# Every text the page put into the live answer bubble, in order (kept by the observer even
# when the bubble is gone).
OBSERVE = """() => {
  window.liveTexts = [];
  new MutationObserver((records) => {
    for (const record of records) {
      const body = record.target.closest && record.target.closest(".msg.live .body");
      if (body && record.addedNodes.length) {
        window.liveTexts.push(Array.from(record.addedNodes, (n) => n.textContent).join(""));
      }
    }
  }).observe(document.getElementById("messages"), { childList: true, subtree: true });
}"""


@pytest.fixture(scope="module")
def streaming(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of the fixtures' ``streaming-example`` swarm, its model the stub LLM."""
    command = [sys.executable, "-m", "mail.testing.llm", "--port", "0"]
    root = tmp_path_factory.mktemp("streaming")
    with Server(
        command, env=clean_env(), cwd=root, log=root / "llm.log", printed=_LISTENING, health=False
    ) as llm:
        env = clean_env() | {"LITELLM_PROXY_API_BASE": llm.url, "MAIL_LOG_LEVEL": "WARNING"}
        with start_server(
            "streaming-example", FIXTURES / "swarms.json", env, root / "data"
        ) as server:
            yield server


def test_the_answer_grows_as_the_model_streams_it(page: Page, streaming: Server) -> None:
    page.goto(f"{streaming.url}/ui")
    page.fill("#api-key", streaming.keys["user"])
    page.locator("#login-form button[type=submit]").click()
    expect(page.locator("#tabs")).to_be_visible(timeout=15_000)
    page.evaluate(OBSERVE)

    page.fill("#message", "What is 12 * (3 + 4)?")
    page.click("#send")

    answer = page.locator(".msg.assistant:not(.live)").last
    expect(answer).to_contain_text("84", timeout=60_000)
    final = answer.inner_text().strip()
    live: list[str] = page.evaluate("window.liveTexts")
    grown = [text.strip() for text in live if text.strip()]
    assert len(grown) > 1, f"the answer did not stream: {live!r}"
    assert grown[-1] == final  # the deltas add up to the answer
    assert all(final.startswith(text) for text in grown)  # each a beginning of it
    expect(page.locator(".msg.live")).to_have_count(0)  # replaced by the final answer
