"""The incremental reader of ``finish_message`` and the usage normalizer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mail.factories._live_output import FinishMessageExtractor, usage_of

VALUE = 'a\nb "q" \\ / \t é 😀 \u2028 \x01 end'
OBJECTS: list[dict[str, Any]] = [
    {"finish_message": VALUE},
    {"before": {"finish_message": "nested, not this"}, "finish_message": VALUE, "after": "x"},
    {"list": ["finish_message", {"a": "}"}], "finish_message": VALUE},
    {"finish_message\u00e9": "other key", "finish_message": VALUE},
]


def texts() -> list[str]:
    found: list[str] = []
    for obj in OBJECTS:
        found.append(json.dumps(obj))  # ASCII: \\uXXXX escapes, a surrogate pair for 😀
        found.append(json.dumps(obj, ensure_ascii=False))  # raw non-ASCII characters
        found.append(json.dumps(obj, separators=(",", ":"), indent=None))
    found.append(json.dumps({"finish_message": VALUE}, indent=2))
    found.append('{"finish_\\u006dessage": "escaped key"}')  # a key with an escape
    return found


def read(pieces: list[str]) -> str:
    extractor = FinishMessageExtractor()
    return "".join(extractor.feed(piece) for piece in pieces)


@pytest.mark.parametrize("text", texts())
def test_every_single_split_gives_the_value(text: str) -> None:
    expected = json.loads(text)["finish_message"]

    for cut in range(len(text) + 1):
        assert read([text[:cut], text[cut:]]) == expected, cut


@pytest.mark.parametrize("text", texts())
def test_every_pair_of_splits_gives_the_value(text: str) -> None:
    expected = json.loads(text)["finish_message"]

    for first in range(len(text) + 1):
        for second in range(first, len(text) + 1):
            got = read([text[:first], text[first:second], text[second:]])
            assert got == expected, (first, second)


def test_one_character_at_a_time_grows_the_value_in_order() -> None:
    text = json.dumps({"finish_message": VALUE})
    extractor = FinishMessageExtractor()

    pieces = [extractor.feed(char) for char in text]

    assert "".join(pieces) == VALUE
    grown = [p for p in pieces if p]
    assert len(grown) == len(VALUE)  # one piece per character: 😀 whole, after its low half


def test_surrogate_pair_split_inside_the_escapes() -> None:
    text = '{"finish_message": "x\\ud83d\\ude00y"}'
    extractor = FinishMessageExtractor()

    out = [extractor.feed(text[:25]), extractor.feed(text[25:31]), extractor.feed(text[31:])]

    assert out == ["x", "", "😀y"]


def test_lone_surrogate_is_passed_on() -> None:
    assert read(['{"finish_message": "a\\ud83db"}']) == "a\ud83db"


def test_no_such_field_gives_nothing() -> None:
    assert read(['{"target": "x", "body": "finish_message"}']) == ""
    assert read(['{"finish_message": 42}']) == ""


def test_truncated_text_gives_what_was_read() -> None:
    assert read(['{"finish_message": "hal']) == "hal"


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {
                "prompt_tokens": 10,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 4},
                "completion_tokens_details": {"reasoning_tokens": 3},
            },
            {
                "input_tokens": 10,
                "output_tokens": 5,
                "reasoning_tokens": 3,
                "cached_input_tokens": 4,
            },
        ),
        (
            {
                "input_tokens": 7,
                "output_tokens": 2,
                "input_tokens_details": None,
                "output_tokens_details": {"reasoning_tokens": 1},
            },
            {
                "input_tokens": 7,
                "output_tokens": 2,
                "reasoning_tokens": 1,
                "cached_input_tokens": 0,
            },
        ),
        (
            {"prompt_tokens": 1},
            {
                "input_tokens": 1,
                "output_tokens": 0,
                "reasoning_tokens": 0,
                "cached_input_tokens": 0,
            },
        ),
        (None, None),
        ({}, None),
    ],
)
def test_usage_of_provider_shapes(usage: Any, expected: Any) -> None:
    assert usage_of(usage) == expected
