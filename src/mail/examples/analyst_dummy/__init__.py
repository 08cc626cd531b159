"""The analyst example: ``prompts:SYSPROMPT`` and ``agent:LiteLLMAnalystFunction``."""

from __future__ import annotations

__all__: list[str] = []
