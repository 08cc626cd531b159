"""`StubReply.slow(then=...)` takes every reply form the docs' table lists."""

from __future__ import annotations

import pytest

from mail.testing.llm import StubReply, StubToolCall


def test_slow_then_text() -> None:
    reply = StubReply.slow(2.5, then="later")
    assert (reply.text, reply.delay) == ("later", 2.5)


def test_slow_then_tool_calls() -> None:
    reply = StubReply.slow(1.0, then=[("help", {})])
    assert reply.calls == (StubToolCall("help", {}),) and reply.delay == 1.0


def test_slow_then_an_error() -> None:
    reply = StubReply.slow(1.0, then=StubReply.http_error(503, "busy"))
    assert (reply.status, reply.error, reply.delay) == (503, "busy", 1.0)


def test_slow_defaults_to_done_and_rejects_other_things() -> None:
    assert StubReply.slow(0.1).text == "done"
    with pytest.raises(TypeError, match="not a stub reply"):
        StubReply.slow(0.1, then=42)  # type: ignore[arg-type]  # the wrong type on purpose
