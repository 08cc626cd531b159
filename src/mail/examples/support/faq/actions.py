"""The support swarm's FAQ search (``search_faq``), over ten canned entries.

The original searched a fixed in-code FAQ too; this one ranks by word overlap, so the
same query always gets the same results and no service is called.
"""

from __future__ import annotations

import re
from typing import Any

from mail.examples._actionkit import int_arg, make_action, text_arg

__all__ = ["FAQ_ENTRIES", "search_faq"]

#: ``(id, question, answer, category)`` of every FAQ entry.
FAQ_ENTRIES: tuple[tuple[str, str, str, str], ...] = (
    (
        "faq-001",
        "How do I reset my password?",
        "Open Settings > Security, choose 'Reset password' and follow the emailed link.",
        "account",
    ),
    (
        "faq-002",
        "How do I update my billing information?",
        "Go to Billing > Payment methods and add or edit a card.",
        "billing",
    ),
    (
        "faq-003",
        "Why was I charged twice?",
        "A second charge is usually a pending authorization that drops off within 3-5 days; "
        "if not, contact billing with both transaction ids.",
        "billing",
    ),
    (
        "faq-004",
        "How do I request a refund?",
        "Refunds for the last 30 days can be requested under Billing > History > Refund.",
        "billing",
    ),
    (
        "faq-005",
        "The app crashes on startup, what should I do?",
        "Update to the latest version, clear the cache, and restart the device.",
        "technical",
    ),
    (
        "faq-006",
        "How do I export my data?",
        "Settings > Privacy > Export data sends a download link by email.",
        "technical",
    ),
    (
        "faq-007",
        "Why can't I log in?",
        "Check caps lock, reset your password, and make sure your account is verified.",
        "account",
    ),
    (
        "faq-008",
        "How do I delete my account?",
        "Settings > Account > Delete account; deletion is final after 14 days.",
        "account",
    ),
    (
        "faq-009",
        "What are your support hours?",
        "Chat support is open 24/7; phone support 9am-6pm on weekdays.",
        "general",
    ),
    (
        "faq-010",
        "How do I contact a human agent?",
        "Ask for 'agent' in chat or call the number on the Contact page.",
        "general",
    ),
)


def _words(text: str) -> set[str]:
    return {word for word in re.findall(r"[a-z0-9]+", text.lower()) if len(word) > 2}


def _search(args: dict[str, Any]) -> dict[str, Any]:
    query = text_arg(args, "query")
    max_results = int_arg(args, "max_results", 3, 1, 10)
    wanted = _words(query)
    scored = []
    for faq_id, question, answer, category in FAQ_ENTRIES:
        have = _words(f"{question} {answer} {category}")
        overlap = len(wanted & have)
        if overlap:
            score = round(overlap / max(len(wanted), 1), 2)
            scored.append((score, faq_id, question, answer, category))
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    results = [
        {"id": i, "question": q, "answer": a, "category": c, "relevance_score": s}
        for s, i, q, a, c in scored[:max_results]
    ]
    return {
        "query": query,
        "total_matches": len(scored),
        "results_returned": len(results),
        "results": results,
    }


#: ``search_faq {query: str, max_results?: int 1..10 (3)}`` -> JSON ``{query,
#: total_matches, results_returned, results: [{id, question, answer, category,
#: relevance_score}]}`` or an ``"Error: ..."`` string.
search_faq = make_action(
    "search_faq",
    "Search the frequently asked questions for entries matching a customer's query.",
    {
        "query": {"type": "string", "description": "The customer's question or keywords."},
        "max_results": {
            "type": "integer",
            "minimum": 1,
            "maximum": 10,
            "description": "How many entries to return (default 3).",
        },
    },
    ["query"],
    _search,
)
