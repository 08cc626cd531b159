"""The ``classifier`` agent of the ``support`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMClassifierFunction``, ``actions:classify_ticket``."""

from __future__ import annotations

__all__: list[str] = []
