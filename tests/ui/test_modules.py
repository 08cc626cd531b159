"""The page's own modules, run in Chromium: the SSE parser (CRLF or LF, chunks cut
anywhere), the markdown renderer (CommonMark; HTML escaped, only http(s) links) and what
the activity line reads from an event."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page
from tests.ui.conftest import Servers

pytestmark = pytest.mark.timeout(60)

PARSE = """async ([chunks]) => {
  const { SSEParser } = await import("/ui/assets/api.js");
  const parser = new SSEParser();
  return chunks.flatMap((chunk) => parser.feed(chunk));
}"""

RENDER = """async (text) => {
  const { renderMarkdown } = await import("/ui/assets/markdown.js");
  return renderMarkdown(text);
}"""

# the rendered HTML parsed (inert): each element's tag and attributes
RENDER_ELEMENTS = """async (text) => {
  const { renderMarkdown } = await import("/ui/assets/markdown.js");
  const doc = new DOMParser().parseFromString(`<body>${renderMarkdown(text)}</body>`, "text/html");
  return [...doc.body.querySelectorAll("*")].map((el) =>
    [el.tagName, [...el.attributes].map((a) => [a.name, a.value])]);
}"""


@pytest.fixture
def on_page(page: Page, servers: Servers) -> Page:
    page.goto(f"{servers.offline.url}/ui")
    return page


STREAM = 'id: 1\r\nevent: new_message\r\ndata: {"a":1}\r\n\r\n: a comment\r\nevent: odd\r\ndata: x\r\n\r\n'


@pytest.mark.parametrize("cut", [1, 2, 7, 23, 24, 25, len(STREAM)])
def test_sse_parser_reads_crlf_events_cut_anywhere(on_page: Page, cut: int) -> None:
    chunks = [STREAM[i : i + cut] for i in range(0, len(STREAM), cut)]
    events = on_page.evaluate(PARSE, [chunks])
    assert events == [
        {"event": "new_message", "data": '{"a":1}', "id": "1"},
        {"event": "odd", "data": "x", "id": None},
    ]


def test_sse_parser_reads_lf_lines_and_multiline_data(on_page: Page) -> None:
    events = on_page.evaluate(PARSE, [["event: e\ndata: one\ndata:two\n\n", "data: z\n\n"]])
    assert events == [
        {"event": "e", "data": "one\ntwo", "id": None},
        {"event": "message", "data": "z", "id": None},
    ]


def test_markdown_escapes_html_and_keeps_only_http_links(on_page: Page) -> None:
    html = on_page.evaluate(
        RENDER,
        "# Title\n\n<img src=x onerror=alert(1)> **bold** and `code`\n\n"
        "- [ok](https://example.org)\n- [bad](javascript:alert(1))\n\n```\n<b>x</b>\n```",
    )
    assert "<h1>Title</h1>" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img" not in html
    assert "<strong>bold</strong>" in html and "<code>code</code>" in html
    assert '<a href="https://example.org"' in html
    assert 'href="javascript' not in html
    assert "<pre><code>&lt;b&gt;x&lt;/b&gt;\n</code></pre>" in html


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert(1)</script>",
        '<a href="javascript:alert(1)">x</a>',
        "[x](data:text/html,<script>alert(1)</script>)",
        "[x](JAVASCRIPT:alert(1))",
        "<javascript:alert(1)>",
        "![x](https://example.org/a.png)",
        '[x](https://example.org "a" onmouseover="alert(1)")',
        "<svg onload=alert(1)>",
        "<details open ontoggle=alert(1)>",
        "`<img src=x onerror=alert(1)>`",
    ],
)
def test_markdown_leaves_no_script_url_or_element_of_the_text(on_page: Page, text: str) -> None:
    elements = on_page.evaluate(RENDER_ELEMENTS, text)
    for tag, attributes in elements:
        assert tag in {"P", "CODE", "A", "EM", "STRONG", "BR"}, elements
        for name, value in attributes:
            assert not name.startswith("on"), elements
            assert name != "href" or value.startswith("https://"), elements


def test_markdown_follows_commonmark(on_page: Page) -> None:
    render = lambda text: on_page.evaluate(RENDER, text)  # noqa: E731
    assert render("2 * 3 * 4 = 24") == "<p>2 * 3 * 4 = 24</p>\n"
    assert (
        render("*a* and _b_ and **c**")
        == "<p><em>a</em> and <em>b</em> and <strong>c</strong></p>\n"
    )
    assert render("snake_case_name") == "<p>snake_case_name</p>\n"
    assert render("1. one\n2. two") == "<ol>\n<li>one</li>\n<li>two</li>\n</ol>\n"
    assert render("see https://example.org/x") == (
        '<p>see <a href="https://example.org/x" target="_blank" rel="noopener noreferrer">'
        "https://example.org/x</a></p>\n"
    )


ACTIVITY = """async ([event]) => {
  const { activityOf } = await import("/ui/assets/views/activity.js");
  return activityOf(event, new Set(["supervisor", "weather"]));
}"""


def _message(sender: str, recipient: str) -> dict[str, object]:
    message = {"sender": {"address": sender}, "recipient": {"address": recipient}}
    return {"extra_data": {"full_message": {"message": message}}}


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (
            {"event": "new_message", "data": _message("user", "supervisor")},
            {"agent": "supervisor", "doing": "thinking (a message from user)"},
        ),
        (
            {
                "event": "tool_call",
                "data": {
                    "description": "agent supervisor called send_request",
                    "extra_data": {"tool_name": "send_request", "tool_args": {"target": "weather"}},
                },
            },
            {"agent": "supervisor", "doing": "calling send_request → weather"},
        ),
        (
            {
                "event": "action_call",
                "data": {
                    "description": "agent weather executing action tool: get_weather_forecast "
                    'with args: {"location":"Oslo"}'
                },
            },
            {"agent": "weather", "doing": "running the action get_weather_forecast"},
        ),
        (
            {
                "event": "action_complete",
                "data": {"description": "action complete (caller = weather):\nok"},
            },
            {"agent": "weather", "doing": "reading the action's result"},
        ),
        (
            {
                "event": "token_delta",
                "data": {"agent": "supervisor", "kind": "answer", "delta": "x"},
            },
            {"agent": "supervisor", "doing": "writing"},
        ),
        (
            {
                "event": "await_message",
                "data": {"description": "agent 'supervisor' is awaiting a new message: why"},
            },
            {"agent": "supervisor", "doing": "waiting for a message"},
        ),
        ({"event": "new_message", "data": _message("supervisor", "user")}, None),
        ({"event": "task_complete_call", "data": {"description": "agent supervisor called"}}, None),
    ],
)
def test_activity_of_an_event(on_page: Page, event: dict[str, object], expected: object) -> None:
    assert on_page.evaluate(ACTIVITY, [event]) == expected


AWAITED = """async ([events, agent]) => {
  const { awaitedPeers } = await import("/ui/assets/views/activity.js");
  return awaitedPeers(events, agent);
}"""


def _hop(sender: str, recipient: str, msg_type: str) -> dict[str, object]:
    message = {"sender": {"address": sender}, "recipient": {"address": recipient}}
    full = {"message": message, "msg_type": msg_type}
    return {"event": "new_message", "data": {"extra_data": {"full_message": full}}}


def test_the_peers_an_agent_waits_on_are_those_that_have_not_answered(on_page: Page) -> None:
    events = [
        _hop("user", "supervisor", "request"),
        _hop("supervisor", "weather", "request"),
        _hop("supervisor", "math", "request"),
        _hop("math", "supervisor", "response"),
    ]
    assert on_page.evaluate(AWAITED, [events, "supervisor"]) == ["weather"]
    assert on_page.evaluate(AWAITED, [events[:3], "supervisor"]) == ["weather", "math"]
    answered = [*events, _hop("weather", "supervisor", "response")]
    assert on_page.evaluate(AWAITED, [answered, "supervisor"]) == []
    assert on_page.evaluate(AWAITED, [events, "weather"]) == []


STEPS = """async ([events]) => {
  const { Steps } = await import("/ui/assets/views/steps.js");
  const ol = document.createElement("ol");
  const steps = new Steps(ol);
  for (const event of events) steps.add(event);
  return [...ol.children].map((li) => [li.className, li.querySelector("summary, .step-line").textContent,
    li.querySelector(".step-body")?.textContent ?? null]);
}"""


def _call(agent: str, tool: str, call_id: str, **args: object) -> dict[str, object]:
    extra = {"tool_name": tool, "tool_args": args, "tool_call_id": call_id}
    return {
        "event": "tool_call",
        "data": {"description": f"agent {agent} called {tool}", "extra_data": extra},
    }


def test_steps_show_errors_where_they_happened(on_page: Page) -> None:
    notice = {
        "sender": {"address_type": "system", "address": "demo"},
        "recipient": {"address_type": "agent", "address": "weather"},
        "subject": "::action_error::",
        "body": "get_weather_forecast failed: no such place",
    }
    events = [
        _call("weather", "get_weather_forecast", "c1", location="Atlantis"),
        {
            "event": "action_error",
            "data": {"extra_data": {"tool_call_id": "c1", "content": "no such place"}},
        },
        {"event": "new_message", "data": {"extra_data": {"full_message": {"message": notice}}}},
        {"event": "agent_error", "data": {"description": "agent math: the model refused"}},
    ]
    steps = on_page.evaluate(STEPS, [events])
    assert [kind for kind, _, _ in steps] == ["step call failed", "step error", "step error"]
    call, notice_step, agent_error = steps
    assert call[1].startswith('weather calls get_weather_forecast(location="Atlantis")failed')
    assert call[2] == 'arguments{\n  "location": "Atlantis"\n}errorno such place'
    assert notice_step[1].startswith("weather ::action_error:: to weather")
    assert notice_step[2] == "get_weather_forecast failed: no such place"
    assert agent_error[1].startswith("math agent error")
    assert agent_error[2] == "agent math: the model refused"


def test_steps_leave_out_what_the_messages_already_say(on_page: Page) -> None:
    events = [
        _call("supervisor", "send_request", "c1", target="math", subject="s", body="b"),
        _call("supervisor", "task_complete", "c2", finish_message="done"),
        {"event": "task_complete_call", "data": {"description": "agent supervisor called"}},
    ]
    assert on_page.evaluate(STEPS, [events]) == []
