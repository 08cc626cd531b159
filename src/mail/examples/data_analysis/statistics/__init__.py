"""The ``statistics`` agent of the ``data-analysis`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMStatisticsFunction``, ``actions:calculate_statistics``, ``actions:run_correlation``."""

from __future__ import annotations

__all__: list[str] = []
