"""The ``sentiment`` agent of the ``support`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMSentimentFunction``, ``actions:analyze_sentiment``, ``actions:create_escalation``."""

from __future__ import annotations

__all__: list[str] = []
