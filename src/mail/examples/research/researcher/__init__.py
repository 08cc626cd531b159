"""The ``researcher`` agent of the ``research`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMResearcherFunction``."""

from __future__ import annotations

from mail.examples.research.researcher.agent import LiteLLMResearcherFunction
from mail.examples.research.researcher.prompts import SYSPROMPT

__all__ = ["LiteLLMResearcherFunction", "SYSPROMPT"]
