"""The default summarizer: extractive and deterministic (no LLM), over a conversation's
public turns."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from mail.conversations.models import Turn

__all__ = ["extractive_summary"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_DECISION = re.compile(r"\b(decided|decide|agreed|agree|will|approved|chose|choose)\b", re.I)
_MAX_POINTS = 5


def _text(turn: Turn) -> str:
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
        parts = [s.strip() for s in _SENTENCE.split(_text(turn)) if s.strip()]
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
