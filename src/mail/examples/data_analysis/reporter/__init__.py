"""The ``reporter`` agent of the ``data-analysis`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMReporterFunction``, ``actions:format_report``."""

from __future__ import annotations

__all__: list[str] = []
