"""The task view's MAP Mail conversation, in Chromium against real servers: a task bound to a
conversation (created with POST /map, run on the offline swarm) shows its turns, threads
and participants and follows new ones live; a task without one says so discreetly; a
conversation created while the task runs shows once its turn ends; a server with MAP Mail
off shows nothing and asks nothing but map/connect."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, Request, Response, expect
from tests._servers import Server, clean_env, start_server
from tests.ui.conftest import OFFLINE, Servers
from tests.ui.test_viewer import WAIT, ask, sign_in

pytestmark = pytest.mark.timeout(120)


def rpc(server: Server, method: str, **params: Any) -> Any:
    """One POST /map request as the server's user; its result (a JSON-RPC error fails)."""
    answer = httpx.post(
        f"{server.url}/map",
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        headers={"Authorization": f"Bearer {server.keys['user']}"},
        trust_env=False,
        timeout=30,
    ).json()
    assert "result" in answer, answer
    return answer["result"]


def run_bound_task(server: Server, body: str, **create: Any) -> tuple[str, dict[str, Any]]:
    """A new conversation (``mail/create`` with ``create``) bound to a new task, then the task
    run on the offline swarm with ``body``: the task id and ``mail/create``'s result."""
    task_id = f"t-conv-{uuid.uuid4().hex[:8]}"
    created = rpc(server, "mail/create", taskId=task_id, **create)
    answered = httpx.post(
        f"{server.url}/message",
        json={"body": body, "task_id": task_id},
        headers={"Authorization": f"Bearer {server.keys['user']}"},
        trust_env=False,
        timeout=30,
    )
    assert answered.status_code == 200, answered.text
    return task_id, created


def is_map(response: Response, method: str) -> bool:
    request = response.request
    return request.url.endswith("/map") and request.post_data_json.get("method") == method


def open_from_history(page: Page, task_id: str) -> None:
    page.click(".tab[data-view=history]")
    page.locator(f'.task-open[data-task="{task_id}"]').click()
    expect(page.locator("#timeline-task")).to_have_text(f"task {task_id}", timeout=WAIT)


def test_a_bound_task_shows_its_turns_threads_and_live_updates(
    page: Page, servers: Servers, screenshot_dir: Path
) -> None:
    server = servers.offline
    task_id = f"t-conv-{uuid.uuid4().hex[:8]}"
    created = rpc(
        server,
        "mail/create",
        type="agent-task",
        subject="Weather desk",
        taskId=task_id,
        initialTurn={"contentType": "text", "content": {"text": "Please watch the <b>desk</b>."}},
    )
    cid, root = created["conversation"]["id"], created["initialTurn"]["id"]
    thread = rpc(
        server, "mail/thread/create", conversationId=cid, rootTurnId=root, subject="Follow-up"
    )["thread"]
    rpc(
        server,
        "mail/turn",
        conversationId=cid,
        threadId=thread["id"],
        contentType="text",
        content={"text": "Check Lisbon too."},
    )
    answered = httpx.post(
        f"{server.url}/message",
        json={"body": "What is the weather in Paris tomorrow?", "task_id": task_id},
        headers={"Authorization": f"Bearer {server.keys['user']}"},
        trust_env=False,
        timeout=30,
    )
    assert answered.status_code == 200, answered.text

    sign_in(page, server.url, server.keys["user"])
    open_from_history(page, task_id)
    section = page.locator("#conversation")
    expect(section).to_be_visible(timeout=WAIT)
    expect(page.locator("#conversation-none")).to_be_hidden()
    expect(page.locator("#conversation-subject")).to_have_text("Weather desk")
    expect(page.locator("#conversation-status")).to_have_text("active")
    turns = page.locator("#conversation-turns > li")
    # interception writes in order: once the closing message's turn is there, all are
    expect(turns.last).to_contain_text("::task_complete::", timeout=WAIT)
    expect(turns.last).to_have_attribute("data-author", "agent:supervisor")
    shown = turns.evaluate_all("rows => rows.map(r => r.dataset.id)")
    assert shown == [t["id"] for t in rpc(server, "mail/replay", conversationId=cid)["turns"]]
    # the HTML in a turn is text, the user's message is a text turn, every author joined
    expect(turns.first.locator(".text")).to_have_text("Please watch the <b>desk</b>.")
    asked = page.locator('#conversation-turns > li[data-author="user:user"][data-type="text"]')
    expect(asked.nth(2)).to_contain_text("What is the weather in Paris tomorrow?")
    got = rpc(server, "mail/get", conversationId=cid, include={"participants": True})
    joined = [p["id"] for p in got["participants"]]
    assert {"user:user", "agent:supervisor", "agent:weather"} <= set(joined)
    people = page.locator("#conversation-participants > li")
    expect(people).to_have_count(len(joined))
    assert people.evaluate_all("items => items.map(i => i.dataset.id)") == joined
    expect(page.locator('#conversation-participants > li[data-id="user:user"]')).to_contain_text(
        "initiator"
    )
    # a tool call is one line until it is opened to its JSON
    call = page.locator(
        '#conversation-turns > li[data-type="x-tool-call"][data-author="agent:weather"]'
    ).first
    expect(call.locator("summary")).to_contain_text("get_weather_forecast(")
    json_text = call.locator("pre.json")
    expect(json_text).to_be_hidden()
    call.locator("summary").click()
    expect(json_text).to_contain_text('"location": "Paris"')
    json_text.scroll_into_view_if_needed()
    page.screenshot(path=screenshot_dir / "ui-conversation.png")

    # the thread filter: the thread's turn only, then the main line only
    page.select_option("#conversation-thread", thread["id"])
    visible = page.locator("#conversation-turns > li:visible")
    expect(visible).to_have_count(1)
    expect(visible.first).to_contain_text("Check Lisbon too.")
    expect(visible.first.locator(".thread-tag")).to_have_text("⤷ Follow-up")
    expect(page.locator("#conversation-count")).to_have_text(f"1 of {len(shown)} turns")
    page.select_option("#conversation-thread", "-")
    expect(visible).to_have_count(len(shown) - 1)
    page.select_option("#conversation-thread", "")
    expect(visible).to_have_count(len(shown))

    # live: a new turn, a new participant and the closing arrive without a reload
    rpc(
        server,
        "mail/turn",
        conversationId=cid,
        contentType="text",
        content={"text": "Live note from the desk."},
    )
    expect(turns).to_have_count(len(shown) + 1, timeout=WAIT)
    expect(turns.last).to_contain_text("Live note from the desk.")
    rpc(server, "mail/invite", conversationId=cid, participant={"id": "user:observer-1"})
    expect(
        page.locator('#conversation-participants > li[data-id="user:observer-1"]')
    ).to_be_visible(timeout=WAIT)
    rpc(server, "mail/close", conversationId=cid, reason="done")
    expect(page.locator("#conversation-status")).to_have_text("completed", timeout=WAIT)

    # narrow and dark: nothing overflows sideways
    page.set_viewport_size({"width": 400, "height": 800})
    page.click("#theme-toggle")
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    page.click("#theme-toggle")
    assert page.evaluate("document.documentElement.scrollWidth") <= 400


