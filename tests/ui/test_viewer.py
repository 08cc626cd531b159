"""The swarm viewer at /ui, driven in Chromium against real servers: sign-in, chat, graph,
timeline, breakpoints, cancel, history, and the page's Content-Security-Policy."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect
from tests._servers import clean_env, start_server
from tests.ui.conftest import OFFLINE, Servers

pytestmark = pytest.mark.timeout(120)

WAIT = 15_000  # ms, for expect()


def sign_in(page: Page, url: str, key: str) -> None:
    page.goto(f"{url}/ui")
    page.fill("#api-key", key)
    page.locator("#login-form button[type=submit]").click()
    expect(page.locator("#tabs")).to_be_visible(timeout=WAIT)


def ask(page: Page, text: str) -> None:
    page.fill("#message", text)
    page.click("#send")


def test_a_wrong_key_shows_a_clear_error(page: Page, servers: Servers) -> None:
    page.goto(f"{servers.offline.url}/ui")
    page.fill("#api-key", "not-a-key")
    page.locator("#login-form button[type=submit]").click()
    expect(page.locator("#login-error")).to_have_text(
        "This key was refused (401): invalid API key", timeout=WAIT
    )
    expect(page.locator("#tabs")).to_be_hidden()
    # a server not in debug mode offers no way in without a key
    expect(page.locator("#keyless")).to_be_hidden()


def test_no_request_fails_when_the_page_loads(page: Page, servers: Servers) -> None:
    # regression: every load asked GET /ui/agents without a key (the probe for key-free
    # access) and got a 401
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("requestfailed", lambda r: failed.append(f"failed {r.url}"))
    page.goto(f"{servers.offline.url}/ui")
    expect(page.locator("#login")).to_be_visible(timeout=WAIT)
    expect(page.locator("#keyless")).to_be_hidden()
    page.fill("#api-key", servers.offline.keys["user"])
    page.locator("#login-form button[type=submit]").click()
    expect(page.locator("#entrypoint")).to_have_value("supervisor", timeout=WAIT)
    page.reload()
    expect(page.locator("#entrypoint")).to_have_value("supervisor", timeout=WAIT)
    page.wait_for_load_state("networkidle")
    assert failed == []


def test_log_in_and_see_the_streamed_answer_rendered(
    page: Page, servers: Servers, screenshot_dir: Path
) -> None:
    sign_in(page, servers.offline.url, servers.offline.keys["user"])
    expect(page.locator("#identity")).to_have_text("user (user)")
    expect(page.locator("#swarm-name")).to_have_text("offline")
    expect(page.locator("#entrypoint")).to_have_value("supervisor")
    ask(page, "What is 12 * (3 + 4)?")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_text("12 * (3 + 4) = 84", timeout=WAIT)
    # a follow-up continues the same task
    task = page.locator("#task-label").inner_text()
    assert task.startswith("task ")
    ask(page, "What is the weather in Paris tomorrow?")
    expect(page.locator(".msg.assistant")).to_have_count(2, timeout=WAIT)
    expect(page.locator(".msg.assistant").last).to_contain_text("Paris")
    expect(page.locator("#task-label")).to_have_text(task)
    expect(page.locator(".msg.error")).to_have_count(0)
    page.screenshot(path=screenshot_dir / "ui-chat.png")


def test_an_answer_with_asterisks_keeps_them(page: Page, servers: Servers) -> None:
    # regression: the hand-written renderer made "2 <em> 3 </em> 4 = 24" of it
    sign_in(page, servers.offline.url, servers.offline.keys["user"])
    ask(page, "What is 2 * 3 * 4?")
    answer = page.locator(".msg.assistant").last
    expect(answer).to_have_text("2 * 3 * 4 = 24", timeout=WAIT)
    expect(answer.locator("em")).to_have_count(0)


def compose_bottom(page: Page) -> float:
    """Where the chat's foot (the activity line and the compose box) ends, once shown."""
    foot = page.locator(".chat-foot")
    expect(foot).to_be_visible(timeout=WAIT)
    box = foot.bounding_box()
    assert box is not None
    return float(box["y"] + box["height"])


