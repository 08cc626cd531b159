"""The ``processor`` agent of the ``data-analysis`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMProcessorFunction``, ``actions:generate_sample_data``, ``actions:parse_csv``."""

from __future__ import annotations

__all__: list[str] = []
