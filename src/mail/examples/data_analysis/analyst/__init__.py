"""The ``analyst`` agent of the ``data-analysis`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMAnalystFunction``."""

from __future__ import annotations

__all__: list[str] = []
