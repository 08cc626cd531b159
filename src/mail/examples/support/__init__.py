"""The ``support`` example swarm (customer support): agents ``coordinator``, ``faq``, ``classifier``, ``sentiment``.

Each agent is a subpackage with ``prompts:SYSPROMPT`` and ``agent:LiteLLM<Name>Function``;
the ones with tools also have ``actions`` (``MAILAction`` objects). The scripted agents of
the offline variant ``support-offline`` are in :mod:`mail.examples.support.offline`.
"""

from __future__ import annotations

from mail.examples.support.classifier.actions import classify_ticket
from mail.examples.support.classifier.agent import LiteLLMClassifierFunction
from mail.examples.support.coordinator.agent import LiteLLMCoordinatorFunction
from mail.examples.support.faq.actions import search_faq
from mail.examples.support.faq.agent import LiteLLMFaqFunction
from mail.examples.support.sentiment.actions import analyze_sentiment, create_escalation
from mail.examples.support.sentiment.agent import LiteLLMSentimentFunction

__all__ = [
    "LiteLLMClassifierFunction",
    "LiteLLMCoordinatorFunction",
    "LiteLLMFaqFunction",
    "LiteLLMSentimentFunction",
    "analyze_sentiment",
    "classify_ticket",
    "create_escalation",
    "search_faq",
]
