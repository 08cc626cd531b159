"""``show_stream`` with live ``token_delta`` events: the answer prints as it streams, once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from rich.console import Console

from mail.cli._render import show_stream
from mail.client import ServerSentEvent


def console() -> Console:
    return Console(record=True, width=100, force_terminal=False, color_system=None)


def delta(kind: str, text: str, agent: str = "supervisor") -> ServerSentEvent:
    data = {"timestamp": "t", "task_id": "T", "agent": agent, "kind": kind, "delta": text}
    if kind == "answer":
        data["call_id"] = "c1"
    return ServerSentEvent(event="token_delta", data=json.dumps(data))


def closing(event: str, response: str, status: str) -> ServerSentEvent:
    data = {"timestamp": "t", "task_id": "T", "response": response, "status": status}
    return ServerSentEvent(event=event, data=json.dumps(data))


def completion(body: str, seq: int) -> ServerSentEvent:
    full: dict[str, Any] = {
        "msg_type": "broadcast_complete",
        "message": {
            "sender": {"address_type": "agent", "address": "supervisor"},
            "recipients": [{"address_type": "agent", "address": "all"}],
            "subject": "::task_complete::",
            "body": body,
        },
    }
    data = {
        "timestamp": "t",
        "description": "",
        "task_id": "T",
        "extra_data": {"full_message": full},
    }
    return ServerSentEvent(event="new_message", data=json.dumps(data), id=str(seq))


async def events(*items: ServerSentEvent) -> AsyncIterator[ServerSentEvent]:
    for item in items:
        yield item


async def test_streamed_answer_is_printed_once_without_a_panel() -> None:
    out = console()

    ok = await show_stream(
        out,
        events(
            delta("reasoning", "thinking about it"),
            delta("text", "Sure."),
            delta("answer", "forty"),
            delta("answer", "-two"),
            completion("forty-two", 5),
            closing("task_complete", "forty-two", "completed"),
        ),
    )

    text = out.export_text()
    assert ok is True
    assert text.count("forty-two") == 1
    assert "Answer\nforty-two\n" in text
    assert "╭─ Answer" not in text
    assert "✓ completed · task T" in text
    assert "thinking about it" not in text and "Sure." not in text
    assert "token_delta" not in text


async def test_a_streamed_answer_that_differs_from_the_response_gets_the_panel() -> None:
    out = console()

    await show_stream(
        out, events(delta("answer", "draft"), closing("task_complete", "final words", "completed"))
    )

    text = out.export_text()
    assert "╭─ Answer" in text
    assert "final words" in text


async def test_no_deltas_is_the_panel_as_before_and_status_picks_it() -> None:
    out = console()

    ok = await show_stream(out, events(closing("task_complete", "[]", "waiting_breakpoint")))

    assert ok is True
    assert "Paused at a breakpoint" in out.export_text()
