"""The viewer as a studio, in Chromium against real servers: the timeline's waterfall (one
bar per agent turn, model calls with their tokens), the graph's replay of a finished or a
running task (the agent holding the turn, the edge a message takes), the agent's panel
(prompt for admins, actions, history at a step) and the graph at 390 px."""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect
from tests._servers import Server, clean_env, start_server
from tests.ui.conftest import FIXTURES, Servers
from tests.ui.test_viewer import WAIT, ask, sign_in

from mail.examples.supervisor.prompts import SYSPROMPT

pytestmark = pytest.mark.timeout(180)

_LISTENING = re.compile(r"\Astub LLM listening on (http://127\.0\.0\.1:\d+/v1)")
AGENT_IN_DESCRIPTION = re.compile(r"^agent (\S+) ")
LOCAL = {"supervisor", "weather", "math"}


@pytest.fixture(scope="module")
def llm_swarm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of the fixtures' ``streaming-example`` swarm (LLM agents with prompts), its
    model the stub LLM, which reports each call's tokens."""
    command = [sys.executable, "-m", "mail.testing.llm", "--port", "0"]
    root = tmp_path_factory.mktemp("studio-llm")
    with Server(
        command, env=clean_env(), cwd=root, log=root / "llm.log", printed=_LISTENING, health=False
    ) as llm:
        env = clean_env() | {"LITELLM_PROXY_API_BASE": llm.url, "MAIL_LOG_LEVEL": "WARNING"}
        with start_server(
            "streaming-example", FIXTURES / "swarms.json", env, root / "data"
        ) as server:
            # the server's first model call imports LiteLLM (seconds): done before the tests
            warm = httpx.post(
                f"{server.url}/message",
                json={"body": "What is 1 + 1?"},
                headers={"Authorization": f"Bearer {server.keys['user']}"},
                trust_env=False,
                timeout=120,
            )
            assert warm.status_code == 200, warm.text
            yield server


