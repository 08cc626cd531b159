"""The ``searcher`` agent of the ``research`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMSearcherFunction``, ``actions:search_topic``, ``actions:extract_facts``."""

from __future__ import annotations

__all__: list[str] = []
