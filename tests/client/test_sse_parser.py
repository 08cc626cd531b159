"""The client's SSE parser: framing, fields, and chunks split at every byte offset."""

from __future__ import annotations

import pytest

from mail.client._sse import ServerSentEvent, SSEParser


def parse(*chunks: bytes) -> list[ServerSentEvent]:
    parser = SSEParser()
    events = [e for chunk in chunks for e in parser.feed(chunk)]
    return events + parser.close()


# What a MAIL server sends: CRLF everywhere, one JSON data line, ids on stored events.
MAIL_STREAM = (
    b'event: new_message\r\ndata: {"task_id":"t","n":1}\r\nid: 1\r\n\r\n'
    b'event: ping\r\ndata: {"task_id":"t"}\r\n\r\n'
    b'event: task_complete\r\ndata: {"task_id":"t","response":"ok \\u00b0C"}\r\n\r\n'
)
MAIL_EVENTS = [
    ServerSentEvent("new_message", '{"task_id":"t","n":1}', "1"),
    ServerSentEvent("ping", '{"task_id":"t"}'),
    ServerSentEvent("task_complete", '{"task_id":"t","response":"ok \\u00b0C"}'),
]


def test_mail_framing() -> None:
    assert parse(MAIL_STREAM) == MAIL_EVENTS
    assert MAIL_EVENTS[2].json() == {"task_id": "t", "response": "ok °C"}


@pytest.mark.parametrize("newline", [b"\r\n", b"\n", b"\r"], ids=["crlf", "lf", "cr"])
def test_every_line_ending(newline: bytes) -> None:
    stream = MAIL_STREAM.replace(b"\r\n", newline)
    assert parse(stream) == MAIL_EVENTS


def test_mixed_line_endings() -> None:
    stream = b"event: a\rdata: 1\n\r\nevent: b\r\ndata: 2\n\n"
    assert parse(stream) == [ServerSentEvent("a", "1"), ServerSentEvent("b", "2")]


def test_multi_line_data_is_joined_with_newlines() -> None:
    stream = b"data: first\r\ndata:second\r\ndata\r\ndata:  indented\r\n\r\n"
    assert parse(stream) == [ServerSentEvent(data="first\nsecond\n\n indented")]


def test_comments_and_unknown_fields_are_ignored() -> None:
    stream = b": keep-alive\r\n:\r\nevent: x\r\nfoo: bar\r\nEvent: y\r\ndata: d\r\n\r\n"
    assert parse(stream) == [ServerSentEvent("x", "d")]


def test_a_comment_alone_dispatches_nothing() -> None:
    assert parse(b": ping\r\n\r\n: again\r\n\r\n") == []


def test_events_without_data_are_not_dispatched() -> None:
    parser = SSEParser()
    assert parser.feed(b"event: lonely\r\nid: 7\r\nretry: 250\r\n\r\n") == []
    assert (parser.last_event_id, parser.retry) == ("7", 250)


def test_empty_data_line_dispatches_an_empty_event() -> None:
    assert parse(b"data:\r\n\r\n") == [ServerSentEvent(data="")]


def test_id_and_retry() -> None:
    stream = b"id: 41\r\nretry: 1500\r\ndata: a\r\n\r\ndata: b\r\n\r\n"
    parser = SSEParser()
    events = parser.feed(stream)
    assert events == [ServerSentEvent(data="a", id="41", retry=1500), ServerSentEvent(data="b")]
    # each event carries only its own id; the running value is kept on the parser
    assert parser.last_event_id == "41"


def test_bad_retry_and_id_with_nul_are_ignored() -> None:
    stream = b"retry: soon\r\nid: a\x00b\r\ndata: x\r\n\r\n"
    assert parse(stream) == [ServerSentEvent(data="x")]


def test_event_name_defaults_to_message_and_empty_name_too() -> None:
    assert parse(b"event:\r\ndata: x\r\n\r\n") == [ServerSentEvent("message", "x")]


def test_partial_event_at_end_is_discarded() -> None:
    assert parse(b"data: complete\r\n\r\ndata: cut") == [ServerSentEvent(data="complete")]
    assert parse(b"data: no blank line\r\n") == []


def test_leading_bom_is_dropped_once() -> None:
    stream = "\ufeffdata: x\r\n\r\n\ufeffdata: y\r\n\r\n".encode()
    assert parse(stream) == [ServerSentEvent(data="x")]  # a later BOM starts an unknown field


def test_invalid_utf8_becomes_replacement_characters() -> None:
    assert parse(b"data: \xff\xfe ok\r\n\r\n") == [ServerSentEvent(data="\ufffd\ufffd ok")]


def test_events_arrive_as_soon_as_their_blank_line_does() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: a\r\n") == []
    assert parser.feed(b"\r") == [ServerSentEvent(data="a")]
    # the LF completing that CRLF must not count as another blank line
    assert parser.feed(b"\ndata: b\r") == []
    assert parser.feed(b"\n\r\n") == [ServerSentEvent(data="b")]


SPLIT_SAMPLE = (
    "\ufeff: hello\r\n"
    "event: new_message\r\n"
    'data: {"text":"h\u00e9llo w\u00f6rld \u2603 \U0001f600"}\r\n'
    "data: second line\n"
    "id: 12\r\n"
    "retry: 3000\r\n"
    "\r\n"
    "data: cr only\r"
    "\r"
    "event: task_complete\n"
    "data: {}\n"
    "\n"
    "data: trailing partial"
).encode()
SPLIT_EXPECTED = [
    ServerSentEvent(
        "new_message",
        '{"text":"h\u00e9llo w\u00f6rld \u2603 \U0001f600"}\nsecond line',
        "12",
        3000,
    ),
    ServerSentEvent(data="cr only"),
    ServerSentEvent("task_complete", "{}"),
]


def test_whole_sample() -> None:
    assert parse(SPLIT_SAMPLE) == SPLIT_EXPECTED


def test_split_at_every_byte_offset() -> None:
    for offset in range(len(SPLIT_SAMPLE) + 1):
        got = parse(SPLIT_SAMPLE[:offset], SPLIT_SAMPLE[offset:])
        assert got == SPLIT_EXPECTED, f"split at byte {offset}"


def test_split_at_every_pair_of_offsets() -> None:
    size = len(SPLIT_SAMPLE)
    for first in range(0, size + 1, 3):
        for second in range(first, size + 1, 5):
            chunks = (SPLIT_SAMPLE[:first], SPLIT_SAMPLE[first:second], SPLIT_SAMPLE[second:])
            assert parse(*chunks) == SPLIT_EXPECTED, f"split at {first} and {second}"


def test_one_byte_at_a_time() -> None:
    chunks = [SPLIT_SAMPLE[i : i + 1] for i in range(len(SPLIT_SAMPLE))]
    assert parse(*chunks) == SPLIT_EXPECTED


def test_json_of_non_json_data_raises_value_error() -> None:
    with pytest.raises(ValueError, match="Expecting value"):
        ServerSentEvent(data="not json").json()
