"""The ``verifier`` agent of the ``research`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMVerifierFunction``, ``actions:verify_claim``, ``actions:rate_confidence``."""

from __future__ import annotations

from mail.examples.research.verifier.actions import rate_confidence, verify_claim
from mail.examples.research.verifier.agent import LiteLLMVerifierFunction
from mail.examples.research.verifier.prompts import SYSPROMPT

__all__ = ["LiteLLMVerifierFunction", "SYSPROMPT", "rate_confidence", "verify_claim"]
