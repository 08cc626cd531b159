"""The ``searcher`` agent of the ``research`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMSearcherFunction``, ``actions:search_topic``, ``actions:extract_facts``."""

from __future__ import annotations

from mail.examples.research.searcher.actions import extract_facts, search_topic
from mail.examples.research.searcher.agent import LiteLLMSearcherFunction
from mail.examples.research.searcher.prompts import SYSPROMPT

__all__ = ["LiteLLMSearcherFunction", "SYSPROMPT", "extract_facts", "search_topic"]
