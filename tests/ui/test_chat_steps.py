"""The chat tells the story of a task, on the shipped ``offline-slow`` swarm (scripted agents
whose turns take a second or two and stream their reasoning and the answer): the activity
line names each agent as it works, each answer is attributed to its agent with its steps
(messages between agents, calls with arguments and results, reasoning) collapsed above it,
and every control is reached and worked with the keyboard."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from tests._servers import Server, clean_env, start_server
from tests.ui.conftest import OFFLINE

pytestmark = pytest.mark.timeout(180)

WAIT = 30_000  # ms, for expect(): a task of the slow swarm takes several seconds
QUESTION = "What's the weather in Tokyo, and what is 2 * 3 * 4?"

# Every agent the activity line named (and what it said they did), and every text the live answer bubble showed, in
# order (kept by an observer installed before the question is sent).
OBSERVE = """() => {
  window.named = [];
  window.doing = [];
  window.liveTexts = [];
  const who = document.querySelector("#activity .act-who");
  const what = document.querySelector("#activity .act-what");
  new MutationObserver(() => {
    const name = who.textContent;
    if (name && window.named[window.named.length - 1] !== name) window.named.push(name);
    window.doing.push(`${name}: ${what.textContent}`);
  }).observe(document.getElementById("activity"), { childList: true, characterData: true, subtree: true });
  new MutationObserver((records) => {
    for (const record of records) {
      const body = record.target.closest && record.target.closest(".msg.live .body");
      if (body && record.addedNodes.length) window.liveTexts.push(body.textContent);
    }
  }).observe(document.getElementById("messages"), { childList: true, subtree: true });
}"""


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = clean_env() | {"MAIL_LOG_LEVEL": "WARNING"}
    data = tmp_path_factory.mktemp("offline-slow") / "data"
    with start_server("offline-slow", OFFLINE, env, data) as server:
        yield server


def sign_in(page: Page, server: Server) -> None:
    page.goto(f"{server.url}/ui")
    page.fill("#api-key", server.keys["user"])
    page.locator("#login-form button[type=submit]").click()
    expect(page.locator("#tabs")).to_be_visible(timeout=WAIT)


def test_the_activity_line_follows_the_working_agents_and_the_answer_streams(
    page: Page, slow: Server, screenshot_dir: Path
) -> None:
    sign_in(page, slow)
    page.evaluate(OBSERVE)
    page.fill("#message", QUESTION)
    page.click("#send")

    activity = page.locator("#activity")
    expect(activity.locator(".act-who")).to_have_text("supervisor", timeout=WAIT)
    expect(activity.locator(".act-who")).to_have_text("weather", timeout=WAIT)
    # the weather agent's turn takes time: its reasoning streams before its call is made
    thinking = page.locator('.step.reasoning.live[data-agent="weather"]')
    expect(thinking).to_have_count(1, timeout=WAIT)
    expect(page.locator(".step.call", has_text="get_weather_forecast")).to_have_count(0)
    page.locator(".answer .steps > summary").click()
    page.screenshot(path=screenshot_dir / "ui-chat-running.png")
    expect(page.locator(".step.call", has_text="get_weather_forecast")).to_have_count(
        1, timeout=WAIT
    )
    expect(thinking).to_have_count(0)  # replaced by the stored reasoning step

    answer = page.locator(".answer").last
    expect(answer.locator(".msg.assistant:not(.live)")).to_have_count(1, timeout=WAIT)
    expect(activity).to_be_hidden()
    final = answer.locator(".msg.assistant .body").inner_text().strip()
    assert "Forecast for Tokyo" in final and "2 * 3 * 4 = 24" in final

    named: list[str] = page.evaluate("window.named")
    assert named[0] == "supervisor" and named[-1] == "supervisor", named
    assert {"weather", "math"} <= set(named[1:-1]), named  # the helpers worked in between
    doing: list[str] = page.evaluate("window.doing")
    assert "supervisor: waiting for weather" in doing, doing  # math answered first
    live = [text.strip() for text in page.evaluate("window.liveTexts") if text.strip()]
    assert len(live) > 1, f"the answer did not stream: {live!r}"
    assert all(final.startswith(text) for text in live)  # each a beginning of the answer


def test_an_answer_names_its_agent_and_its_steps_expand(
    page: Page, slow: Server, screenshot_dir: Path
) -> None:
    sign_in(page, slow)
    page.fill("#message", QUESTION)
    page.click("#send")
    answer = page.locator(".answer").last
    expect(answer).to_have_class("answer working")
    expect(answer.locator(".msg.assistant:not(.live)")).to_have_count(1, timeout=WAIT)
    expect(answer.locator(".answer-agent")).to_have_text("supervisor")
    expect(answer.locator(".answer-meta")).to_contain_text("answered")

    steps = answer.locator("details.steps")
    expect(steps).not_to_have_attribute("open", "")  # collapsed until asked
    expect(steps.locator(":scope > summary")).to_contain_text("supervisor, math, weather")
    steps.locator(":scope > summary").focus()
    page.keyboard.press("Enter")  # a summary opens with the keyboard
    expect(steps).to_have_attribute("open", "")

    # the messages between agents, with their bodies
    request = steps.locator(".step.message", has_text="→ weather").first
    expect(request.locator(".step-agent")).to_have_text("supervisor")
    expect(request).to_contain_text("Weather forecast")
    request.locator("summary").click()
    expect(request.locator(".step-text")).to_have_text(
        "What is the weather forecast for Tokyo today?"
    )
    reply = steps.locator(".step.message", has_text="→ supervisor")
    expect(reply).to_have_count(2)
    # the calls, with their arguments and results
    call = steps.locator(".step.call", has_text="calculate_expression")
    expect(call.locator(".step-agent")).to_have_text("math")
    expect(call.locator(".step-status")).to_have_text("done")
    call.locator("summary").click()
    expect(call.locator("pre.args")).to_contain_text('"expression": "2 * 3 * 4"')
    expect(call.locator("pre.result")).to_contain_text('"result": "24"')
    # the reasoning each turn gave, and the supervisor's wait
    expect(steps.locator(".step.reasoning", has_text="This needs weather")).to_have_count(1)
    expect(steps.locator(".step.wait .step-agent")).to_have_text("supervisor")
    page.screenshot(path=screenshot_dir / "ui-chat-steps.png")

    # Escape closes what is open, from the inside out
    call.locator("summary").focus()
    page.keyboard.press("Escape")
    expect(call.locator("details")).not_to_have_attribute("open", "")
    steps.locator(".step-list").locator("summary").first.focus()
    page.keyboard.press("Escape")
    expect(steps).not_to_have_attribute("open", "")

    # the same story for the task opened from its link
    count = steps.locator(".step").count()
    task_id = page.locator("#task-label").inner_text().removeprefix("task ")
    other = page.context.new_page()
    other.goto(f"{slow.url}/ui/#/task/{task_id}")
    replayed = other.locator(".answer").last
    expect(replayed.locator(".msg.assistant")).to_have_text(
        answer.locator(".msg.assistant").inner_text(), timeout=WAIT
    )
    expect(replayed.locator(".answer-agent")).to_have_text("supervisor")
    expect(replayed.locator(".step")).to_have_count(count)
    other.close()


def test_tab_reaches_compose_send_and_stop(page: Page, slow: Server) -> None:
    sign_in(page, slow)
    focused = "document.activeElement && document.activeElement.id"
    for _ in range(20):  # from the top of the page, through the toolbar, to the compose box
        page.keyboard.press("Tab")
        if page.evaluate(focused) == "message":
            break
    assert page.evaluate(focused) == "message"
    assert (
        page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
    )  # the focus is visible
    page.keyboard.type(QUESTION)
    page.keyboard.press("Tab")
    assert page.evaluate(focused) == "send"
    page.keyboard.press("Enter")  # Enter on a button presses it

    stop = page.locator("#stop")
    expect(stop).to_be_visible(timeout=WAIT)
    # stopped in the weather agent's turn, so before the supervisor's answer
    expect(page.locator('.step.reasoning.live[data-agent="weather"]')).to_have_count(
        1, timeout=WAIT
    )
    page.focus("#message")
    page.keyboard.press("Tab")  # Send is disabled while the task runs: Stop is next
    assert page.evaluate(focused) == "stop"
    page.keyboard.press("Space")
    answer = page.locator(".answer").last
    expect(answer.locator(".msg.error")).to_contain_text("Task cancelled", timeout=WAIT)
    expect(answer.locator(".msg.assistant")).to_have_count(0)  # stopped before the answer
    expect(answer.locator(".answer-meta")).to_contain_text("Cancelled")
    expect(stop).to_be_hidden()


def test_an_opened_task_shows_each_answer_with_its_own_steps(page: Page, slow: Server) -> None:
    sign_in(page, slow)
    for n, question in enumerate(["What is 1 + 1?", "And what is 2 + 5?"], start=1):
        page.fill("#message", question)
        page.click("#send")
        expect(page.locator(".answer .msg.assistant:not(.live)")).to_have_count(n, timeout=WAIT)
    task_id = page.locator("#task-label").inner_text().removeprefix("task ")

    other = page.context.new_page()
    other.goto(f"{slow.url}/ui/#/task/{task_id}")
    expect(other.locator(".msg.user")).to_have_text(["What is 1 + 1?", "And what is 2 + 5?"])
    answers = other.locator(".answer")
    expect(answers.locator(".msg.assistant .body")).to_have_text(
        ["1 + 1 = 2", "2 + 5 = 7"], timeout=WAIT
    )
    expect(answers.locator(".answer-agent")).to_have_text(["supervisor", "supervisor"])
    for answer, expression in zip(answers.all(), ["1 + 1", "2 + 5"], strict=True):
        call = answer.locator(".step.call")
        expect(call).to_have_count(1)  # each answer's own calculation, not the other's
        expect(call).to_contain_text(f'calculate_expression(expression="{expression}")')
    other.close()
