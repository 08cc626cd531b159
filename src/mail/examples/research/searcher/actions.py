"""The research swarm's search (``search_topic``) and fact extraction (``extract_facts``).

The original queried the web; these return synthetic results derived from the query
(stable for the same query, clearly labelled as example data) and need no network.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from mail.examples._actionkit import choice_arg, digest_int, make_action, text_arg

__all__ = [
    "EXTRACT_FACTS_PARAMETERS",
    "KNOWLEDGE_BASE",
    "SEARCH_TOPIC_PARAMETERS",
    "SOURCES",
    "extract_facts",
    "search_topic",
]

#: The sources ``search_topic`` accepts (``general`` aggregates the other three).
SOURCES: tuple[str, ...] = ("wikipedia", "academic", "news", "general")
#: source -> the fact templates ``search_topic`` fills in for it (``{q}`` the query,
#: ``{n}`` and ``{year}`` numbers derived from it): the canned "knowledge" it searches.
KNOWLEDGE_BASE: dict[str, tuple[str, ...]] = {
    "wikipedia": (
        "{q} is a widely documented subject with a long history.",
        "Encyclopedia articles describe {q} in terms of its origins and main uses.",
    ),
    "academic": (
        "Peer-reviewed studies of {q} report measurable effects in {n} trials.",
        "A {year} survey paper reviews {n} publications on {q}.",
    ),
    "news": (
        "Recent coverage of {q} highlights new developments this year.",
        "Analysts quoted in the news expect interest in {q} to grow.",
    ),
}


def _results(query: str, source: str) -> dict[str, Any]:
    n = digest_int(query.casefold(), source)
    values = {"q": query.strip(), "n": 3 + n % 40, "year": 2015 + n % 10}
    facts = [template.format(**values) for template in KNOWLEDGE_BASE[source]]
    slug = re.sub(r"[^a-z0-9]+", "-", query.casefold()).strip("-") or "topic"
    title = f"{query.strip()} ({source}, example data)"
    return {
        "query": query,
        "source": source,
        "result_count": len(facts),
        "results": [
            {"title": title, "url": f"https://example.org/{source}/{slug}", "snippet": fact}
            for fact in facts
        ],
    }


def _search(args: dict[str, Any]) -> dict[str, Any]:
    query = text_arg(args, "query")
    source = choice_arg(args, "source", SOURCES, "general")
    if source != "general":
        return {**_results(query, source), "retrieved_at": datetime.now(UTC).isoformat()}
    parts = [_results(query, name) for name in SOURCES[:-1]]
    return {
        "query": query,
        "source": "general",
        "result_count": sum(part["result_count"] for part in parts),
        "combined_facts": [r["snippet"] for part in parts for r in part["results"]],
        "sources": [
            {"title": r["title"], "url": r["url"]} for part in parts for r in part["results"][:1]
        ],
        "retrieved_at": datetime.now(UTC).isoformat(),
    }


def _extract(args: dict[str, Any]) -> dict[str, Any]:
    text = text_arg(args, "text")
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    facts = [
        {"fact": s, "type": "quantitative" if re.search(r"\d", s) else "qualitative"}
        for s in sentences
        if len(s.split()) >= 4
    ]
    return {
        "fact_count": len(facts),
        "facts": facts,
        "numbers_found": re.findall(r"\d+(?:\.\d+)?", text),
    }


#: ``search_topic {query: str, source?: wikipedia|academic|news|general (general)}`` ->
#: JSON ``{query, source, result_count, results: [{title, url, snippet}], retrieved_at}``;
#: ``general`` gives ``{query, source, result_count, combined_facts, sources,
#: retrieved_at}``; or ``"Error: ..."``.
search_topic = make_action(
    "search_topic",
    "Search for information about a topic in one source (wikipedia, academic, news) or "
    "all of them (general).",
    {
        "query": {"type": "string", "description": "What to search for."},
        "source": {"type": "string", "enum": list(SOURCES)},
    },
    ["query"],
    _search,
)

#: ``extract_facts {text: str}`` -> JSON ``{fact_count, facts: [{fact, type}],
#: numbers_found}`` or ``"Error: ..."``.
extract_facts = make_action(
    "extract_facts",
    "Extract the factual statements from a text.",
    {"text": {"type": "string"}},
    ["text"],
    _extract,
)

#: The JSON Schema of ``search_topic``'s arguments.
SEARCH_TOPIC_PARAMETERS: dict[str, Any] = search_topic.parameters
#: The JSON Schema of ``extract_facts``'s arguments.
EXTRACT_FACTS_PARAMETERS: dict[str, Any] = extract_facts.parameters
