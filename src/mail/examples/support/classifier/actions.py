"""The support swarm's ticket classifier (``classify_ticket``): keyword rules, no model."""

from __future__ import annotations

import re
from typing import Any

from mail.examples._actionkit import make_action, text_arg

__all__ = [
    "CATEGORY_KEYWORDS",
    "CLASSIFY_TICKET_PARAMETERS",
    "PRIORITY_KEYWORDS",
    "classify_ticket",
]

#: category -> the words that point to it (a ticket with none of them is ``general``).
CATEGORY_KEYWORDS: dict[str, tuple[str, ...]] = {
    "billing": ("bill", "charge", "charged", "refund", "payment", "invoice", "price", "card"),
    "technical": ("crash", "error", "bug", "broken", "slow", "install", "app", "export"),
    "account": ("password", "login", "log", "account", "email", "username", "delete"),
}
#: priority -> the words that raise a ticket to it, checked from ``urgent`` down (``low``
#: when none is found).
PRIORITY_KEYWORDS: dict[str, tuple[str, ...]] = {
    "urgent": ("urgent", "immediately", "emergency", "asap", "lawyer", "fraud"),
    "high": ("angry", "twice", "cannot", "can't", "down", "lost", "unacceptable"),
    "medium": ("problem", "issue", "wrong", "help"),
}
_ACTIONS: dict[str, list[str]] = {
    "billing": ["Check the transaction history", "Offer a refund if the charge is wrong"],
    "technical": ["Collect app version and device details", "Reproduce the issue"],
    "account": ["Verify the customer's identity", "Walk through account recovery"],
    "general": ["Answer from the FAQ", "Offer a follow-up contact"],
}


def _hits(words: list[str], keywords: tuple[str, ...]) -> int:
    return sum(1 for word in words if word in keywords)


def _classify(args: dict[str, Any]) -> dict[str, Any]:
    text = text_arg(args, "text")
    words = re.findall(r"[a-z']+", text.lower())
    counts = {name: _hits(words, keys) for name, keys in CATEGORY_KEYWORDS.items()}
    category = max(counts, key=lambda name: counts[name]) if any(counts.values()) else "general"
    total = sum(counts.values())
    category_confidence = round(counts[category] / total, 2) if total else 0.5
    priority = next((p for p, keys in PRIORITY_KEYWORDS.items() if _hits(words, keys)), "low")
    priority_confidence = 0.9 if priority in ("urgent", "low") else 0.75
    matched = [w for w in words if w in CATEGORY_KEYWORDS.get(category, ())]
    reasoning = (
        f"Keywords {', '.join(sorted(set(matched)))} point to {category}"
        if matched
        else "No category keywords found; treated as a general question"
    ) + f"; priority {priority}."
    return {
        "category": category,
        "category_confidence": category_confidence,
        "priority": priority,
        "priority_confidence": priority_confidence,
        "reasoning": reasoning,
        "suggested_actions": _ACTIONS[category],
    }


#: ``classify_ticket {text: str}`` -> JSON ``{category: billing|technical|account|general,
#: category_confidence, priority: urgent|high|medium|low, priority_confidence, reasoning,
#: suggested_actions}`` or an ``"Error: ..."`` string.
classify_ticket = make_action(
    "classify_ticket",
    "Classify a support ticket into a category (billing, technical, account, general) "
    "and a priority (urgent, high, medium, low).",
    {"text": {"type": "string", "description": "The ticket's text."}},
    ["text"],
    _classify,
)

#: The JSON Schema of ``classify_ticket``'s arguments.
CLASSIFY_TICKET_PARAMETERS: dict[str, Any] = classify_ticket.parameters