def task_events(server: Server, task_id: str, key: str = "user") -> list[dict[str, Any]]:
    """The task's stored events from ``GET /task``, their data parsed (no closing event)."""
    answer = httpx.get(
        f"{server.url}/task",
        params={"task_id": task_id},
        headers={"Authorization": f"Bearer {server.keys[key]}"},
        trust_env=False,
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return [e | {"data": json.loads(e["data"])} for e in answer.json()["events"]]


def run(page: Page, server: Server, question: str, key: str = "user") -> str:
    """Sign in, ask, wait for the answer: the task's id."""
    sign_in(page, server.url, server.keys[key])
    ask(page, question)
    expect(page.locator(".msg.assistant:not(.live)").last).to_be_visible(timeout=60_000)
    expect(page.locator("#stop")).to_be_hidden(timeout=WAIT)
    return page.locator("#task-label").inner_text().removeprefix("task ")


def instant(iso: str) -> float:
    """An ISO timestamp in milliseconds since the epoch (microseconds kept)."""
    return datetime.fromisoformat(iso).timestamp() * 1000


def at(event: dict[str, Any]) -> float:
    return instant(event["data"]["timestamp"])


def turn_starts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first tool_call of every agent turn (it tells when the turn began)."""
    return [
        e for e in events if e["event"] == "tool_call" and "turn_started" in e["data"]["extra_data"]
    ]


def bars(page: Page, kind: str) -> list[dict[str, Any]]:
    return page.locator(f".wf-bar.wf-{kind}").evaluate_all(
        """els => els.map(e => ({agent: e.dataset.agent, start: Number(e.dataset.start),
          duration: Number(e.dataset.duration), index: Number(e.dataset.index),
          title: e.title, text: e.textContent,
          left: e.getBoundingClientRect().left, right: e.getBoundingClientRect().right}))"""
    )


def test_the_waterfall_has_one_bar_per_agent_turn(page: Page, servers: Servers) -> None:
    server = servers.offline
    task_id = run(page, server, "What is the weather in Lisbon tomorrow?")
    events = task_events(server, task_id)
    firsts = turn_starts(events)
    # supervisor asks weather; weather runs its action, then answers; supervisor completes
    assert [AGENT_IN_DESCRIPTION.match(e["data"]["description"])[1] for e in firsts] == [  # type: ignore[index]
        "supervisor",
        "weather",
        "weather",
        "supervisor",
    ]
    span = at(events[-1]) - at(events[0])

    page.click(".tab[data-view=timeline]")
    expect(page.locator("#timeline-mode-waterfall")).to_have_attribute("aria-pressed", "true")
    turns = page.locator(".wf-bar.wf-turn")
    expect(turns).to_have_count(len(firsts), timeout=WAIT)
    expect(page.locator("#waterfall-summary")).to_contain_text("4 agent turns in")
    expect(page.locator(".wf-row")).to_have_count(2)  # one row per agent that had a turn
    found = sorted(bars(page, "turn"), key=lambda b: b["index"])  # in the events' order
    assert [b["agent"] for b in found] == ["supervisor", "weather", "weather", "supervisor"]
    for bar, first in zip(found, firsts, strict=True):
        assert bar["duration"] >= 0
        assert bar["start"] >= 0
        assert bar["start"] + bar["duration"] <= span + 0.01
        started = instant(first["data"]["extra_data"]["turn_started"]) - at(events[0])
        assert abs(bar["start"] - started) < 0.01  # the turn begins when the server says
        assert "from " in bar["title"] and re.search(r"\d\d:\d\d:\d\d\.\d{3}", bar["title"])
        assert bar["left"] <= bar["right"]
    # each turn after the first starts no earlier than the one before it ended
    for before, after in itertools.pairwise(found):
        assert after["start"] >= before["start"]
    assert found[0]["start"] + found[0]["duration"] <= found[1]["start"]
    # the model call of a turn lies within it; the action bar within weather's first turn
    model = bars(page, "model")
    assert len(model) == len(firsts)
    for call in model:
        assert any(
            t["agent"] == call["agent"]
            and t["start"] - 0.01 <= call["start"]
            and call["start"] + call["duration"] <= t["start"] + t["duration"] + 0.01
            for t in found
        ), call
    [action] = bars(page, "action")
    weather = next(t for t in found if t["agent"] == "weather")
    assert weather["start"] <= action["start"] <= weather["start"] + weather["duration"]

    # the list is one click away, and the choice is kept
    page.click("#timeline-mode-list")
    expect(page.locator("#timeline")).to_be_visible()
    expect(page.locator("#waterfall")).to_be_hidden()
    page.reload()
    expect(page.locator("#timeline-mode-list")).to_have_attribute(
        "aria-pressed", "true", timeout=WAIT
    )
    expect(page.locator("#timeline > li").last).to_have_attribute("data-kind", "task_complete")
    page.click("#timeline-mode-waterfall")
    expect(turns).to_have_count(len(firsts))
    # a bar opens the graph's replay at its event
    bar = page.locator('.wf-bar.wf-turn[data-agent="weather"]').first
    index = int(bar.get_attribute("data-index") or "")
    bar.click()
    expect(page.locator("#view-graph")).to_be_visible()
    expect(page.locator("#replay-caption")).to_contain_text(f"step {index + 1}/")
    expect(page.locator("#graph-svg g.node[data-step]")).to_have_attribute("data-agent", "weather")


def test_the_waterfall_tells_each_model_calls_tokens(
    page: Page, llm_swarm: Server, screenshot_dir: Path
) -> None:
    task_id = run(page, llm_swarm, "What is 12 * (3 + 4)?")
    events = task_events(llm_swarm, task_id)
    calls = [c for e in turn_starts(events) for c in e["data"]["extra_data"]["model_calls"]]
    assert calls  # the stub model reports its usage
    total = {"input_tokens": 0, "output_tokens": 0}
    for call in calls:
        for key in total:
            total[key] += call["usage"].get(key, 0)

    page.click(".tab[data-view=timeline]")
    model = page.locator(".wf-bar.wf-model")
    expect(model).to_have_count(len(calls), timeout=WAIT)
    texts = model.all_inner_texts()
    for text, call in zip(texts, calls, strict=True):
        assert text.startswith(f"{call['usage']['input_tokens']} in")
    expect(page.locator("#waterfall-summary")).to_contain_text(
        f"tokens: {total['input_tokens']} in · {total['output_tokens']} out"
    )
    assert "model call (" in (model.first.get_attribute("title") or "")
    page.screenshot(path=screenshot_dir / "ui-waterfall.png")


def holders(events: list[dict[str, Any]]) -> list[str | None]:
    """Who holds the turn after each event: a message's local recipient, else the agent the
    event names, else whoever held it before."""
    out: list[str | None] = []
    holder = None
    for event in events:
        data = event["data"]
        message = (data.get("extra_data") or {}).get("full_message", {}).get("message")
        if event["event"] == "new_message" and message:
            to = [message["recipient"]] if "recipient" in message else message["recipients"]
            local = [r["address"] for r in to if r["address"] in LOCAL]
            holder = local[0] if local else holder
        else:
            named = AGENT_IN_DESCRIPTION.match(data.get("description") or "")
            if named and named[1] in LOCAL:
                holder = named[1]
        out.append(holder)
    return out


def test_replay_moves_the_turn_in_the_order_of_the_events(
    page: Page, servers: Servers, screenshot_dir: Path
) -> None:
    server = servers.offline
    task_id = run(page, server, "What is the weather in Oslo and what is 6 * 7?")
    events = task_events(server, task_id)
    expected = holders(events)
    page.click(".tab[data-view=graph]")
    caption = page.locator("#replay-caption")
    steps = len(events)  # the closing event stands for the stored end
    expect(caption).to_contain_text(f"step {steps}/{steps}", timeout=WAIT)
    page.locator("#replay-step").focus()
    page.keyboard.press("Home")
    expect(caption).to_contain_text(f"step 1/{steps}")
    seen: list[str | None] = []
    hops: list[tuple[str, str] | None] = []
    for n in range(1, steps + 1):
        expect(caption).to_contain_text(f"step {n}/{steps}")
        node = page.locator("#graph-svg g.node[data-step]")
        seen.append(node.get_attribute("data-agent") if node.count() else None)
        edge = page.locator("#graph-svg line.edge[data-step]")
        hops.append(
            (edge.first.get_attribute("data-from"), edge.first.get_attribute("data-to"))  # type: ignore[arg-type]
            if edge.count()
            else None
        )
        if n < steps:
            page.click("#replay-next")
    assert seen == expected
    assert seen[0] == "supervisor" and {"weather", "math"} <= set(seen)
    # at each message between agents, its edge is marked
    for event, hop in zip(events, hops, strict=True):
        message = (event["data"]["extra_data"] or {}).get("full_message", {}).get("message")
        sender = message and message["sender"]["address"]
        if event["event"] == "new_message" and sender in LOCAL and "recipient" in message:
            assert hop == (sender, message["recipient"]["address"]), event
    expect(page.locator("#replay-next")).to_be_disabled()
    # played from the start, it runs to the end
    page.click("#replay-play")
    expect(page.locator("#replay-play")).to_have_text("Pause")
    expect(caption).to_contain_text(f"step {steps}/{steps}", timeout=30_000)
    expect(page.locator("#replay-play")).to_have_text("Play")
    # at the first message between two agents (from the keyboard: the slider's arrows)
    first = next(i for i, hop in enumerate(hops) if hop)
    page.locator("#replay-step").focus()
    page.keyboard.press("Home")
    for _ in range(first):
        page.keyboard.press("ArrowRight")
    expect(caption).to_contain_text(f"step {first + 1}/{steps}")
    expect(page.locator("#graph-svg line.edge[data-step]")).to_have_count(1)
    page.screenshot(path=screenshot_dir / "ui-replay.png")


def test_the_agent_panel_shows_its_history_at_the_step(
    page: Page, llm_swarm: Server, screenshot_dir: Path
) -> None:
    task_id = run(page, llm_swarm, "What is the weather in Oslo tomorrow?")
    events = task_events(llm_swarm, task_id)
    # the step where weather's answer leaves: before it, weather has got a request only
    answer = next(
        i
        for i, e in enumerate(events)
        if e["event"] == "new_message"
        and e["data"]["extra_data"]["full_message"]["message"]["sender"]["address"] == "weather"
    )
    page.click(".tab[data-view=graph]")
    expect(page.locator("#replay")).to_be_visible(timeout=WAIT)
    page.locator("#replay-step").focus()
    page.keyboard.press("Home")
    for _ in range(answer - 1):
        page.keyboard.press("ArrowRight")
    expect(page.locator("#replay-caption")).to_contain_text(f"step {answer}/")
    # from the keyboard: the node takes the focus and opens the panel
    page.locator('#graph-svg g.node[data-agent="weather"]').focus()
    page.keyboard.press("Enter")
    panel = page.locator("#agent-panel")
    expect(panel).to_be_visible()
    expect(panel.locator("#agent-panel-name")).to_have_text("weather")
    expect(panel.locator("#agent-prompt")).to_have_text("Its prompt is shown to admins only.")
    expect(panel.locator("#agent-actions")).to_contain_text("get_weather_forecast")
    history = panel.locator("#agent-history > li")
    expect(history.first).to_contain_text("from supervisor")
    dirs = history.evaluate_all("els => els.map(e => e.dataset.dir)")
    assert dirs[0] == "in" and "out" not in dirs
    seqs = history.evaluate_all("els => els.map(e => Number(e.dataset.seq))")
    assert seqs == sorted(seqs) and seqs[-1] <= answer
    # one step on, the answer it sent is in its history
    page.click("#replay-next")
    expect(history.last).to_have_attribute("data-dir", "out")
    expect(history.last).to_contain_text("to supervisor")
    page.set_viewport_size({"width": 1280, "height": 1200})  # the graph and the whole panel
    page.screenshot(path=screenshot_dir / "ui-agent-panel.png")
    page.click("#agent-panel-close")
    expect(panel).to_be_hidden()

    # an admin is told the agents' prompts (no task needed for that)
    page.click("#logout")
    sign_in(page, llm_swarm.url, llm_swarm.keys["admin"])
    page.click(".tab[data-view=graph]")
    page.click('#graph-svg g.node[data-agent="supervisor"]')
    expect(panel.locator("#agent-prompt")).to_contain_text(SYSPROMPT.strip()[:40])
    expect(panel.locator("#agent-history")).to_contain_text("No task open")


def test_a_running_task_is_replayed_live(page: Page, servers: Servers) -> None:
    server = servers.waiter
    sign_in(page, server.url, server.keys["user"])
    ask(page, "Wait while I watch")
    expect(page.locator("#stop")).to_be_visible(timeout=WAIT)
    page.click(".tab[data-view=graph]")
    caption = page.locator("#replay-caption")
    expect(caption).to_contain_text("(live)", timeout=WAIT)
    expect(caption).to_contain_text("action_call wait_a_while")
    expect(page.locator('#graph-svg g.node[data-step="turn"]')).to_have_attribute(
        "data-agent", "supervisor"
    )
    # a step back leaves the live end
    page.click("#replay-prev")
    expect(caption).not_to_contain_text("(live)")
    # the waterfall's action bar grows while the action runs
    page.click(".tab[data-view=timeline]")
    action = page.locator('.wf-bar.wf-action[data-open="true"]')
    expect(action).to_have_count(1, timeout=WAIT)
    expect(page.locator("#waterfall-summary")).to_contain_text("so far")
    before = float(action.get_attribute("data-duration") or "")
    page.wait_for_function(
        """(d) => Number(document.querySelector('.wf-bar.wf-action[data-open]')
          ?.dataset.duration) > d""",
        arg=before,
        timeout=WAIT,
    )
    page.click(".tab[data-view=chat]")
    page.click("#stop")
    expect(page.locator("#stop")).to_be_hidden(timeout=WAIT)
    # once the task ended, nothing is open
    page.click(".tab[data-view=timeline]")
    expect(page.locator(".wf-bar.wf-action")).to_have_count(1)
    expect(page.locator(".wf-bar[data-open]")).to_have_count(0)
    expect(page.locator("#waterfall-summary")).not_to_contain_text("so far")


LONG_NAMES = [
    "research_coordinator",
    "weather-forecaster-europe",
    "math",
    "summarizer.v2",
    "customer_support_agent",
    "x",
]


@pytest.fixture
def long_names(tmp_path: Path) -> Iterator[Server]:
    """A swarm of scripted agents with long names (only its graph is looked at)."""
    head, *rest = LONG_NAMES
    agents = [
        {
            "name": name,
            "factory": "python::mail.testing:scripted_agent",
            "comm_targets": rest if name == head else [head],
            "enable_entrypoint": name == head,
            "can_complete_tasks": name == head,
            "agent_params": {},
        }
        for name in LONG_NAMES
    ]
    swarm = {
        "name": "long-names",
        "version": "1.0.0",
        "entrypoint": head,
        "agents": agents,
        "actions": [],
    }
    source = tmp_path / "swarms.json"
    source.write_text(json.dumps([swarm]), encoding="utf-8")
    env = clean_env() | {"MAIL_LOG_LEVEL": "WARNING"}
    with start_server("long-names", source, env, tmp_path / "data") as server:
        yield server


LABELS = """() => [...document.querySelectorAll('#graph-svg g.node')].map((g) => {
  const box = (el) => { const r = el.getBoundingClientRect();
    return {left: r.left, top: r.top, right: r.right, bottom: r.bottom, height: r.height}; };
  return {name: g.dataset.agent, circle: box(g.querySelector('circle')),
    lines: [...g.querySelectorAll('text.label tspan')].map((t) => ({text: t.textContent, ...box(t)})),
    font: parseFloat(getComputedStyle(g.querySelector('text.label')).fontSize)};
})"""


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["left"] < b["right"]
        and b["left"] < a["right"]
        and a["top"] < b["bottom"]
        and b["top"] < a["bottom"]
    )


def test_the_graph_is_readable_at_390_px(
    page: Page, long_names: Server, screenshot_dir: Path
) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, long_names.url, long_names.keys["user"])
    page.click(".tab[data-view=graph]")
    expect(page.locator("#graph-svg g.node")).to_have_count(len(LONG_NAMES), timeout=WAIT)
    # one SVG unit per CSS pixel: the labels keep their size
    expect(page.locator("#graph-svg")).to_have_attribute(
        "viewBox", re.compile(r"^0 0 3[0-9]{2} \d+$")
    )
    nodes = page.evaluate(LABELS)
    svg = page.locator("#graph-svg").evaluate(
        "e => { const r = e.getBoundingClientRect();"
        " return {left: r.left, top: r.top, right: r.right, bottom: r.bottom}; }"
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    boxes = []
    for node in nodes:
        # not cut: the lines give the whole name back
        assert "".join(line["text"] for line in node["lines"]) == node["name"]
        assert node["font"] >= 12
        for line in node["lines"]:
            assert line["height"] >= 12  # legible: drawn at its size, not scaled down
            inside = node["circle"]
            assert inside["left"] <= line["left"] and line["right"] <= inside["right"], line
            assert inside["top"] <= line["top"] and line["bottom"] <= inside["bottom"], line
            boxes.append((node["name"], line))
        # the node is drawn whole, inside the graph's box
        assert svg["left"] <= node["circle"]["left"] and node["circle"]["right"] <= svg["right"]
        assert svg["top"] <= node["circle"]["top"] and node["circle"]["bottom"] <= svg["bottom"]
    # no two labels (nor two nodes) overlap
    for i, (name, box) in enumerate(boxes):
        for other, second in boxes[i + 1 :]:
            if other != name:
                assert not overlap(box, second), (name, other)
    circles = [n["circle"] for n in nodes]
    for i, a in enumerate(circles):
        for b in circles[i + 1 :]:
            assert not overlap(a, b)
    page.locator("#graph-svg").screenshot(path=screenshot_dir / "ui-graph-narrow.png")


BARS = """async ([events, now, names]) => {
  const { bars, instant } = await import("/ui/assets/views/waterfall.js");
  const w = bars(events, now ? { now: instant(now), names: new Set(names) } : {});
  return {agents: w.agents, usage: w.usage, span: w.end - w.start,
    bars: w.bars.map((b) => [b.kind, b.agent, +(b.start - w.start).toFixed(3),
      +(b.end - b.start).toFixed(3), b.status ?? b.open ?? null])};
}"""


def stamp(at_ms: float) -> str:
    """The time ``at_ms`` milliseconds after 10:00:00 (to the microsecond)."""
    return f"2026-01-01T10:00:00.{round(at_ms * 1000):06d}+00:00"


def event(name: str, at_ms: float, description: str = "", **extra: Any) -> dict[str, Any]:
    data = {"timestamp": stamp(at_ms), "description": description, "task_id": "t"}
    return {"event": name, "data": data | {"extra_data": extra}, "id": None}


def test_waterfall_bars_of_model_calls_actions_and_interswarm_waits(
    page: Page, servers: Servers
) -> None:
    # one turn of "lead" (two model calls, then an action that fails, then a request to
    # swarm "far"), its wait until far's reply, then lead's second turn; microseconds count
    usage = {"input_tokens": 10, "output_tokens": 5}
    events = [
        event("new_message", 0, "sending message: ..."),
        event(
            "tool_call",
            3.5,
            "agent lead called look",
            tool_name="look",
            tool_call_id="c1",
            turn_started=stamp(0.25),
            model_calls=[
                {"model": "m", "usage": usage, "timestamp": stamp(1.5)},
                {"model": "m", "usage": usage, "timestamp": stamp(3.25)},
            ],
        ),
        event("action_call", 3.75, "agent lead executing action tool: look", tool_call_id="c1"),
        event("action_error", 4.5, "action look failed", tool_call_id="c1"),
        event("interswarm_message_sent", 5, "sent interswarm message forward to swarm far:\n<x/>"),
        event("interswarm_message_received", 9, "received interswarm message from swarm far"),
        event("tool_call", 10, "agent lead called task_complete", turn_started=stamp(9.5)),
    ]
    page.goto(f"{servers.offline.url}/ui")
    found = page.evaluate(BARS, [events, None, []])
    assert found["agents"] == ["lead"]
    assert found["span"] == 10
    assert found["usage"] == {
        "input_tokens": 20,
        "output_tokens": 10,
        "reasoning_tokens": 0,
        "cached_input_tokens": 0,
    }
    assert found["bars"] == [
        ["turn", "lead", 0.25, 4.25, None],  # until its last event, the action's end
        ["model", "lead", 0.25, 1.25, None],
        ["model", "lead", 1.5, 1.75, None],
        ["action", "lead", 3.75, 0.75, "error"],
        ["interswarm", "lead", 5, 4, "answered"],
        ["turn", "lead", 9.5, 0.5, None],
        ["model", "lead", 9.5, 0.5, None],  # no usage reported: the agent call
    ]


def message(at_ms: float, sender: str, recipient: str) -> dict[str, Any]:
    body = {
        "sender": {"address_type": "agent", "address": sender},
        "recipient": {"address_type": "agent", "address": recipient},
        "subject": "s",
        "body": "b",
    }
    return event("new_message", at_ms, "sending message", full_message={"message": body})


def test_waterfall_of_a_running_task_ends_what_goes_on_now(page: Page, servers: Servers) -> None:
    # lead asked helper (who has called no tool yet) and runs an action not complete yet
    events = [
        message(0, "user", "lead"),
        event("tool_call", 2, "agent lead called ask", turn_started=stamp(1)),
        message(3, "lead", "helper"),
        event("tool_call", 4, "agent lead called act", turn_started=stamp(3.5)),
        event("action_call", 5, "agent lead executing action tool: act", tool_call_id="a"),
    ]
    page.goto(f"{servers.offline.url}/ui")
    running = page.evaluate(BARS, [events, stamp(9), ["lead", "helper"]])
    assert running["span"] == 9
    assert running["agents"] == ["lead", "helper"]
    assert [b for b in running["bars"] if b[4] is True] == [
        ["action", "lead", 5, 4, True],
        ["turn", "helper", 3, 6, True],  # from the message it got
    ]
    # without the server's time (the task ended), nothing is open
    ended = page.evaluate(BARS, [events, None, []])
    assert [b for b in ended["bars"] if b[4] is True] == []
    assert ["action", "lead", 5, 0, None] in ended["bars"]
