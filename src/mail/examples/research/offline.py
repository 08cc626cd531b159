"""Scripted agents of ``research-offline`` (no LLM): the researcher is
:class:`~mail.examples.offline.team.OfflineCoordinatorFunction`; these answer its requests
with the research swarm's real actions (whose search results are example data)."""

from __future__ import annotations

import re
from typing import Any

from mail.examples.offline.team import OfflineCoordinatorFunction, OfflineTeamWorker

__all__ = [
    "OfflineResearcherFunction",
    "OfflineSearcherFunction",
    "OfflineSummarizerFunction",
    "OfflineVerifierFunction",
]

#: The research-offline entry agent.
OfflineResearcherFunction = OfflineCoordinatorFunction

_URL = re.compile(r"https?://\S+[^\s.,;)]")
_LEAD = re.compile(r"^(what is|what are|who is|tell me about|research|explain)\s+", re.IGNORECASE)


def topic_of(question: str) -> str:
    """The topic of a question: without a leading "what is" and trailing punctuation."""
    return _LEAD.sub("", question.strip()).rstrip("?.! ") or question.strip()


def _facts(findings: str) -> list[str]:
    """The searcher's facts: the sentences of its line of the findings."""
    line = next((ln for ln in findings.splitlines() if ln.startswith("searcher:")), "")
    facts = line.partition("Facts: ")[2].partition(" Sources:")[0]
    return [f.strip() for f in facts.split(" | ") if f.strip()]


class OfflineSearcherFunction(OfflineTeamWorker):
    """Searches every source (``search_topic``, general) and extracts the facts
    (``extract_facts``)."""

    steps = ("search_topic", "extract_facts")

    def arguments(
        self, step: str, question: str, findings: str, results: dict[str, Any]
    ) -> dict[str, Any] | None:
        if step == "search_topic":
            return {"query": topic_of(question), "source": "general"}
        found = results.get("search_topic")
        if not isinstance(found, dict):
            return None
        return {"text": " ".join(found["combined_facts"])}

    def describe(self, question: str, results: dict[str, Any]) -> str:
        found, facts = results.get("search_topic"), results.get("extract_facts")
        if not isinstance(found, dict) or not isinstance(facts, dict):
            return f"The search failed: {facts or found}"
        listed = " | ".join(f["fact"] for f in facts["facts"])
        urls = ", ".join(source["url"] for source in found["sources"])
        return f"Facts: {listed} Sources: {urls}"


class OfflineVerifierFunction(OfflineTeamWorker):
    """Checks the topic against the searcher's facts (``verify_claim``) and rates the
    confidence (``rate_confidence``)."""

    steps = ("verify_claim", "rate_confidence")

    def arguments(
        self, step: str, question: str, findings: str, results: dict[str, Any]
    ) -> dict[str, Any] | None:
        claim = f"{topic_of(question)} is well documented"
        facts = _facts(findings)
        if step == "verify_claim":
            return {"claim": claim, "sources": facts}
        return {"claim": claim, "evidence": facts or [question]}

    def describe(self, question: str, results: dict[str, Any]) -> str:
        verdict, rating = results.get("verify_claim"), results.get("rate_confidence")
        if not isinstance(verdict, dict) or not isinstance(rating, dict):
            return f"Verification failed: {rating or verdict}"
        return (
            f"The claim '{verdict['claim']}' is {verdict['status']} "
            f"({verdict['explanation']}) Confidence {rating['confidence_level']} "
            f"({rating['confidence_score']})."
        )


class OfflineSummarizerFunction(OfflineTeamWorker):
    """Summarizes the facts (``summarize_text``) and lists the sources
    (``create_bibliography``, skipped when there are none)."""

    steps = ("summarize_text", "create_bibliography")

    def arguments(
        self, step: str, question: str, findings: str, results: dict[str, Any]
    ) -> dict[str, Any] | None:
        if step == "summarize_text":
            text = " ".join(_facts(findings)) or question
            return {"text": text, "max_length": 40}
        urls = _URL.findall(findings)
        if not urls:
            return None
        sources = [
            {"title": f"{topic_of(question)} ({url.split('/')[3]})", "url": url} for url in urls
        ]
        return {"sources": sources, "style": "apa"}

    def describe(self, question: str, results: dict[str, Any]) -> str:
        summary = results.get("summarize_text")
        if not isinstance(summary, dict):
            return f"Summarizing failed: {summary}"
        text = f"Summary: {summary['summary']}"
        bibliography = results.get("create_bibliography")
        if isinstance(bibliography, dict):
            text += f" Bibliography: {' ; '.join(bibliography['entries'])}"
        return text
