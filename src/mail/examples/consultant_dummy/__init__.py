"""The consultant example: ``prompts:SYSPROMPT`` and ``agent:LiteLLMConsultantFunction``."""

from __future__ import annotations

__all__: list[str] = []
