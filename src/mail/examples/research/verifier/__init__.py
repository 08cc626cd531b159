"""The ``verifier`` agent of the ``research`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMVerifierFunction``, ``actions:verify_claim``, ``actions:rate_confidence``."""

from __future__ import annotations

__all__: list[str] = []
