"""The ``researcher`` agent of the ``research`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMResearcherFunction``."""

from __future__ import annotations

__all__: list[str] = []
