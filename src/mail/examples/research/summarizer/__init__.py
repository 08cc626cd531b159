"""The ``summarizer`` agent of the ``research`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMSummarizerFunction``, ``actions:summarize_text``, ``actions:create_bibliography``."""

from __future__ import annotations

__all__: list[str] = []
