"""The support swarm's FAQ search (``search_faq``), over ten canned entries.

The original searched a fixed in-code FAQ too; this one ranks by word overlap, so the
same query always gets the same results and no service is called.
"""

from __future__ import annotations

import re
from typing import Any

from mail.examples._actionkit import int_arg, make_action, text_arg

__all__ = ["FAQ_DATABASE", "SEARCH_FAQ_PARAMETERS", "search_faq"]

#: Every FAQ entry: ``{id, question, answer, category}`` (category is one of the
#: classifier's: billing, technical, account, general).
FAQ_DATABASE: tuple[dict[str, str], ...] = (
    {
        "id": "faq-001",
        "question": "How do I reset my password?",
        "answer": "Open Settings > Security, choose 'Reset password' and follow the emailed link.",
        "category": "account",
    },
    {
        "id": "faq-002",
        "question": "How do I update my billing information?",
        "answer": "Go to Billing > Payment methods and add or edit a card.",
        "category": "billing",
    },
    {
        "id": "faq-003",
        "question": "Why was I charged twice?",
        "answer": "A second charge is usually a pending authorization that drops off within 3-5 days; if not, contact billing with both transaction ids.",
        "category": "billing",
    },
    {
        "id": "faq-004",
        "question": "How do I request a refund?",
        "answer": "Refunds for the last 30 days can be requested under Billing > History > Refund.",
        "category": "billing",
    },
    {
        "id": "faq-005",
        "question": "The app crashes on startup, what should I do?",
        "answer": "Update to the latest version, clear the cache, and restart the device.",
        "category": "technical",
    },
    {
        "id": "faq-006",
        "question": "How do I export my data?",
        "answer": "Settings > Privacy > Export data sends a download link by email.",
        "category": "technical",
    },
    {
        "id": "faq-007",
        "question": "Why can't I log in?",
        "answer": "Check caps lock, reset your password, and make sure your account is verified.",
        "category": "account",
    },
    {
        "id": "faq-008",
        "question": "How do I delete my account?",
        "answer": "Settings > Account > Delete account; deletion is final after 14 days.",
        "category": "account",
    },
    {
        "id": "faq-009",
        "question": "What are your support hours?",
        "answer": "Chat support is open 24/7; phone support 9am-6pm on weekdays.",
        "category": "general",
    },
    {
        "id": "faq-010",
        "question": "How do I contact a human agent?",
        "answer": "Ask for 'agent' in chat or call the number on the Contact page.",
        "category": "general",
    },
)


def _words(text: str) -> set[str]:
    return {word for word in re.findall(r"[a-z0-9]+", text.lower()) if len(word) > 2}


def _search(args: dict[str, Any]) -> dict[str, Any]:
    query = text_arg(args, "query")
    max_results = int_arg(args, "max_results", 3, 1, 10)
    wanted = _words(query)
    scored = []
    for entry in FAQ_DATABASE:
        have = _words(f"{entry['question']} {entry['answer']} {entry['category']}")
        overlap = len(wanted & have)
        if overlap:
            scored.append((round(overlap / max(len(wanted), 1), 2), entry))
    scored.sort(key=lambda hit: (-hit[0], hit[1]["id"]))
    results = [{**entry, "relevance_score": score} for score, entry in scored[:max_results]]
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

#: The JSON Schema of ``search_faq``'s arguments.
SEARCH_FAQ_PARAMETERS: dict[str, Any] = search_faq.parameters
