"""Scripted agents of ``support-offline`` (no LLM): the coordinator is
:class:`~mail.examples.offline.team.OfflineCoordinatorFunction`; these answer its requests
with the support swarm's real actions."""

from __future__ import annotations

from typing import Any

from mail.examples._actionkit import digest_int
from mail.examples.offline.team import OfflineCoordinatorFunction, OfflineTeamWorker

__all__ = [
    "OfflineClassifierFunction",
    "OfflineCoordinatorFunction",
    "OfflineFaqFunction",
    "OfflineSentimentFunction",
]

_URGENT_SCORE = -0.8


class OfflineFaqFunction(OfflineTeamWorker):
    """Searches the FAQ (``search_faq``) for the customer's message."""

    steps = ("search_faq",)

    def arguments(
        self, step: str, question: str, findings: str, results: dict[str, Any]
    ) -> dict[str, Any] | None:
        return {"query": question, "max_results": 2}

    def describe(self, question: str, results: dict[str, Any]) -> str:
        found = results.get("search_faq")
        if not isinstance(found, dict):
            return f"The FAQ search failed: {found}"
        if not found["results"]:
            return "No FAQ entry matches this question."
        return " ".join(f"{r['question']} {r['answer']}" for r in found["results"])


class OfflineClassifierFunction(OfflineTeamWorker):
    """Classifies the ticket (``classify_ticket``)."""

    steps = ("classify_ticket",)

    def arguments(
        self, step: str, question: str, findings: str, results: dict[str, Any]
    ) -> dict[str, Any] | None:
        return {"text": question}

    def describe(self, question: str, results: dict[str, Any]) -> str:
        found = results.get("classify_ticket")
        if not isinstance(found, dict):
            return f"Classification failed: {found}"
        return (
            f"Category {found['category']}, priority {found['priority']}. "
            f"Next: {'; '.join(found['suggested_actions'])}."
        )


class OfflineSentimentFunction(OfflineTeamWorker):
    """Analyzes the sentiment (``analyze_sentiment``) and escalates when it recommends
    so (``create_escalation``)."""

    steps = ("analyze_sentiment", "create_escalation")

    def arguments(
        self, step: str, question: str, findings: str, results: dict[str, Any]
    ) -> dict[str, Any] | None:
        if step == "analyze_sentiment":
            return {"text": question}
        analysis = results.get("analyze_sentiment")
        if not isinstance(analysis, dict) or not analysis["escalation_recommended"]:
            return None
        urgent = analysis["score"] <= _URGENT_SCORE
        return {
            "ticket_id": f"TICKET-{digest_int(question) % 10**6:06d}",
            "reason": str(analysis["escalation_reason"]),
            "priority": "urgent" if urgent else "high",
        }

    def describe(self, question: str, results: dict[str, Any]) -> str:
        analysis = results.get("analyze_sentiment")
        if not isinstance(analysis, dict):
            return f"Sentiment analysis failed: {analysis}"
        text = f"The customer sounds {analysis['sentiment']} (score {analysis['score']})."
        escalation = results.get("create_escalation")
        if isinstance(escalation, dict):
            filed = escalation["escalation"]
            text += (
                f" Escalated as {filed['escalation_id']} ({filed['priority']}, "
                f"SLA {filed['sla_target']})."
            )
        return text
