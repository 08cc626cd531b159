"""Live output of streamed model answers: the ``finish_message`` of a ``task_complete`` call
read as its arguments stream, and token usage in the runtime's shape.

:class:`FinishMessageExtractor` reads a JSON object text piece by piece and returns, for
each piece, the new characters of the top-level ``"finish_message"`` string value, decoded
(escapes ``\\n``, ``\\"``, ``\\\\``, ``\\uXXXX`` and surrogate pairs may be split anywhere).
:func:`usage_of` turns a provider's usage object (chat completions or Responses) into
``{input_tokens, output_tokens, reasoning_tokens, cached_input_tokens}``.
"""

from __future__ import annotations

from typing import Any

from mail.core import emit_delta, report_usage

__all__ = [
    "ANSWER_FIELD",
    "AnswerStreams",
    "FinishMessageExtractor",
    "report_response_usage",
    "usage_of",
]

#: The argument of ``task_complete`` that carries the answer.
ANSWER_FIELD = "finish_message"

_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}


class _StringDecoder:
    """Decodes the inside of one JSON string, a character at a time."""

    __slots__ = ("_escape", "_hex", "_high")

    def __init__(self) -> None:
        self._escape = False
        self._hex: str | None = None  # the digits of a \\u escape so far
        self._high = ""  # a high surrogate waiting for its low half

    def feed(self, char: str) -> str | None:
        """The decoded text ``char`` completes (may be ``""``); ``None`` at the closing quote."""
        if self._hex is not None:
            self._hex += char
            if len(self._hex) < 4:  # noqa: PLR2004  # \\uXXXX
                return ""
            code, self._hex = int(self._hex, 16), None
            return self._code_point(code)
        if self._escape:
            self._escape = False
            if char == "u":
                self._hex = ""
                return ""
            return self._flush() + _SIMPLE_ESCAPES.get(char, char)
        if char == "\\":
            self._escape = True
            return ""
        if char == '"':
            return None
        return self._flush() + char

    def _code_point(self, code: int) -> str:
        if 0xD800 <= code <= 0xDBFF:  # noqa: PLR2004  # high surrogate: wait for the low one
            pending, self._high = self._high, chr(code)
            return pending
        if 0xDC00 <= code <= 0xDFFF and self._high:  # noqa: PLR2004
            high, self._high = ord(self._high), ""
            return chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00))
        return self._flush() + chr(code)

    def _flush(self) -> str:
        pending, self._high = self._high, ""
        return pending

    def close(self) -> str:
        return self._flush()


class FinishMessageExtractor:
    """Incremental reader of the ``finish_message`` string in a streamed JSON object.

    Call :meth:`feed` with each piece of the arguments text; it returns the newly decoded
    characters of the value (``""`` when the piece holds none). Nested objects, other keys
    and a key of the same name deeper down are skipped. Malformed JSON yields what could
    be read.
    """

    __slots__ = ("_depth", "_expect_key", "_key", "_last_key", "_string", "_target")

    def __init__(self, field: str = ANSWER_FIELD) -> None:
        self._target = field
        self._depth = 0
        self._expect_key = False
        self._string: _StringDecoder | None = None  # inside a string when set
        self._key: list[str] | None = None  # the key being read, when the string is a key
        self._last_key: str | None = None

    def _capturing(self) -> bool:
        return self._key is None and self._depth == 1 and self._last_key == self._target

    def feed(self, text: str) -> str:
        """Read ``text`` and return the new characters of the value."""
        out: list[str] = []
        for char in text:
            if self._string is not None:
                self._in_string(char, out)
            else:
                self._structure(char)
        return "".join(out)

    def _in_string(self, char: str, out: list[str]) -> None:
        assert self._string is not None  # noqa: S101  # called only inside a string
        piece = self._string.feed(char)
        capturing = self._capturing()
        if piece is None:  # the string ended
            if capturing:
                out.append(self._string.close())
            if self._key is not None:
                self._last_key = "".join(self._key) + self._string.close()
                self._key = None
            self._string = None
            return
        if self._key is not None:
            self._key.append(piece)
        elif capturing:
            out.append(piece)

    def _structure(self, char: str) -> None:
        if char == '"':
            self._string = _StringDecoder()
            if self._depth == 1 and self._expect_key:
                self._key = []
            return
        if char in "{[":
            self._depth += 1
            self._expect_key = char == "{" and self._depth == 1
        elif char in "}]":
            self._depth -= 1
        elif self._depth == 1 and char == ",":
            self._expect_key = True
            self._last_key = None
        elif self._depth == 1 and char == ":":
            self._expect_key = False


class AnswerStreams:
    """Sends the growing answer of each streamed ``task_complete`` call as ``answer``
    deltas (:func:`mail.core.emit_delta`); calls are keyed by their index or item id."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: dict[Any, tuple[str | None, FinishMessageExtractor] | None] = {}

    def feed(self, key: Any, name: str | None, call_id: str | None, piece: str) -> None:
        """Read ``piece`` of the arguments of call ``key`` (named ``name``)."""
        if key not in self._calls:
            if not name:
                return  # the name comes first; until then nothing is known
            extractor = FinishMessageExtractor() if name == "task_complete" else None
            self._calls[key] = None if extractor is None else (call_id, extractor)
        entry = self._calls[key]
        if entry is None or not piece:
            return
        if out := entry[1].feed(piece):
            emit_delta("answer", out, call_id=entry[0])


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_of(usage: Any) -> dict[str, int] | None:
    """A provider's usage (chat ``prompt_tokens``/``completion_tokens`` or Responses
    ``input_tokens``/``output_tokens``, with their details) in the runtime's shape, or
    ``None`` when there is none."""
    if usage is None:
        return None
    chat = _get(usage, "prompt_tokens") is not None or _get(usage, "completion_tokens") is not None
    if chat:
        inputs, outputs = _get(usage, "prompt_tokens"), _get(usage, "completion_tokens")
        in_details = _get(usage, "prompt_tokens_details")
        out_details = _get(usage, "completion_tokens_details")
    else:
        inputs, outputs = _get(usage, "input_tokens"), _get(usage, "output_tokens")
        in_details = _get(usage, "input_tokens_details")
        out_details = _get(usage, "output_tokens_details")
    if inputs is None and outputs is None:
        return None
    return {
        "input_tokens": _int(inputs),
        "output_tokens": _int(outputs),
        "reasoning_tokens": _int(_get(out_details, "reasoning_tokens")),
        # OpenAI's cached tokens, or Anthropic's tokens read from its prompt cache
        "cached_input_tokens": _int(
            _get(in_details, "cached_tokens") or _get(usage, "cache_read_input_tokens")
        ),
    }


def finish_reasons_of(response: Any) -> list[str]:
    """Why a model's answer ended: its choices' ``finish_reason`` (chat completions), its
    ``status`` (Responses) or its ``stop_reason`` (Anthropic)."""
    choices = _get(response, "choices")
    if choices:
        reasons = [_get(choice, "finish_reason") for choice in choices]
        return [r for r in reasons if isinstance(r, str)]
    for name in ("stop_reason", "status"):
        value = _get(response, name)
        if isinstance(value, str):
            return [value]
    return []


def report_response_usage(response: Any, model: str | None = None) -> None:
    """Tell the runtime the tokens of a non-streamed answer of ``model``, and why it
    ended (:func:`mail.core.report_usage`)."""
    usage = usage_of(_get(response, "usage"))
    if usage is not None:
        report_usage(usage, model=model, finish_reasons=finish_reasons_of(response))
