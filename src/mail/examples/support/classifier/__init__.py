"""The ``classifier`` agent of the ``support`` swarm: ``prompts:SYSPROMPT``, ``agent:LiteLLMClassifierFunction``, ``actions:classify_ticket``."""

from __future__ import annotations

from mail.examples.support.classifier.actions import classify_ticket
from mail.examples.support.classifier.agent import LiteLLMClassifierFunction
from mail.examples.support.classifier.prompts import SYSPROMPT

__all__ = ["LiteLLMClassifierFunction", "SYSPROMPT", "classify_ticket"]
