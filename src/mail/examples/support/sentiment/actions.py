"""The support swarm's sentiment analysis and escalations.

``analyze_sentiment`` scores text with a small word list; ``create_escalation`` files an
escalation in memory only (the original's was not stored anywhere either): its id is
derived from the ticket and reason, so the same call gives the same id.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from mail.examples._actionkit import choice_arg, digest_int, make_action, text_arg

__all__ = [
    "ANALYZE_SENTIMENT_PARAMETERS",
    "CREATE_ESCALATION_PARAMETERS",
    "EMOTION_PATTERNS",
    "ESCALATION_PHRASES",
    "NEGATIVE_INDICATORS",
    "POSITIVE_INDICATORS",
    "analyze_sentiment",
    "create_escalation",
]

#: Words that raise the sentiment score by one each.
POSITIVE_INDICATORS: frozenset[str] = frozenset(
    {"thanks", "thank", "great", "love", "happy", "excellent", "good", "helpful"}
)
#: Words that lower the sentiment score by one each.
NEGATIVE_INDICATORS: frozenset[str] = frozenset(
    {
        "angry",
        "terrible",
        "awful",
        "hate",
        "bad",
        "broken",
        "worst",
        "frustrated",
        "unacceptable",
        "disappointed",
        "twice",
        "never",
        "cancel",
        "lawyer",
    }
)
#: Words or phrases that make ``analyze_sentiment`` recommend an escalation whatever
#: the score (which otherwise takes a score of -0.6 or less).
ESCALATION_PHRASES: tuple[str, ...] = (
    "lawyer",
    "cancel",
    "legal action",
    "speak to a manager",
)
#: word -> the emotion it reports in ``emotions_detected``.
EMOTION_PATTERNS: dict[str, str] = {
    "angry": "anger",
    "frustrated": "frustration",
    "disappointed": "disappointment",
    "happy": "joy",
    "love": "joy",
    "worried": "anxiety",
    "confused": "confusion",
}


def _analyze(args: dict[str, Any]) -> dict[str, Any]:
    text = text_arg(args, "text")
    words = re.findall(r"[a-z]+", text.lower())
    positive = [w for w in words if w in POSITIVE_INDICATORS]
    negative = [w for w in words if w in NEGATIVE_INDICATORS]
    exclamations = text.count("!")
    raw = len(positive) - len(negative) - 0.5 * min(exclamations, 4) * bool(negative)
    score = round(max(-1.0, min(1.0, raw / 3)), 2)
    sentiment = "positive" if score > 0.2 else "negative" if score < -0.2 else "neutral"
    spaced = f" {' '.join(words)} "
    escalate = score <= -0.6 or any(f" {p} " in spaced for p in ESCALATION_PHRASES)
    return {
        "sentiment": sentiment,
        "score": score,
        "score_factors": {
            "positive_words": positive,
            "negative_words": negative,
            "exclamations": exclamations,
        },
        "emotions_detected": sorted({EMOTION_PATTERNS[w] for w in words if w in EMOTION_PATTERNS}),
        "escalation_recommended": escalate,
        "escalation_reason": "strongly negative customer" if escalate else None,
        "analysis_summary": f"The customer sounds {sentiment} (score {score}).",
    }


def _escalate(args: dict[str, Any]) -> dict[str, Any]:
    ticket_id = text_arg(args, "ticket_id")
    reason = text_arg(args, "reason")
    priority = choice_arg(args, "priority", ("high", "urgent"), None)
    number = digest_int(ticket_id, reason, priority) % 16**8
    escalation = {
        "escalation_id": f"ESC-{number:08X}",
        "ticket_id": ticket_id,
        "reason": reason,
        "priority": priority,
        "status": "pending",
        "created_at": datetime.now(UTC).isoformat(),
        "assigned_to": "support_supervisor_queue",
        "sla_target": "1 hour" if priority == "urgent" else "4 hours",
    }
    return {
        "success": True,
        "message": f"Ticket {ticket_id} escalated with {priority} priority.",
        "escalation": escalation,
    }


#: ``analyze_sentiment {text: str}`` -> JSON ``{sentiment: positive|negative|neutral,
#: score (-1..1), score_factors, emotions_detected, escalation_recommended,
#: escalation_reason, analysis_summary}`` or an ``"Error: ..."`` string.
analyze_sentiment = make_action(
    "analyze_sentiment",
    "Analyze the sentiment of a customer's message and say whether to escalate it.",
    {"text": {"type": "string", "description": "The customer's message."}},
    ["text"],
    _analyze,
)

#: ``create_escalation {ticket_id: str, reason: str, priority: high|urgent}`` -> JSON
#: ``{success, message, escalation: {escalation_id "ESC-XXXXXXXX", ticket_id, reason,
#: priority, status "pending", created_at, assigned_to, sla_target}}`` or ``"Error: ..."``.
create_escalation = make_action(
    "create_escalation",
    "Escalate a support ticket to a human supervisor.",
    {
        "ticket_id": {"type": "string", "description": "The ticket to escalate."},
        "reason": {"type": "string", "description": "Why it needs a human."},
        "priority": {"type": "string", "enum": ["high", "urgent"]},
    },
    ["ticket_id", "reason", "priority"],
    _escalate,
)

#: The JSON Schema of ``analyze_sentiment``'s arguments.
ANALYZE_SENTIMENT_PARAMETERS: dict[str, Any] = analyze_sentiment.parameters
#: The JSON Schema of ``create_escalation``'s arguments.
CREATE_ESCALATION_PARAMETERS: dict[str, Any] = create_escalation.parameters
