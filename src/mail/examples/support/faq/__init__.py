"""The ``faq`` agent of the ``support`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMFaqFunction``, ``actions:search_faq``."""

from __future__ import annotations

__all__: list[str] = []
