"""The ``coordinator`` agent of the ``support`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMCoordinatorFunction``."""

from __future__ import annotations

__all__: list[str] = []
