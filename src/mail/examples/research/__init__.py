"""The ``research`` example swarm (research): agents ``researcher``, ``searcher``, ``verifier``, ``summarizer``.

Each agent is a subpackage with ``prompts:SYSPROMPT`` and ``agent:LiteLLM<Name>Function``;
the ones with tools also have ``actions`` (``MAILAction`` objects). The scripted agents of
the offline variant ``research-offline`` are in :mod:`mail.examples.research.offline`.
"""

from __future__ import annotations

from mail.examples.research.researcher.agent import LiteLLMResearcherFunction
from mail.examples.research.searcher.actions import extract_facts, search_topic
from mail.examples.research.searcher.agent import LiteLLMSearcherFunction
from mail.examples.research.summarizer.actions import create_bibliography, summarize_text
from mail.examples.research.summarizer.agent import LiteLLMSummarizerFunction
from mail.examples.research.verifier.actions import rate_confidence, verify_claim
from mail.examples.research.verifier.agent import LiteLLMVerifierFunction

__all__ = [
    "LiteLLMResearcherFunction",
    "LiteLLMSearcherFunction",
    "LiteLLMSummarizerFunction",
    "LiteLLMVerifierFunction",
    "create_bibliography",
    "extract_facts",
    "rate_confidence",
    "search_topic",
    "summarize_text",
    "verify_claim",
]
