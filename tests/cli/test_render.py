"""``mail.cli._render``: what each event, answer and task list looks like on the screen."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from rich.console import Console

from mail.cli._render import (
    EventView,
    answer_panel,
    print_interswarm,
    print_response,
    print_result,
    raw_line,
    shorten,
    show_events,
    show_stream,
    tasks_table,
)
from mail.client import ServerSentEvent


def console() -> Console:
    return Console(record=True, width=100, color_system=None, file=io.StringIO())


def screen(*renderables: Any) -> str:
    out = console()
    for renderable in renderables:
        out.print(renderable, no_wrap=True, overflow="ellipsis")
    return out.export_text()


def stored(
    event: str, description: str = "", extra: dict[str, Any] | None = None, seq: int = 1
) -> ServerSentEvent:
    data = {"timestamp": "t", "description": description, "task_id": "T", "extra_data": extra or {}}
    return ServerSentEvent(event=event, data=json.dumps(data), id=str(seq))


def final(event: str, response: str) -> ServerSentEvent:
    return ServerSentEvent(
        event=event, data=json.dumps({"timestamp": "t", "task_id": "T", "response": response})
    )


def message(
    sender: str, recipient: str, subject: str, body: str, msg_type: str = "request"
) -> dict[str, Any]:
    return {
        "full_message": {
            "msg_type": msg_type,
            "message": {
                "sender": {"address_type": "agent", "address": sender},
                "recipient": {"address_type": "agent", "address": recipient},
                "subject": subject,
                "body": body,
            },
        }
    }


def line(view: EventView, event: ServerSentEvent) -> str:
    rendered = view.line(event.event, event.data)
    return "" if rendered is None else rendered.plain


# --- one line per event --------------------------------------------------------------------


def test_new_message_names_sender_recipient_subject_and_a_body_preview() -> None:
    view = EventView()
    text = line(
        view, stored("new_message", "sending", message("user", "supervisor", "Hi", "what is\n6*7?"))
    )
    assert text == "user → supervisor: Hi  what is 6*7?"
    assert view.thinking == "supervisor is thinking…"


def test_broadcast_lists_every_recipient() -> None:
    extra = message("supervisor", "x", "News", "b", msg_type="broadcast")
    extra["full_message"]["message"]["recipients"] = [{"address": "weather"}, {"address": "math"}]
    assert line(EventView(), stored("new_message", extra=extra)).startswith(
        "supervisor → weather, math: News"
    )


def test_the_completion_message_says_who_completed() -> None:
    extra = message("supervisor", "all", "::task_complete::", "done", msg_type="broadcast_complete")
    assert (
        line(EventView(), stored("new_message", extra=extra))
        == "✔ supervisor completed the task  done"
    )


def test_a_long_body_is_cut() -> None:
    text = line(EventView(), stored("new_message", extra=message("a", "b", "s", "x " * 200)))
    assert text.endswith("…")
    assert len(text) < 100


def test_tool_call_shows_agent_tool_and_arguments() -> None:
    extra = {
        "tool_name": "get_weather",
        "tool_args": {"city": "Paris", "days": 2},
        "tool_call_id": "c1",
    }
    text = line(EventView(), stored("tool_call", "agent weather called get_weather", extra))
    assert text == '  weather called get_weather(city="Paris", days=2)'


def test_tool_call_shows_a_reasoning_preview() -> None:
    extra = {"tool_name": "t", "tool_args": {}, "reasoning": "First I check\nthe sky."}
    text = line(EventView(), stored("tool_call", "agent a called t", extra))
    assert text.endswith("thinking: First I check the sky.")


def test_action_call_and_complete_name_the_action_and_its_result() -> None:
    view = EventView()
    call = stored("action_call", 'agent weather executing action tool: forecast with args: {"c":1}')
    assert line(view, call) == "  ⚙ weather runs action forecast"
    assert view.thinking == "weather is running forecast…"
    done = stored("action_complete", 'action complete (caller = weather):\n{"sky": "clear"}')
    assert line(view, done) == '  ⚙ forecast → {"sky": "clear"}'


@pytest.mark.parametrize(
    "event", ["agent_error", "task_error", "interswarm_message_error", "action_error"]
)
def test_errors_are_red(event: str) -> None:
    rendered = EventView().line(event, stored(event, "agent x is unknown\nmore").data)
    assert rendered is not None
    assert rendered.plain == f"✗ {event}: agent x is unknown"
    assert "red" in str(rendered.style)


@pytest.mark.parametrize("event", ["ping", "task_complete_call"])
def test_pings_and_duplicates_are_not_shown(event: str) -> None:
    assert EventView().line(event, '{"timestamp": "t", "task_id": "T"}') is None


def test_other_events_show_their_description_dimmed() -> None:
    rendered = EventView().line(
        "await_message", stored("await_message", "agent a is awaiting").data
    )
    assert rendered is not None
    assert rendered.plain == "· agent a is awaiting"
    assert "dim" in str(rendered.style)


def test_data_that_is_not_an_object_is_shown_as_text() -> None:
    rendered = EventView().line("message", "not json")
    assert rendered is not None
    assert rendered.plain == "message: not json"


# --- answers, results, raw lines, task lists ----------------------------------------------


def test_answer_panels() -> None:
    assert "╭─ Answer" in screen(answer_panel("42", task_id="T1"))
    assert "task T1" in screen(answer_panel("42", task_id="T1"))
    assert "Task failed" in screen(answer_panel("boom", state="failed"))
    assert "Paused at a breakpoint" in screen(answer_panel("[]", state="waiting_breakpoint"))


def test_print_result_shows_events_then_the_answer_or_the_json() -> None:
    out = console()
    result = {
        "response": "6*7 = 42",
        "events": [
            {
                "event": "new_message",
                "data": json.loads(
                    stored("new_message", extra=message("user", "sup", "Q", "6*7?")).data
                ),
                "id": "1",
            },
            {"event": "task_complete", "data": {"description": "response: '6*7 = 42'"}, "id": "2"},
        ],
        "task_id": "T",
        "status": "completed",
    }
    print_result(out, result)
    text = out.export_text()
    assert text.index("user → sup: Q") < text.index("Answer")
    assert "response: '6*7" not in text  # the stored task_complete repeats the panel
    out = console()
    print_result(out, result, verbose=True)
    assert json.loads(out.export_text()) == result


def test_raw_line_is_one_json_object_with_parsed_data() -> None:
    event = stored("tool_call", "agent a called t", {"tool_name": "t"}, seq=7)
    assert json.loads(raw_line(event)) == {
        "event": "tool_call",
        "id": "7",
        "data": json.loads(event.data),
    }
    assert "\n" not in raw_line(stored("x", "multi\nline"))
    assert json.loads(raw_line(ServerSentEvent(event="m", data="plain")))["data"] == "plain"


def test_show_events_reads_stored_event_json_text() -> None:
    out = console()
    show_events(
        out,
        [
            {
                "event": "tool_call",
                "data": stored("tool_call", "agent a called t", {"tool_name": "t"}).data,
            }
        ],
    )
    assert out.export_text() == "  a called t()\n"


def test_tasks_table_keeps_ids_whole_and_oldest_first() -> None:
    long_id = "0" * 36
    tasks = {
        "b": {
            "task_id": "b",
            "state": "failed",
            "start_time": "2026-01-02T00:00:00+00:00",
            "events": [],
            "title": None,
        },
        long_id: {
            "task_id": long_id,
            "state": "completed",
            "start_time": "2026-01-01T10:11:12.5+00:00",
            "events": [1, 2],
            "title": "Weather",
        },
    }
    out = Console(record=True, width=80, color_system=None, file=io.StringIO())
    out.print(tasks_table(tasks))
    lines = out.export_text().splitlines()
    assert lines[0].split() == ["id", "state", "title", "started", "events"]
    assert lines[1].startswith(long_id)
    assert "2026-01-01 10:11 " in lines[1]
    assert lines[2].startswith("b ")


def test_shorten() -> None:
    assert shorten("a\n b   c") == "a b c"
    assert shorten("x" * 10, 5) == "xxxx…"


# --- streams -------------------------------------------------------------------------------


async def events(*items: ServerSentEvent) -> AsyncIterator[ServerSentEvent]:
    for item in items:
        yield item


async def test_show_stream_prints_lines_then_the_answer() -> None:
    out = console()
    ok = await show_stream(
        out,
        events(
            stored("new_message", extra=message("user", "supervisor", "Q", "hi")),
            ServerSentEvent(event="ping", data='{"timestamp": "t", "task_id": "T"}'),
            final("task_complete", "hello"),
        ),
    )
    text = out.export_text()
    assert ok is True
    assert text.splitlines()[0] == "user → supervisor: Q  hi"
    assert "╭─ Answer" in text
    assert "hello" in text
    assert "task T" in text
    assert "timestamp" not in text  # the ping is not shown


async def test_show_stream_reports_a_failed_task() -> None:
    out = console()
    ok = await show_stream(out, events(final("task_error", "step limit reached")))
    text = out.export_text()
    assert ok is False
    assert "Task failed" in text
    assert "step limit reached" in text


async def test_a_stored_task_error_is_a_line_not_the_end() -> None:
    out = console()
    ok = await show_stream(
        out, events(stored("task_error", "timeout for task"), final("task_complete", "ok"))
    )
    assert ok is True
    assert "✗ task_error: timeout for task" in out.export_text()


async def test_show_stream_says_when_the_stream_ends_early() -> None:
    out = console()
    ok = await show_stream(out, events(stored("tool_call", "agent a called t", {"tool_name": "t"})))
    assert ok is False
    assert "the stream ended before the task finished" in out.export_text()


async def test_raw_stream_writes_json_lines_without_colour() -> None:
    buffer = io.StringIO()
    out = Console(file=buffer, force_terminal=True, width=100)
    ok = await show_stream(
        out,
        events(
            stored("tool_call", "agent a called t", {"tool_name": "t"}), final("task_complete", "x")
        ),
        raw=True,
    )
    lines = buffer.getvalue().splitlines()
    assert ok is True
    assert [json.loads(line)["event"] for line in lines] == ["tool_call", "task_complete"]
    assert "\x1b" not in buffer.getvalue()


# --- interswarm and /responses results ---------------------------------------------------


def printed(show: Any, result: dict[str, Any], **kwargs: Any) -> str:
    out = console()
    show(out, result, **kwargs)
    return out.export_text()


ACK = {"swarm": "beta", "task_id": "T", "status": "success", "local_runner": "swarm:alpha@beta"}


def test_an_interswarm_receipt_says_how_to_follow_the_reply() -> None:
    text = printed(print_interswarm, {"response": ACK, "events": None, "task_id": "T"})

    assert text == (
        "sent to swarm beta (swarm:alpha@beta runs it); the reply ends task T: "
        "follow it with task-events T\n"
    )
    # a v1.3.6 server sends no task_id: the receipt's is the same task
    assert "task-events T" in printed(print_interswarm, {"response": ACK, "events": None})


def test_an_interswarm_reply_is_the_answer() -> None:
    reply = {"id": "m", "timestamp": "t", "msg_type": "response", "message": {"body": "sunny"}}

    text = printed(print_interswarm, {"response": reply, "events": None, "task_id": "T"})

    assert "╭─ Answer" in text
    assert "sunny" in text


def test_an_interswarm_result_in_json() -> None:
    result = {"response": ACK, "events": None, "task_id": "T"}

    assert json.loads(printed(print_interswarm, result, verbose=True)) == result


def test_a_response_shows_its_text_or_its_breakpoint_calls() -> None:
    answer = {
        "id": "T",
        "status": "completed",
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "42"}]}],
    }
    paused = {
        "id": "T",
        "status": "completed",
        "output": [{"type": "function_call", "name": "ask_human", "arguments": '{"q": 1}'}],
    }

    assert printed(print_response, answer) == "response T (completed)\n  42\n"
    assert printed(print_response, paused) == (
        'response T (completed)\n  call ask_human({"q": 1})\n'
    )
