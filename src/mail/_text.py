"""Text the stores can hold: no lone surrogates, no NUL character.

JSON can spell strings that are not Unicode text: ``"x\\ud800y"`` decodes to a Python
``str`` with a lone surrogate, which no UTF-8 encoder (the stores, the answer's JSON) will
write. And PostgreSQL's ``text`` and ``jsonb`` cannot hold U+0000. Such text is refused
where it enters, naming where it is:

* :func:`text_problem` says what is wrong with one string (``None`` when nothing is);
* :func:`find_bad_text` looks through a decoded JSON value (dicts, lists, their keys and
  strings, at any depth) and returns the path and the problem of the first bad string;
* :func:`clean_text` replaces both by ``U+FFFD``: the runtime's rule for the text that
  agents, models and actions produce, which nobody can be asked to send again.

They are plain functions, for any boundary (JSON-RPC params, HTTP bodies, peer payloads,
the stores, the runtime); a value is first checked in one pass of orjson's encoder, which
refuses lone surrogates and escapes NUL, so that text that is fine costs little.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

__all__ = ["clean_text", "find_bad_text", "text_problem"]

_BAD = re.compile("[\x00\ud800-\udfff]")

_NUL = "contains the NUL character U+0000, which the stores cannot hold"


def text_problem(value: str) -> str | None:
    """What makes ``value`` unfit to store, or ``None`` when it is fine: ``"contains a
    lone surrogate (U+D800), which is not Unicode text"`` (the first one; surrogates are
    looked for before NUL) or ``"contains the NUL character U+0000, which the stores
    cannot hold"``.

    A surrogate pair in JSON (``"\\ud83d\\ude00"``) decodes to one character, so every
    surrogate left in a ``str`` is a lone one.
    """
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            code = ord(value[e.start])
            return f"contains a lone surrogate (U+{code:04X}), which is not Unicode text"
    if "\x00" in value:
        return _NUL
    return None


#: a path to a value, from its last step back to the start
_Trail = tuple[str, "_Trail | None"]


def _storable(value: object) -> bool:
    """Whether every string of ``value`` is text every store holds: the quick answer
    (only a ``False`` needs :func:`find_bad_text`'s walk)."""
    try:
        encoded = orjson.dumps(value)  # refuses lone surrogates, escapes NUL
    except TypeError:  # a surrogate, or what orjson does not encode: look at each string
        return _strings_storable(value)
    return b"\\u0000" not in encoded or _strings_storable(value)


def _strings_storable(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" not in value if value.isascii() else _BAD.search(value) is None
    if isinstance(value, dict):
        return all(_strings_storable(k) and _strings_storable(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_strings_storable(v) for v in value)
    return True


def find_bad_text(value: object, path: str = "") -> tuple[str, str] | None:
    """The first string in ``value`` that :func:`text_problem` refuses, as ``(where,
    problem)``, or ``None``.

    ``value`` is what a JSON parser returns (dicts, lists, strings, numbers, ``None``);
    ``path`` names it (``"params"``; ``""`` for a document, whose fields are then named
    ``kwargs.notes[2]``). ``where`` extends it: ``params.filter.status[0]`` for a string;
    for a bad key, the dict that holds it, with the problem ``"has a key that contains
    ..."`` (a bad key is never echoed). Any depth is fine: the walk keeps its own stack.
    """
    try:
        if _storable(value):
            return None
    except RecursionError:  # deeper than any JSON this server reads: walk it below
        pass
    # each entry: a value and its trail, (step, parent's trail): the path is spelled out
    # only for the string that is refused
    stack: list[tuple[object, _Trail]] = [(value, (path, None))]
    while stack:
        item, trail = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem is not None:
                return _spelled(trail), problem
        elif isinstance(item, dict):
            children: list[tuple[object, _Trail]] = []
            for key, child in item.items():
                name = key if isinstance(key, str) else str(key)
                problem = text_problem(name)
                if problem is not None:
                    return _spelled(trail), f"has a key that {problem}"
                children.append((child, (f".{name}", trail)))
            stack.extend(reversed(children))
        elif isinstance(item, list | tuple):
            steps = [(child, (f"[{i}]", trail)) for i, child in enumerate(item)]
            stack.extend(reversed(steps))
    return None


def _spelled(trail: _Trail | None) -> str:
    steps: list[str] = []
    while trail is not None:
        step, trail = trail
        steps.append(step)
    return "".join(reversed(steps)).removeprefix(".") or "the document"


def clean_text(value: Any) -> Any:
    """``value`` (a string or a JSON value) with every lone surrogate and NUL character
    replaced by ``U+FFFD``; the very same object when it has none."""
    if isinstance(value, str):
        return _BAD.sub("\ufffd", value) if _BAD.search(value) else value
    if not isinstance(value, dict | list | tuple) or find_bad_text(value) is None:
        return value
    if isinstance(value, dict):
        return {clean_text(k): clean_text(v) for k, v in value.items()}
    return type(value)(clean_text(v) for v in value)