def test_a_task_without_a_conversation_shows_none(page: Page, servers: Servers) -> None:
    sign_in(page, servers.offline.url, servers.offline.keys["user"])
    ask(page, "What is 5 + 5?")
    expect(page.locator(".msg.assistant").last).to_have_text("5 + 5 = 10", timeout=WAIT)
    page.click(".tab[data-view=timeline]")
    expect(page.locator("#timeline > li").last).to_have_attribute("data-kind", "task_complete")
    expect(page.locator("#conversation-none")).to_have_text(
        "No conversation for this task.", timeout=WAIT
    )
    expect(page.locator("#conversation")).to_be_hidden()
    expect(page.locator("#conversation-turns > li")).to_have_count(0)


def test_a_conversation_created_while_the_task_runs_shows_when_its_turn_ends(
    page: Page, servers: Servers
) -> None:
    server = servers.waiter
    sign_in(page, server.url, server.keys["user"])
    ask(page, "Wait for the desk")
    expect(page.locator("#stop")).to_be_visible(timeout=WAIT)
    expect(page.locator("#task-label")).to_have_text(re.compile(r"^task \S+$"))
    task_id = page.locator("#task-label").inner_text().removeprefix("task ")
    page.click(".tab[data-view=timeline]")
    expect(page.locator("#conversation-none")).to_be_visible(timeout=WAIT)
    rpc(server, "mail/create", subject="Late desk", taskId=task_id)
    page.click(".tab[data-view=chat]")
    page.click("#stop")
    expect(page.locator(".msg.error").last).to_contain_text("Task cancelled", timeout=WAIT)
    page.click(".tab[data-view=timeline]")
    expect(page.locator("#conversation-subject")).to_have_text("Late desk", timeout=WAIT)
    expect(page.locator("#conversation-none")).to_be_hidden()


def test_a_server_without_map_mail_shows_no_conversation_and_no_error(
    page: Page, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    toml = tmp_path / "mail.toml"
    toml.write_text("[server.map]\nenabled = false\n", encoding="utf-8")
    env = clean_env() | {
        "MAIL_CONFIG_PATH": str(toml),
        "SWARM_REGISTRY_FILE": str(data / "registry.json"),
        "MAIL_LOG_LEVEL": "WARNING",
    }
    server = start_server("offline", OFFLINE, env, data)
    asked: list[str] = []

    def on_request(request: Request) -> None:
        if request.url == f"{server.url}/map":
            asked.append(request.post_data_json["method"])

    page.on("request", on_request)
    try:
        sign_in(page, server.url, server.keys["user"])
        ask(page, "What is 2 + 3?")
        expect(page.locator(".msg.assistant").last).to_have_text("2 + 3 = 5", timeout=WAIT)
        page.click(".tab[data-view=timeline]")
        expect(page.locator("#timeline > li").last).to_have_attribute("data-kind", "task_complete")
        expect(page.locator("#conversation")).to_be_hidden()
        expect(page.locator("#conversation-none")).to_be_hidden()
        expect(page.locator(".error:visible")).to_have_count(0)
    finally:
        server.stop()
    assert asked == ["map/connect"]


def test_leaving_the_task_ends_the_subscription(page: Page, servers: Servers) -> None:
    server = servers.offline
    task_id, _ = run_bound_task(server, "What is 9 * 9?", subject="Short-lived")
    sign_in(page, server.url, server.keys["user"])
    with page.expect_response(lambda r: is_map(r, "map/subscribe")) as subscribed:
        open_from_history(page, task_id)
    expect(page.locator("#conversation-subject")).to_have_text("Short-lived")
    sub = subscribed.value.json()["result"]["subscriptionId"]
    page.click(".tab[data-view=chat]")
    with page.expect_response(lambda r: is_map(r, "map/unsubscribe")) as ended:
        page.click("#new-task")
    assert ended.value.status == 204  # a notification
    page.click(".tab[data-view=timeline]")
    expect(page.locator("#conversation")).to_be_hidden()
    assert rpc(server, "map/unsubscribe", subscriptionId=sub) == {"unsubscribed": False}
