"""``mail._text``: which strings the stores cannot hold, and where in a JSON value they are."""

from __future__ import annotations

import json

import pytest

from mail._text import find_bad_text, text_problem

SURROGATE = "contains a lone surrogate (U+D800), which is not Unicode text"
NUL = "contains the NUL character U+0000, which the stores cannot hold"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("", None),
        ("plain text", None),
        ("émoji 😀 and 中文", None),
        (json.loads('"x\\ud83d\\ude00y"'), None),  # a pair is one character
        (json.loads('"x\\ud800y"'), SURROGATE),
        (json.loads('"\\udfff"'), "contains a lone surrogate (U+DFFF), which is not Unicode text"),
        (json.loads('"é\\ude00"'), "contains a lone surrogate (U+DE00), which is not Unicode text"),
        ("a\x00b", NUL),
        ("\x00", NUL),
        ("tab\tand\nnewline", None),  # other control characters are storable
    ],
)
def test_text_problem(value: str, problem: str | None) -> None:
    assert text_problem(value) == problem


def test_find_bad_text_names_the_path_of_the_first_bad_string() -> None:
    value = json.loads(
        '{"subject": "ok", "filter": {"status": ["active", "x\\ud800"]}, "later": "\\u0000"}'
    )
    assert find_bad_text(value, "params") == ("params.filter.status[1]", SURROGATE)
    assert find_bad_text({"later": "\x00"}, "params") == ("params.later", NUL)
    assert find_bad_text(["a", ["b", "\x00"]], "body") == ("body[1][1]", NUL)
    assert find_bad_text("\x00", "params.subject") == ("params.subject", NUL)


def test_find_bad_text_checks_keys_without_echoing_them() -> None:
    value = json.loads('{"metadata": {"fine": 1, "bad\\ud800key": 2}}')
    assert find_bad_text(value, "params") == (
        "params.metadata",
        f"has a key that {SURROGATE}",
    )
    assert find_bad_text({"a": {"\x00": None}}, "p") == ("p.a", f"has a key that {NUL}")


def test_find_bad_text_passes_clean_values_of_every_kind() -> None:
    value = {"a": [1, 2.5, True, None, {"b": "text"}], "c": "😀", "d": {}}
    assert find_bad_text(value, "params") is None
    assert find_bad_text(None, "params") is None
    assert find_bad_text(42, "params") is None


def test_find_bad_text_takes_any_depth() -> None:
    deep: object = "\x00"
    for _ in range(100_000):  # far beyond Python's recursion limit
        deep = [deep]
    found = find_bad_text(deep, "v")
    assert found is not None and found[1] == NUL
    assert found[0] == "v" + "[0]" * 100_000
