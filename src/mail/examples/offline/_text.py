"""Understanding questions without a model: weather words, places and arithmetic."""

from __future__ import annotations

import ast
import re

__all__ = [
    "DEFAULT_LOCATION",
    "find_expression",
    "find_location",
    "is_weather_question",
    "wants_tomorrow",
]

#: The place forecast when a question names none.
DEFAULT_LOCATION = "San Francisco"

_WEATHER = re.compile(
    r"\b(?:weather|forecasts?|rain|rainy|raining|snow|snowy|snowing|sunny|sunshine|"
    r"cloudy|clouds|temperatures?|umbrella|humid|humidity|wind|windy|storms?|stormy|"
    r"hot|cold|warm|chilly)\b",
    re.IGNORECASE,
)
_TOMORROW = re.compile(r"\btomorrow\b", re.IGNORECASE)
_PLACE_START = re.compile(r"\b(?:in|for|at)\s+", re.IGNORECASE)
# Capitalised words that follow "in"/"for"/"at" but are not places.
_NOT_PLACES = frozenset(
    (
        *("today", "tomorrow", "tonight", "this", "next", "the", "a", "an", "my", "our"),
        *("celsius", "fahrenheit", "i", "it", "monday", "tuesday", "wednesday"),
        *("thursday", "friday", "saturday", "sunday"),
    )
)
_ABBREVIATION = 4  # "St." and "Mt." keep their dot; longer words end a sentence with it

# Words and symbols people use for operators, rewritten to Python syntax.
_OPERATOR_WORDS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), replacement)
    for pattern, replacement in (
        (r"\bto the power of\b", "**"),
        (r"\bmultiplied by\b", "*"),
        (r"\bdivided by\b", "/"),
        (r"\btimes\b", "*"),
        (r"\bplus\b", "+"),
        (r"\bminus\b", "-"),
        (r"\bmod(?:ulo)?\b", "%"),
        (r"\bsquared\b", "** 2"),
        (r"\bcubed\b", "** 3"),
        (r"(?<=[\d)])\s*[x\u00d7]\s*(?=[\d(])", " * "),  # x and the times sign
        (r"\u00f7", "/"),  # the division sign
        (r"[\u2212\u2013]", "-"),  # the minus sign and the en dash
        (r"\^", "**"),
        (r"(?<=\d),(?=\d{3}\b)", ""),  # thousands separators
    )
)
# Runs of characters an arithmetic expression is made of (constants included).
_RUN = re.compile(r"(?:\d|\bpi\b|\btau\b|\be\b|[.+\-*/%()\s])+")
_MATH_CUE = re.compile(r"\b(?:calculate|compute|evaluate|solve|math|arithmetic)\b", re.IGNORECASE)
_CUE_BEFORE = ("what is", "what's", "how much is", "=", ":")


def is_weather_question(text: str) -> bool:
    """True when ``text`` mentions the weather (forecast, rain, temperature, ...)."""
    return _WEATHER.search(text) is not None


def wants_tomorrow(text: str) -> bool:
    """True when ``text`` asks about tomorrow."""
    return _TOMORROW.search(text) is not None


def find_location(text: str) -> str | None:
    """The first capitalised place after "in", "for" or "at" ("weather in New York" -> "New York")."""
    for match in _PLACE_START.finditer(text):
        words: list[str] = []
        for word in text[match.end() :].split():
            name = word.strip(",;:!?\"'()")
            if len(name) > _ABBREVIATION:
                name = name.rstrip(".")
            if not name or not name[0].isupper() or name.lower() in _NOT_PLACES:
                break
            words.append(name)
            if word[-1] in ",;:!?)\"'" or (word.endswith(".") and not name.endswith(".")):
                break  # punctuation ends the name
        if words:
            return " ".join(words)
    return None


def _balanced(candidate: str) -> str:
    candidate = candidate.strip().lstrip(")").rstrip("(. ").strip()
    while candidate.endswith(")") and candidate.count(")") > candidate.count("("):
        candidate = candidate[:-1].rstrip()
    while candidate.startswith("(") and candidate.count("(") > candidate.count(")"):
        candidate = candidate[1:].lstrip()
    return candidate


def _operators(candidate: str) -> list[ast.operator] | None:
    try:
        tree = ast.parse(candidate, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return [node.op for node in ast.walk(tree) if isinstance(node, ast.BinOp)]


def find_expression(text: str) -> str | None:
    """The longest arithmetic expression in ``text``, in Python syntax, or None.

    "What is 12 times (3 + 4)?" gives ``"12 * (3 + 4)"``. A candidate needs at least one
    binary operator; one that only subtracts ("2-3 days") also needs a cue such as
    "calculate", "what is" or a colon before it.
    """
    for pattern, replacement in _OPERATOR_WORDS:
        text = pattern.sub(replacement, text)
    best: str | None = None
    for match in _RUN.finditer(text):
        candidate = " ".join(_balanced(match.group()).split())
        operators = _operators(candidate) if candidate else None
        if not operators:
            continue
        if all(isinstance(op, ast.Sub) for op in operators):
            before = text[: match.start()].rstrip().lower()
            if not (_MATH_CUE.search(text) or before.endswith(_CUE_BEFORE)):
                continue
        if best is None or len(candidate) > len(best):
            best = candidate
    return best
