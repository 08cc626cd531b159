"""What outside input may look like: names, task ids and JSON documents.

One definition for every place data enters (HTTP bodies and parameters, interswarm
payloads, ``swarms.json``, the registry, the configuration):

* a **name** (a swarm, a registered peer) matches :data:`NAME_PATTERN`: 1 to 64 letters,
  digits, ``_``, ``.`` and ``-``, starting with a letter or digit (no ``/``, ``$``, spaces
  or leading dots: names end up in file contents, environment variable names and addresses);
* a **task id** is 1 to :data:`TASK_ID_MAX` characters without control characters;
* a **JSON document** is standard JSON (no ``NaN`` or ``Infinity``, no number that overflows
  a float) nested at most :data:`MAX_JSON_DEPTH` levels deep (see :func:`loads`);
* **text** (every string of a JSON document, keys included) is Unicode text every store
  holds: no lone surrogate (``"\\ud800"`` is not a character: JSON can spell it, UTF-8
  cannot encode it) and no NUL character ``U+0000`` (PostgreSQL cannot store it in a
  text or JSONB column); :mod:`mail._text` says what is wrong and where.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from mail._text import find_bad_text

__all__ = [
    "MAX_JSON_DEPTH",
    "NAME_PATTERN",
    "NAME_RULE",
    "TASK_ID_MAX",
    "TASK_ID_PATTERN",
    "TASK_ID_RULE",
    "JSONRefusedError",
    "loads",
    "name_problem",
    "task_id_problem",
]

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
#: :data:`NAME_PATTERN` in words, for error messages.
NAME_RULE = "1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
TASK_ID_MAX = 256
TASK_ID_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]+$"
#: :data:`TASK_ID_PATTERN` and :data:`TASK_ID_MAX` in words, for error messages.
TASK_ID_RULE = f"1-{TASK_ID_MAX} characters, no control characters"
MAX_JSON_DEPTH = 64

_NAME = re.compile(NAME_PATTERN)
_TASK_ID = re.compile(TASK_ID_PATTERN)


def name_problem(value: str) -> str | None:
    """What is wrong with ``value`` as a name, or ``None`` if it is a valid one."""
    if _NAME.fullmatch(value) is None:
        return f"must be {NAME_RULE}, got {value[:80]!r}"
    return None


def task_id_problem(value: str) -> str | None:
    """What is wrong with ``value`` as a task id, or ``None`` if it is a valid one."""
    if len(value) > TASK_ID_MAX:
        return f"must be at most {TASK_ID_MAX} characters, got {len(value)}"
    if _TASK_ID.fullmatch(value) is None:
        return "must not be empty or contain control characters"
    return None


# a lone surrogate or NUL as JSON spells them (the only way to send them in a document)
_BAD_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


class JSONRefusedError(json.JSONDecodeError):
    """A document :func:`loads` refuses: not JSON, or JSON beyond the limits above.

    A ``json.JSONDecodeError`` (so a ``ValueError``): ``msg`` says what is wrong and ``pos``
    where.
    """


class _Refused(Exception):
    pass


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused
    return value


def _integer(text: str) -> int:
    if _out_of_range(text):
        raise _Refused
    return int(text)


def _constant(_text: str) -> Any:
    raise _Refused


def loads(document: str | bytes, *, check_text: bool = True) -> Any:
    """Parse a JSON document strictly: ``NaN``, ``Infinity``, numbers out of a float's
    range and nesting deeper than :data:`MAX_JSON_DEPTH` are refused, and (unless not
    ``check_text``: the caller checks and reports it itself) strings no store holds
    (:mod:`mail._text`), named by their path in the document.

    Raises :class:`JSONRefusedError` (a ``json.JSONDecodeError``) saying what and where;
    never ``RecursionError``.
    """
    if isinstance(document, bytes | bytearray):
        try:
            text = document.decode(json.detect_encoding(document))
        except UnicodeDecodeError as e:
            raise JSONRefusedError("not UTF-8 text", "", e.start) from None
    else:
        text = document
    try:
        value = json.loads(text, parse_float=_finite, parse_int=_integer, parse_constant=_constant)
    except json.JSONDecodeError as e:
        raise JSONRefusedError(e.msg, e.doc, e.pos) from None
    except (_Refused, RecursionError):
        # an exceptional document: find what and where
        raise _refusal(text) from None
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH:  # else it cannot be too deep
        problem = _problem(text)
        if problem is not None:
            raise problem
    if check_text and "\\u" in text and (escape := _BAD_ESCAPE.search(text)) is not None:
        found = find_bad_text(value)
        if found is not None:  # (else an escaped backslash followed by "u0000")
            where, what = found
            raise JSONRefusedError(f"{where} {what}", text, escape.start())
    return value


# a string (unrolled, so long strings match in one step), a bracket, a constant, a number
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[{\]}]|NaN|-?Infinity|-?[0-9][0-9.eE+-]*')
_SHOWN = 24  # characters of a refused number the message shows
_INT_DIGITS_MAX = 309  # more digits than any integer a float can hold


def _problem(text: str) -> JSONRefusedError | None:
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first == '"':
            continue
        if first in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                message = f"JSON is nested deeper than {MAX_JSON_DEPTH} levels"
                return JSONRefusedError(message, text, match.start())
        elif first in "]}":
            depth -= 1
        elif token in ("NaN", "Infinity", "-Infinity"):
            message = f"{token} is not a JSON number; send a finite number"
            return JSONRefusedError(message, text, match.start())
        elif _out_of_range(token):
            shown = token if len(token) <= _SHOWN else f"{token[:_SHOWN]}..."
            message = f"number {shown} is out of range; send a finite number"
            return JSONRefusedError(message, text, match.start())
    return None


def _out_of_range(token: str) -> bool:
    """A number that is infinite as a float (integers too: callers convert them)."""
    try:
        if any(c in token for c in ".eE"):
            return not math.isfinite(float(token))
        if len(token.lstrip("-")) > _INT_DIGITS_MAX:
            return True
        float(int(token))
    except OverflowError:
        return True
    except ValueError:  # not a number: the parser says so
        return False
    return False


def _refusal(text: str) -> JSONRefusedError:
    return _problem(text) or JSONRefusedError("not a JSON document this server reads", text, 0)
