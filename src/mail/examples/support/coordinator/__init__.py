"""The ``coordinator`` agent of the ``support`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMCoordinatorFunction``."""

from __future__ import annotations

from mail.examples.support.coordinator.agent import LiteLLMCoordinatorFunction
from mail.examples.support.coordinator.prompts import SYSPROMPT

__all__ = ["LiteLLMCoordinatorFunction", "SYSPROMPT"]