def test_compose_sits_at_the_bottom_keys_are_told_and_answers_copy(
    page: Page, servers: Servers
) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_in(page, servers.offline.url, servers.offline.keys["user"])
    message = page.locator("#message")
    placeholder = message.get_attribute("placeholder") or ""
    assert "Ctrl+Enter" in placeholder and "Enter starts a new line" in placeholder
    assert compose_bottom(page) > 800 - 24  # at the bottom of the window, not mid-page

    # Enter starts a new line, Ctrl+Enter sends
    message.click()
    page.keyboard.type("What is 2 * 3 * 4?")
    page.keyboard.press("Enter")
    expect(message).to_have_value("What is 2 * 3 * 4?\n")
    expect(page.locator(".msg.user")).to_have_count(0)
    page.keyboard.press("Control+Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer.locator(".body")).to_have_text("2 * 3 * 4 = 24", timeout=WAIT)
    expect(message).to_have_value("")

    answer.locator("button.copy").click()
    expect(answer.locator("button.copy")).to_have_attribute("data-state", "copied")
    assert page.evaluate("navigator.clipboard.readText()") == "2 * 3 * 4 = 24"

    # a long conversation scrolls the page; the compose box stays in sight at the bottom
    for n in range(6):
        ask(page, f"What is {n} + {n}?")
        expect(page.locator(".msg.assistant")).to_have_count(n + 2, timeout=WAIT)
    assert page.evaluate("document.documentElement.scrollHeight") > 800
    assert 800 - 24 < compose_bottom(page) <= 800 + 1
    expect(page.locator(".msg.assistant").last).to_be_in_viewport()


def test_timeline_expands_a_tool_call_and_filters(
    page: Page, servers: Servers, screenshot_dir: Path
) -> None:
    sign_in(page, servers.offline.url, servers.offline.keys["user"])
    ask(page, "What is the weather in Lisbon tomorrow?")
    expect(page.locator(".msg.assistant")).to_contain_text("Lisbon", timeout=WAIT)
    page.click(".tab[data-view=timeline]")
    page.click("#timeline-mode-list")  # the waterfall is shown first
    rows = page.locator("#timeline > li")
    expect(rows.first).to_have_attribute("data-kind", "new_message")
    expect(rows.last).to_have_attribute("data-kind", "task_complete")
    call = page.locator('#timeline > li[data-kind="tool_call"][data-agent="weather"]').first
    call.locator("summary").click()
    json_text = call.locator("pre.json")
    expect(json_text).to_be_visible()
    expect(json_text).to_contain_text('"tool_name": "get_weather_forecast"')
    expect(json_text).to_contain_text('"location": "Lisbon"')
    page.screenshot(path=screenshot_dir / "ui-timeline.png")
    # filters: only the weather agent's tool calls stay visible
    page.select_option("#filter-agent", "weather")
    page.select_option("#filter-kind", "tool_call")
    visible = page.locator("#timeline > li:visible")
    expect(visible).not_to_have_count(0)
    for agent in visible.evaluate_all(
        "rows => rows.map(r => r.dataset.agent + '/' + r.dataset.kind)"
    ):
        assert agent == "weather/tool_call"
    assert rows.count() > visible.count()


def test_timeline_rows_tell_their_number_time_and_duration(page: Page, servers: Servers) -> None:
    # regression: the time column was cut to "1:35:0…", and the closing task_complete row
    # showed "·" for its number and, replayed, the time of the request
    sign_in(page, servers.offline.url, servers.offline.keys["user"])
    ask(page, "What is 5 * 8?")
    expect(page.locator(".msg.assistant").last).to_have_text("5 * 8 = 40", timeout=WAIT)
    task_id = page.locator("#task-label").inner_text().removeprefix("task ")
    page.click(".tab[data-view=timeline]")
    page.click("#timeline-mode-list")  # the waterfall is shown first
    rows = page.locator("#timeline > li")
    expect(rows.last).to_have_attribute("data-kind", "task_complete")
    count = rows.count()
    assert rows.locator(".seq").all_inner_texts() == [str(n) for n in range(1, count + 1)]
    for text in rows.locator(".time").all_inner_texts():
        assert re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", text), text
    took = rows.locator(".took").all_inner_texts()
    for text in took[:-1]:
        assert re.fullmatch(r"\d+ ms|\d+\.\d+ s", text), text
    assert took[-1] == ""  # nothing after the end
    end_time = rows.last.locator(".time").get_attribute("title")
    assert end_time is not None
    assert re.search(r"\(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+\+00:00\)$", end_time), end_time

    # replayed later, the end keeps its stored number and time
    page.reload()
    expect(page.locator("#tabs")).to_be_visible(timeout=WAIT)
    page.click(".tab[data-view=history]")
    page.locator(f'.task-open[data-task="{task_id}"]').click()
    expect(rows.last).to_have_attribute("data-kind", "task_complete", timeout=WAIT)
    expect(rows).to_have_count(count)
    expect(rows.last.locator(".seq")).to_have_text(str(count))
    expect(rows.last.locator(".time")).to_have_attribute("title", end_time)


def test_graph_highlights_the_working_agent_and_stop_cancels(
    page: Page, servers: Servers, screenshot_dir: Path
) -> None:
    sign_in(page, servers.waiter.url, servers.waiter.keys["user"])
    ask(page, "Wait for me")
    stop = page.locator("#stop")
    expect(stop).to_be_visible(timeout=WAIT)
    # the activity line names the working agent, what it runs, and the time so far
    activity = page.locator("#activity")
    expect(activity.locator(".act-who")).to_have_text("supervisor", timeout=WAIT)
    expect(activity.locator(".act-what")).to_have_text("running the action wait_a_while")
    expect(activity.locator(".act-elapsed")).to_have_text(re.compile(r"^[1-9]\d* s$"), timeout=WAIT)
    page.screenshot(path=screenshot_dir / "ui-activity.png")
    page.click(".tab[data-view=graph]")
    node = page.locator('#graph-svg g.node[data-agent="supervisor"]')
    expect(node).to_have_class("node entry completes active", timeout=WAIT)
    expect(page.locator("#graph-status")).to_have_text("Working: supervisor")
    page.screenshot(path=screenshot_dir / "ui-graph-working.png")
    page.click(".tab[data-view=chat]")
    expect(page.locator("#task-label")).to_have_text(re.compile(r"^task \S+$"))
    stop.click()
    expect(page.locator(".msg.error").last).to_have_text(
        "Task cancelled: The task was cancelled by its owner.", timeout=WAIT
    )
    expect(stop).to_be_hidden()
    expect(activity).to_be_hidden()
    page.click(".tab[data-view=graph]")
    expect(node).to_have_class("node entry completes")


def test_graph_marks_entrypoint_and_completing_agents(
    page: Page, servers: Servers, screenshot_dir: Path
) -> None:
    sign_in(page, servers.offline.url, servers.offline.keys["user"])
    ask(page, "What is the weather in Oslo tomorrow?")
    expect(page.locator(".msg.assistant")).to_contain_text("Oslo", timeout=WAIT)
    page.click(".tab[data-view=graph]")
    nodes = page.locator("#graph-svg g.node")
    expect(nodes).to_have_count(3)
    expect(page.locator('g.node[data-agent="supervisor"]')).to_have_class("node entry completes")
    expect(page.locator('g.node[data-agent="weather"]')).to_have_class("node")
    edges = page.locator("#graph-svg line.edge")
    expect(edges).to_have_count(4)  # supervisor <-> weather, supervisor <-> math
    expect(page.locator("#graph-svg .packet")).to_have_count(0)  # the last hops have landed
    expect(page.locator("#graph-svg line.hot")).to_have_count(0)
    page.screenshot(path=screenshot_dir / "ui-graph.png")


def test_resume_a_breakpoint_from_the_form(page: Page, servers: Servers) -> None:
    sign_in(page, servers.breakpoint.url, servers.breakpoint.keys["user"])
    ask(page, "What is the weather in Paris tomorrow?")
    form = page.locator("#breakpoint-form")
    expect(form).to_be_visible(timeout=WAIT)
    expect(form.locator("legend")).to_have_text("get_weather_forecast")
    expect(form.locator("pre.args")).to_contain_text('"location": "Paris"')
    # the pause is told where it happened: among the steps of the answer, and above it
    paused = page.locator(".answer").last
    expect(paused.locator(".answer-meta")).to_contain_text("Paused on a breakpoint")
    expect(paused.locator(".step.breakpoint")).to_contain_text(
        "weather breakpoint: waits for the result of get_weather_forecast"
    )
    page.fill("#bp-0", "Sunny and 24 C")
    form.locator("button[type=submit]").click()
    expect(page.locator(".msg.assistant").last).to_contain_text("Sunny and 24 C", timeout=WAIT)
    expect(form).to_be_hidden()
    expect(page.locator(".msg.error")).to_have_count(0)


def test_a_breakpoint_resume_the_server_refuses_is_shown_as_an_error(
    page: Page, servers: Servers
) -> None:
    sign_in(page, servers.breakpoint.url, servers.breakpoint.keys["user"])
    ask(page, "What is the weather in Rome today?")
    expect(page.locator("#breakpoint-form")).to_be_visible(timeout=WAIT)
    # a follow-up while the task waits on its breakpoint is a 409 from the server
    ask(page, "Never mind")
    expect(page.locator(".msg.error").last).to_contain_text("409", timeout=WAIT)


def test_reload_finds_the_task_in_the_history_and_replays_it(page: Page, servers: Servers) -> None:
    sign_in(page, servers.offline.url, servers.offline.keys["user"])
    ask(page, "What is 6 * 7?")
    expect(page.locator(".msg.assistant").last).to_have_text("6 * 7 = 42", timeout=WAIT)
    task_id = page.locator("#task-label").inner_text().removeprefix("task ")
    page.reload()
    expect(page.locator("#tabs")).to_be_visible(timeout=WAIT)  # the key was kept
    page.click(".tab[data-view=history]")
    entry = page.locator(f'.task-open[data-task="{task_id}"]')
    expect(entry).to_contain_text("What is 6 * 7?", timeout=WAIT)
    expect(entry.locator(".state")).to_have_text("completed")
    entry.click()
    expect(page.locator("#timeline-task")).to_have_text(f"task {task_id}")
    expect(page.locator("#timeline > li").last).to_have_attribute("data-kind", "task_complete")
    page.click(".tab[data-view=chat]")
    expect(page.locator(".msg.user").first).to_have_text("What is 6 * 7?")
    expect(page.locator(".msg.assistant").last).to_have_text("6 * 7 = 42")


def test_a_task_link_opens_the_task(page: Page, servers: Servers) -> None:
    sign_in(page, servers.offline.url, servers.offline.keys["user"])
    ask(page, "What is 9 * 9?")
    expect(page.locator(".msg.assistant").last).to_have_text("9 * 9 = 81", timeout=WAIT)
    task_id = page.locator("#task-label").inner_text().removeprefix("task ")
    assert page.evaluate("location.hash") == f"#/task/{task_id}/chat"
    page.click(".tab[data-view=timeline]")
    assert page.evaluate("location.hash") == f"#/task/{task_id}/timeline"

    # the link, opened in another tab of the same browser (the key is kept)
    other = page.context.new_page()
    other.goto(f"{servers.offline.url}/ui/#/task/{task_id}")
    expect(other.locator("#task-label")).to_have_text(f"task {task_id}", timeout=WAIT)
    expect(other.locator(".msg.user").first).to_have_text("What is 9 * 9?")
    expect(other.locator(".msg.assistant").last).to_have_text("9 * 9 = 81")
    other.goto(f"{servers.offline.url}/ui/#/task/{task_id}/timeline")
    expect(other.locator("#timeline-task")).to_have_text(f"task {task_id}", timeout=WAIT)
    expect(other.locator("#timeline > li").last).to_have_attribute("data-kind", "task_complete")
    # a new task leaves the link
    other.click(".tab[data-view=chat]")
    other.click("#new-task")
    assert other.evaluate("location.hash") == "#chat"
    # an unknown task says so
    other.goto(f"{servers.offline.url}/ui/#/task/no-such-task")
    expect(other.locator(".msg.error").last).to_contain_text(
        "task 'no-such-task' not found", timeout=WAIT
    )
    other.close()


def test_federation_is_shown_to_admins_only(page: Page, servers: Servers) -> None:
    sign_in(page, servers.offline.url, servers.offline.keys["admin"])
    page.click(".tab[data-view=federation]")
    expect(page.locator("#swarms tr").first).to_contain_text("offline", timeout=WAIT)
    page.click("#logout")
    sign_in(page, servers.offline.url, servers.offline.keys["user"])
    expect(page.locator('.tab[data-view="federation"]')).to_be_hidden()


def test_the_page_sets_a_csp_and_requests_nothing_from_another_origin(
    page: Page, servers: Servers
) -> None:
    url = servers.offline.url
    headers = httpx.get(f"{url}/ui", trust_env=False).headers
    policy = headers["content-security-policy"]
    assert "default-src 'self'" in policy
    assert "connect-src 'self'" in policy
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert httpx.get(f"{url}/ui/", trust_env=False).status_code == 200
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    sign_in(page, url, servers.offline.keys["user"])
    ask(page, "What is 2 + 2?")
    expect(page.locator(".msg.assistant").last).to_have_text("2 + 2 = 4", timeout=WAIT)
    page.click(".tab[data-view=history]")
    expect(page.locator(".task-open").first).to_be_visible()
    assert any(u.startswith(f"{url}/ui/assets/") for u in requested)
    assert any(u == f"{url}/message" for u in requested)
    outside = [u for u in requested if not u.startswith(f"{url}/") and not u.startswith("data:")]
    assert outside == []


def test_a_narrow_window_keeps_the_chat_usable(page: Page, servers: Servers) -> None:
    page.set_viewport_size({"width": 400, "height": 800})
    sign_in(page, servers.offline.url, servers.offline.keys["user"])
    ask(page, "What is 1 + 1?")
    expect(page.locator(".msg.assistant").last).to_have_text("1 + 1 = 2", timeout=WAIT)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 400  # nothing overflows sideways
    page.click("#theme-toggle")
    theme = page.evaluate("document.documentElement.dataset.theme")
    assert theme in ("dark", "light")
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.click("#theme-toggle")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != background


def test_debug_mode_offers_the_keyless_identity(page: Page, tmp_path: Path) -> None:
    data = tmp_path / "data"
    toml = tmp_path / "mail.toml"
    toml.write_text("[server]\ndebug = true\n", encoding="utf-8")
    env = clean_env() | {
        "MAIL_CONFIG_PATH": str(toml),
        "SWARM_REGISTRY_FILE": str(data / "registry.json"),
        "MAIL_LOG_LEVEL": "WARNING",
    }
    server = start_server("offline", OFFLINE, env, data)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    try:
        page.goto(f"{server.url}/ui")
        page.click("#keyless-button")
        expect(page.locator("#identity")).to_have_text("ui-dev-user (user)", timeout=WAIT)
        ask(page, "What is 3 + 4?")
        expect(page.locator(".msg.assistant").last).to_have_text("3 + 4 = 7", timeout=WAIT)
        expect(page.locator("#stop")).to_be_hidden()  # cancel needs a key
        page.click(".tab[data-view=history]")
        expect(page.locator(".task-open").first).to_contain_text("What is 3 + 4?")
        page.locator(".task-open").first.click()
        expect(page.locator("#timeline > li").last).to_have_attribute("data-kind", "task_complete")
        expect(page.locator("#conversation, #conversation-none")).to_have_count(2)
        expect(page.locator("#conversation:visible, #conversation-none:visible")).to_have_count(0)
    finally:
        server.stop()
    assert [u for u in requested if "/map" in u] == []  # /map needs a key: never asked
    assert "MAIL swarm viewer: " + server.url + "/ui" in server.output()


def test_opening_a_running_task_follows_it_live(page: Page, servers: Servers) -> None:
    server = servers.waiter
    sign_in(page, server.url, server.keys["user"])
    ask(page, "Wait in the background")
    expect(page.locator("#stop")).to_be_visible(timeout=WAIT)
    expect(page.locator("#task-label")).to_have_text(re.compile(r"^task \S+$"))
    task_id = page.locator("#task-label").inner_text().removeprefix("task ")
    # a second tab of the same browser (same stored key) opens the task from the history
    other = page.context.new_page()
    other.goto(f"{server.url}/ui#history")
    entry = other.locator(f'.task-open[data-task="{task_id}"]')
    expect(entry.locator(".state")).to_have_text("running", timeout=WAIT)
    entry.click()
    rows = other.locator("#timeline > li")
    expect(rows.first).to_have_attribute("data-kind", "new_message", timeout=WAIT)
    expect(other.locator('#timeline > li[data-kind="action_call"]')).to_have_count(1)
    expect(rows.last).not_to_have_attribute("data-kind", "task_error")
    cancelled = httpx.post(
        f"{server.url}/tasks/{task_id}/cancel",
        headers={"Authorization": f"Bearer {server.keys['user']}"},
        trust_env=False,
    )
    assert cancelled.status_code == 200
    # the followed stream ends with the cancellation, in both tabs
    expect(rows.last).to_have_attribute("data-kind", "task_error", timeout=WAIT)
    expect(rows.last).to_contain_text("[cancelled]")
    expect(page.locator(".msg.error").last).to_contain_text("Task cancelled", timeout=WAIT)
