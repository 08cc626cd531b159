"""The summarizers of ``mail/summary``: the :class:`Summarizer` interface and the default,
extractive and deterministic (no LLM), over a conversation's public turns
(:mod:`mail.conversations._llm_summary` asks a model through LiteLLM)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Protocol

from mail.conversations.models import Turn

__all__ = ["SECTIONS", "ExtractiveSummarizer", "Summarizer", "extractive_summary", "turn_text"]

#: the sections a summary may have besides its ``text`` (``include`` picks among them)
SECTIONS = ("keyPoints", "keyDecisions", "openQuestions")


class Summarizer(Protocol):
    """Summarizes turns: returns ``text``, the requested ``sections`` (lists of strings)
    and ``generator`` (what made it). Never raises: a failing summarizer falls back."""

    async def __call__(self, turns: Sequence[Turn], sections: Sequence[str]) -> dict[str, Any]: ...


class ExtractiveSummarizer:
    """The default :class:`Summarizer`: :func:`extractive_summary` (every section)."""

    async def __call__(self, turns: Sequence[Turn], sections: Sequence[str]) -> dict[str, Any]:
        return {**extractive_summary(turns), "generator": "extractive"}


_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_DECISION = re.compile(r"\b(decided|decide|agreed|agree|will|approved|chose|choose)\b", re.I)
_MAX_POINTS = 5


def turn_text(turn: Turn) -> str:
    """The text of a turn (``content.text``, or a ``text`` turn's string content)."""
    content = turn["content"]
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"]).strip()
    if turn["contentType"] == "text" and isinstance(content, str):
        return content.strip()
    return ""


def extractive_summary(turns: Sequence[Turn]) -> dict[str, object]:
    """``text``, ``keyPoints``, ``keyDecisions`` and ``openQuestions`` drawn from the
    sentences of ``turns``' text content, in turn order: the first sentence of each turn
    (key points, at most five), sentences saying something was decided or will be done,
    and sentences ending with a question mark (the last ones, at most five)."""
    sentences: list[tuple[str, str]] = []
    points: list[str] = []
    for turn in turns:
        parts = [s.strip() for s in _SENTENCE.split(turn_text(turn)) if s.strip()]
        if parts and len(points) < _MAX_POINTS:
            points.append(f"{turn['participantId']}: {parts[0]}")
        sentences += [(turn["participantId"], s) for s in parts]
    decisions = [s for _, s in sentences if _DECISION.search(s) and not s.endswith("?")]
    questions = [s for _, s in sentences if s.endswith("?")]
    authors = sorted({t["participantId"] for t in turns})
    text = f"{len(turns)} turns by {', '.join(authors) or 'nobody'}." + (
        f" It starts: {json.dumps(sentences[0][1])}." if sentences else ""
    )
    return {
        "text": text,
        "keyPoints": points,
        "keyDecisions": decisions[:_MAX_POINTS],
        "openQuestions": questions[-_MAX_POINTS:],
    }
